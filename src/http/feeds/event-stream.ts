import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { recordHijackedRequest } from '../plugins/request-completion.js'
import { beatEvery } from './heartbeats.js'
import { EVENT_STREAM_TYPE, FEED_CACHE_CONTROL } from '../../api/feed-headers.js'

/**
 * Server-Sent Events (HTML Living Standard, "Server-sent events") written on Fastify's raw
 * reply: the wire format, the `retry:` line, heartbeat comments, backpressure and the end of
 * the stream. It knows nothing of feeds: `next` says what to send next (feed-stream.ts turns
 * a feed's answers into events). No framework: a stream is a hijacked reply that writes
 * frames until `next` says stop, the client leaves or its time runs out.
 */

export interface EventStreamOptions {
  /** between two comment lines, so that proxies do not close an idle stream (well below 25 s) */
  heartbeatMs: number
  /** the `retry:` a client waits before reconnecting after the stream ends */
  retryMs: number
  /** the stream ends after this; the client reconnects with Last-Event-ID */
  maxMs: number
}

export const DEFAULT_EVENT_STREAM_OPTIONS: Readonly<EventStreamOptions> = Object.freeze({
  heartbeatMs: 15_000,
  retryMs: 2_000,
  maxMs: 10 * 60_000,
})

/** What to do next: send a frame (and stop after it when `last`), or stop now. */
export type NextFrame = { frame: Uint8Array; last: boolean } | null

/** The stream as its source sees it: when it must end, and whether the client already left. */
export interface StreamControl {
  /** epoch ms at which the stream ends (its `maxMs` from the start) */
  readonly deadline: number
  readonly gone: boolean
}

/**
 * What a stream sends. Driven by callbacks rather than a loop awaiting each frame, so that an
 * idle stream is the state its source keeps, not a suspended chain of calls.
 */
export interface FrameSource {
  /** Gives `deliver` the next frame once, at once or later; null ends the stream. */
  next(control: StreamControl, deliver: (step: NextFrame) => void): void
  /** The stream ended, however it ended (called once): let go of what the source holds. */
  stop(): void
}

/**
 * One event's bytes: `event:`, optional `id:`, and `data` on one `data:` line per line of
 * it. `id` must hold no line break (cursors never do).
 */
export function eventFrame(event: string, data: string, id?: string): Buffer {
  const lines = data.split(/\r\n|\r|\n/)
  const head = id === undefined ? `event: ${event}\n` : `event: ${event}\nid: ${id}\n`
  return Buffer.from(`${head}data: ${lines.join('\ndata: ')}\n\n`)
}

/**
 * Whether the Accept header asks for an event stream: it names `text/event-stream` with a
 * q above 0 (what EventSource sends). `*\/*` alone does not: a plain client keeps its JSON.
 */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (accept === undefined) return false
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase())
    if (type !== EVENT_STREAM_TYPE) continue
    const q = params.find((param) => param.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  }
  return false
}

/**
 * Takes over `reply` and streams: 200 with the headers already set on the reply (security
 * headers, request id, CORS), `retry:`, then every frame `source` gives, with a comment line
 * every `heartbeatMs` in between, until the last frame, the client leaves or the source says
 * stop. The request is recorded (metrics, request line) when the stream ends, however it ends.
 */
export function streamEvents(
  request: FastifyRequest,
  reply: FastifyReply,
  source: FrameSource,
  options: EventStreamOptions,
): void {
  const res = reply.raw
  const control = { deadline: Date.now() + options.maxMs, gone: false }
  let stopHeartbeat: (() => void) | null = null
  let ended = false
  const finish = () => {
    if (ended) return
    ended = true
    stopHeartbeat?.()
    res.off('close', onClose)
    res.off('drain', pull)
    source.stop()
    if (!res.writableEnded && !control.gone) res.end()
    // Fastify records a request when its response finishes; a stream the client closed never does.
    else if (!res.writableFinished) recordHijackedRequest(request, reply)
  }
  const onClose = () => {
    control.gone = true
    finish()
  }
  const pull = () => source.next(control, deliver)
  const deliver = (step: NextFrame) => {
    if (ended) return
    if (step === null || control.gone) return finish()
    const flowing = res.write(step.frame)
    if (step.last) return finish()
    // Backpressure: a slow reader holds its own frames, not the process's memory.
    if (flowing) pull()
    else res.once('drain', pull)
  }
  res.once('close', onClose)
  reply.hijack()
  const headers: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(reply.getHeaders()))
    if (value !== undefined) headers[name] = value
  res.writeHead(200, {
    ...headers,
    'content-type': `${EVENT_STREAM_TYPE}; charset=utf-8`,
    'cache-control': FEED_CACHE_CONTROL,
    // nginx buffers proxied answers unless told not to; a buffered stream would arrive late
    'x-accel-buffering': 'no',
    // The connection ends with the stream: clients reconnect on a new one anyway, and a
    // connection left idle after it would hold up a shutdown until its keep-alive ran out.
    connection: 'close',
  })
  res.write(`retry: ${options.retryMs}\n\n`)
  stopHeartbeat = beatEvery(options.heartbeatMs, res)
  pull()
}
