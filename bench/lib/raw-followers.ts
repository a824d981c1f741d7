import { get } from 'node:http'
import { connect, type Socket } from 'node:net'
import { HOST } from './processes.js'

/**
 * The fan-out bench's load generator: followers of the tree feed on raw sockets, one
 * connection each, so that the generator costs a small share of what the service does for
 * the same followers (no HTTP parser, no promise or object per event: a counter per socket
 * and one search of each chunk for the event's name).
 */

/** The text every `changes` event of a stream begins with; a held answer begins with its status line. */
const SSE_MARK = Buffer.from('event: changes')
const ANSWER_MARK = Buffer.from('HTTP/1.1 ')

export type FollowerKind = 'sse' | 'long-poll'

interface RawFollower {
  /** events (SSE) or answers (long-poll) received so far */
  seen: number
  /** its connection failed or was closed by the service */
  failed: boolean
  socket: Socket
}

export interface RawFollowerSet {
  followers: RawFollower[]
  /** sockets that failed or closed before they were told to */
  failed: number
  /** the first failure, for the bench's message */
  firstFailure: string
  close(): void
}

/**
 * Opens one follower per `requests` entry (its path and session), paced so that the accept
 * queue never overflows. `onSeen(index, count, at)` is called at every event or answer
 * with the count so far and `performance.now()`.
 */
/** GET /healthz on a connection of its own, answered (any status) or failed. */
function probe(port: number): Promise<void> {
  return new Promise((resolve) => {
    const req = get({ host: HOST, port, path: '/healthz', agent: false }, (res) => {
      res.resume()
      res.on('end', resolve)
    })
    req.on('error', () => resolve())
  })
}

export async function openRawFollowers(settings: {
  port: number
  kind: FollowerKind
  requests: { path: string; sessionId: string }[]
  onSeen: (index: number, count: number, at: number) => void
}): Promise<RawFollowerSet> {
  const { port, kind, requests, onSeen } = settings
  const mark = kind === 'sse' ? SSE_MARK : ANSWER_MARK
  const set: RawFollowerSet = {
    followers: [],
    failed: 0,
    firstFailure: '',
    close: () => {
      closing = true
      for (const follower of set.followers) follower.socket.destroy()
    },
  }
  let closing = false
  const accept = kind === 'sse' ? 'accept: text/event-stream\r\n' : ''
  for (let i = 0; i < requests.length; i++) {
    const { path, sessionId } = requests[i] as { path: string; sessionId: string }
    const socket = connect({ host: HOST, port })
    const follower: RawFollower = { seen: 0, failed: false, socket }
    const index = i
    // The tail of the last chunk, so that a mark split between two chunks is still found.
    let tail: Buffer | null = null
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => {
      const data = tail === null ? chunk : Buffer.concat([tail, chunk])
      let found = 0
      for (let at = data.indexOf(mark); at !== -1; at = data.indexOf(mark, at + mark.length)) found++
      tail = data.subarray(Math.max(0, data.length - mark.length + 1))
      if (found === 0) return
      follower.seen += found
      onSeen(index, follower.seen, performance.now())
    })
    const fail = (why: string) => {
      if (closing || follower.failed) return
      follower.failed = true
      set.failed++
      set.firstFailure ||= why
    }
    socket.on('error', (error) => fail(String(error)))
    socket.on('close', () => fail(`follower ${index} closed by the service`))
    socket.write(
      `GET ${path} HTTP/1.1\r\nhost: ${HOST}:${port}\r\ncookie: session_id=${sessionId}\r\n${accept}\r\n`,
    )
    set.followers.push(follower)
    if (i % 250 === 249) {
      // Paced: a batch of streams is set up (its first event) before the next connects, so
      // that the accept queue never overflows however loaded the machine is.
      // A held request shows nothing, so the service's answer to a probe on a new connection
      // says it has taken in the requests before it.
      for (let waited = 0; waited < 200; waited++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        if (kind === 'long-poll' || set.followers.every((one) => one.seen > 0 || one.failed)) break
      }
      await probe(port)
    }
  }
  return set
}
