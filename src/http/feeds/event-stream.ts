import type { EventEmitter } from 'node:events'
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
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

/**
 * What to do next: send a frame (and stop after it when `last`), or stop now. `more`: another
 * frame follows at once (a catch-up's next answer), so the socket is held corked and the
 * frames leave together in one write, until the socket's buffer is full (its high-water
 * mark: a long catch-up costs few writes without holding its download in memory).
 */
export type NextFrame = { frame: Uint8Array; last: boolean; more?: boolean } | null

/** The stream as its source sees it: when it must end, and whether the client already left. */
export interface StreamControl {
  /** epoch ms at which the stream ends (its `maxMs` from the start) */
  readonly deadline: number
  readonly gone: boolean
  /** Sends what a frame with `more` left corked: the source found nothing more to send now. */
  flush(): void
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

const CRLF = Buffer.from('\r\n')

/** `frame` as one HTTP/1.1 chunk: its size line, its bytes, CRLF (what Node's chunked write sends). */
export function httpChunk(frame: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${frame.length.toString(16)}\r\n`), frame, CRLF])
}

/** Each frame as one HTTP/1.1 chunk, made once for every stream that sends that frame. */
const chunks = new WeakMap<Uint8Array, Buffer>()

/**
 * Writes `frame` on `res`; returns null when more may follow at once, else what to wait for
 * ('drain'). On a chunked response the frame goes to the socket as one prepared chunk
 * (size line, bytes, CRLF: the bytes Node's own chunked write makes), so the many streams
 * one commit wakes share one buffer and each costs one socket write, not the response's
 * framing and a cork per stream. The headers and the `retry:` line went through `res`
 * before, so the order on the socket is kept.
 */
function writeFrame(res: ServerResponse, frame: Uint8Array): EventEmitter | null {
  const socket = res.socket
  if (!res.chunkedEncoding || !res.headersSent || socket === null) return res.write(frame) ? null : res
  let chunk = chunks.get(frame)
  if (chunk === undefined) {
    chunk = httpChunk(frame)
    chunks.set(frame, chunk)
  }
  return socket.write(chunk) ? null : socket
}

/** What a stream keeps in place of its header block once sent: one string for all of them. */
const SENT_HEADER_BLOCK = 'HTTP/1.1 200 OK\r\n\r\n'

/**
 * Node keeps a response's header block (its internal `_header`) for the response's whole
 * life: about 0.7 KB of text, and, as Node builds it field by field, a tree of some fifty
 * string pieces (2.5 KB of heap in a snapshot of 3,000 idle streams). Once the block has gone
 * out with the first write (`_headerSent`), Node only tests that it is there (`headersSent`,
 * and the refusals of a second writeHead or setHeader); it never sends it again. So a stream
 * that has sent it keeps one shared stand-in instead (test/http/idle-stream-memory.test.ts).
 */
function forgetSentHeaderBlock(res: ServerResponse): void {
  const kept = res as ServerResponse & { _header?: unknown; _headerSent?: unknown }
  if (kept._headerSent === true && typeof kept._header === 'string') kept._header = SENT_HEADER_BLOCK
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
  const socket = res.socket
  /** the socket is corked by this stream (its start, or frames with `more`) */
  let corked = false
  const flush = () => {
    if (!corked) return
    corked = false
    socket?.uncork()
  }
  const control = { deadline: Date.now() + options.maxMs, gone: false, flush }
  let stopHeartbeat: (() => void) | null = null
  let ended = false
  const finish = () => {
    if (ended) return
    ended = true
    flush()
    stopHeartbeat?.()
    res.off('close', onClose)
    draining?.off('drain', drained)
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
  /** where a write said to wait (the socket or the response), until it drains */
  let draining: EventEmitter | null = null
  const deliver = (step: NextFrame) => {
    if (ended) return
    if (step === null || control.gone) return finish()
    if (step.more === true && !corked && socket !== null) {
      socket.cork()
      corked = true
    }
    const full = writeFrame(res, step.frame)
    if (step.last) return finish()
    // A full socket sends what is corked, or its 'drain' would never come.
    if (step.more !== true || full !== null) flush()
    // Backpressure: a slow reader holds its own frames, not the process's memory.
    if (full === null) return pull()
    draining = full
    full.once('drain', drained)
  }
  const drained = () => {
    draining = null
    pull()
  }
  // `on`, not `once`: finish takes it off, and once's wrapper would cost every stream more.
  res.on('close', onClose)
  reply.hijack()
  // A client that left before the stream started (during the feed's first read, which is
  // asynchronous on PostgreSQL) closed the response before this listener was there: its
  // 'close' will not come again. The stream ends now and its source lets go of its place.
  if (res.destroyed || socket === null || socket.destroyed) return onClose()
  // The headers, the retry line and the first frame (and the catch-up after it) in one write.
  if (socket !== null) {
    socket.cork()
    corked = true
  }
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
  forgetSentHeaderBlock(res)
  stopHeartbeat = beatEvery(options.heartbeatMs, res)
  pull()
}
