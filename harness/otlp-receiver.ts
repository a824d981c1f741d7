import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { decodeTraces, type ReceivedSpan } from './otlp-decode.js'

/**
 * A small OTLP/HTTP receiver for traces, what a collector is to the service: POST /v1/traces
 * (or any path) with `application/x-protobuf` or `application/json`, answered 200 with an
 * empty export response. The tests decode every export and keep its spans and raw bodies;
 * the bench only counts them (decoding every span would take CPU from the measured service
 * on a small machine).
 */

export interface ReceiverOptions {
  /** decode and keep the spans (tests); false: count bytes and exports only (bench) */
  decode: boolean
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = []
  /** each export's body as sent, for a search for secrets in what left the service */
  readonly bodies: Buffer[] = []
  /** each export's content type and path */
  readonly exports: { contentType: string; path: string }[] = []
  bytes = 0
  private waiters = new Set<() => void>()

  private readonly server: Server

  private constructor(readonly options: ReceiverOptions) {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const body = Buffer.concat(chunks)
        const contentType = request.headers['content-type'] ?? ''
        const json = contentType.startsWith('application/json')
        try {
          this.received(body, contentType, request.url ?? '/')
        } catch (error) {
          response.writeHead(400, { 'content-type': 'text/plain' }).end(String(error))
          return
        }
        // An empty ExportTraceServiceResponse in the request's encoding: all spans accepted.
        response.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' })
        response.end(json ? '{}' : undefined)
      })
    })
  }

  static async start(options: ReceiverOptions = { decode: true }): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver(options)
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve))
    return receiver
  }

  /** The base URL (OTEL_EXPORTER_OTLP_ENDPOINT): traces are POSTed to its /v1/traces. */
  get url(): string {
    const { port } = this.server.address() as AddressInfo
    return `http://127.0.0.1:${port}`
  }

  private received(body: Buffer, contentType: string, path: string): void {
    this.bytes += body.length
    this.exports.push({ contentType, path })
    if (this.options.decode) {
      this.bodies.push(body)
      this.spans.push(...decodeTraces(body, contentType))
    }
    for (const wake of this.waiters) wake()
  }

  /** Resolves with the spans received once `done` says they suffice; rejects after `timeoutMs`. */
  async waitFor(
    done: (spans: readonly ReceivedSpan[]) => boolean,
    timeoutMs = 10_000,
    what = 'the spans awaited',
  ): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs
    while (!done(this.spans)) {
      const left = deadline - Date.now()
      if (left <= 0) {
        const names = this.spans.map((span) => span.name).join(', ')
        throw new Error(`${what} did not arrive in ${timeoutMs} ms; received: ${names || 'nothing'}`)
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          this.waiters.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, left)
        this.waiters.add(wake)
      })
    }
    return [...this.spans]
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections()
      this.server.close(() => resolve())
    })
  }
}

export type { ReceivedSpan }
