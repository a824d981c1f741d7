import { readFileSync } from 'node:fs'
import { createServer, type ServerResponse } from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { EVENT_LOOP_RESOLUTION_MS } from '../../src/http/metrics.js'
import { eventFrame, httpChunk } from '../../src/http/feeds/event-stream.js'
import { inTurnSlices } from '../../src/feed/turn-slices.js'
import type { RecordedAnswer } from './fanout.js'

/**
 * The fan-out bench's floor: a bare node:http server that holds every GET as a follower and,
 * when told, sends each one the answer the service sent for the same commit (the same bytes),
 * the way the service writes it and with nothing else: no session, no read, no cursor, no
 * log line. What a delivery costs here is what node:http and the kernel's loopback cost on
 * this machine; the service's figure beside it is the rest.
 *
 * - GET with `Accept: text/event-stream`: a stream; its first frame on arrival, then on each
 *   fire the answer as an SSE frame written to the socket as one prepared HTTP chunk (as
 *   event-stream.ts writes it);
 * - any other GET: held, and on a fire answered with the service's headers (its own request
 *   id) and body by `writeHead` and `end` (as prepared-answer.ts does); with `one-write`,
 *   as one socket write of the whole answer instead (what Node's response costs above the
 *   write itself: the response object is left unfinished, so this is a measurement only);
 * - `POST /fire` wakes them all, 64 a turn (the service's slice);
 * - `GET /floor-ready` and `/healthz`: 200; `GET /metrics`: its event loop delay in the service's metric
 *   names, reset by each scrape as the service's is.
 *
 * Usage: node --import tsx bench/lib/fanout-floor-server.ts PORT ANSWER_JSON [one-write] (the
 * service's answer to one commit, `{ headers, body }`)
 */

const [portText, file, mode] = process.argv.slice(2)
const port = Number(portText)
if (!Number.isInteger(port) || file === undefined) {
  process.stderr.write('usage: fanout-floor-server.ts PORT ANSWER_JSON [one-write]\n')
  process.exit(2)
}
const answer = JSON.parse(readFileSync(file, 'utf8')) as RecordedAnswer
const frame = eventFrame('changes', answer.body, (JSON.parse(answer.body) as { cursor?: string }).cursor)
/** the frame as one HTTP/1.1 chunk, as event-stream.ts writes it */
const chunk = httpChunk(frame)

const streams = new Set<ServerResponse>()
let held: ServerResponse[] = []
let requests = 0

const lag = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS })
lag.enable()

const withId = () =>
  answer.headers.map(([name, value]) => [name, name === 'x-request-id' ? `floor-${++requests}` : value])

function answerHeld(res: ServerResponse): void {
  res.writeHead(200, withId().flat())
  res.end(answer.body)
}

/** The bytes writeHead and end would send (Node's own Date and keep-alive headers too), in one write. */
function writeHeld(res: ServerResponse): void {
  const head = withId().map(([name, value]) => `${name}: ${value}\r\n`)
  const date = new Date().toUTCString()
  const timeout = Math.floor(server.keepAliveTimeout / 1000)
  res.socket?.write(
    `HTTP/1.1 200 OK\r\n${head.join('')}Date: ${date}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=${timeout}\r\n\r\n${answer.body}`,
  )
}

function fire(): void {
  inTurnSlices([...streams], (res) => void res.socket?.write(chunk))
  const waiting = held
  held = []
  inTurnSlices(waiting, mode === 'one-write' ? writeHeld : answerHeld)
}

const server = createServer((req, res) => {
  req.resume()
  if (req.method === 'POST' && req.url === '/fire') {
    fire()
    return void res.writeHead(204).end()
  }
  // The generator's probe between batches of followers (raw-followers.ts) asks /healthz.
  if (req.url === '/floor-ready' || req.url === '/healthz') return void res.writeHead(200).end()
  if (req.url === '/metrics') {
    const seconds = (ns: number) => (ns / 1e9).toString()
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end(
      `nodejs_eventloop_lag_p99_seconds ${seconds(lag.percentile(99))}\nnodejs_eventloop_lag_max_seconds ${seconds(lag.max)}\n`,
    )
    lag.reset()
    return
  }
  if (req.headers.accept?.includes('text/event-stream') === true) {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' })
    res.write('retry: 2000\n\n')
    res.socket?.write(chunk)
    streams.add(res)
    res.on('close', () => streams.delete(res))
    return
  }
  held.push(res)
})
// Followers stay as long as the bench keeps them; the service's timeouts do not apply here.
server.requestTimeout = 0
server.headersTimeout = 0
server.keepAliveTimeout = 120_000
server.maxConnections = 100_000
server.listen(port, '127.0.0.1', () => process.stdout.write(`listening on ${port}\n`))
process.on('SIGTERM', () => {
  server.closeAllConnections()
  server.close(() => process.exit(0))
})
