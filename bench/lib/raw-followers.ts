import { get } from 'node:http'
import { connect, type Socket } from 'node:net'
import { HOST } from './processes.js'
import { sharedNow, WAKE_NAME_MARK } from './rename-writer.js'

/**
 * The fan-out bench's load generator: followers of the tree feed on raw sockets, one
 * connection and one session each, so that the generator costs a small share of what the
 * service does for the same followers (no HTTP parser, no promise or object per event: a
 * counter per socket and a search of each chunk).
 *
 * - `sse`: an event stream; each `changes` event counts;
 * - `long-poll`: a held request; each answer counts, and is followed at once on the same
 *   keep-alive connection by the next held request from the answer's cursor, as a client
 *   that follows the feed by long-polls does.
 *
 * In both, the highest `wake <seq>` folder name in what arrived (rename-writer.ts) is
 * reported with the count, so a delivery can be timed from the commit it carries.
 */

/** The text every `changes` event of a stream begins with. */
const SSE_MARK = Buffer.from('event: changes')
const NAME_MARK = Buffer.from(WAKE_NAME_MARK)
/** bytes of a chunk kept for the next one, so that a name split between two reads is still read */
const NAME_CARRY = NAME_MARK.length + 16
const QUOTE = 0x22
const ZERO = 0x30

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

/** The highest `wake <seq>` name in `data` (-1: none whole). */
function highestName(data: Buffer): number {
  let highest = -1
  for (let at = data.indexOf(NAME_MARK); at !== -1; at = data.indexOf(NAME_MARK, at + NAME_MARK.length)) {
    let seq = 0
    let i = at + NAME_MARK.length
    for (; i < data.length && data[i] !== QUOTE; i++) seq = seq * 10 + ((data[i] as number) - ZERO)
    if (i < data.length && seq > highest) highest = seq
  }
  return highest
}

/**
 * Opens one follower per `requests` entry (its path and session), paced so that the accept
 * queue never overflows. `onSeen(index, count, at, seq)` is called at every event or answer
 * with the count so far, the time on the bench's shared clock (rename-writer.ts sharedNow)
 * and the highest rename it carried (-1: none). A long-poll's next request is `path` with
 * the answer's cursor in place of its own.
 */
export async function openRawFollowers(settings: {
  port: number
  kind: FollowerKind
  requests: { path: string; sessionId: string }[]
  onSeen: (index: number, count: number, at: number, seq: number) => void
}): Promise<RawFollowerSet> {
  const { port, kind, requests, onSeen } = settings
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
  const ask = (socket: Socket, path: string, sessionId: string) =>
    socket.write(
      `GET ${path} HTTP/1.1\r\nhost: ${HOST}:${port}\r\ncookie: session_id=${sessionId}\r\n${accept}\r\n`,
    )
  for (let i = 0; i < requests.length; i++) {
    const { path, sessionId } = requests[i] as { path: string; sessionId: string }
    const socket = connect({ host: HOST, port })
    const follower: RawFollower = { seen: 0, failed: false, socket }
    const index = i
    const fail = (why: string) => {
      if (closing || follower.failed) return
      follower.failed = true
      set.failed++
      set.firstFailure ||= why
    }
    socket.setNoDelay(true)
    if (kind === 'sse') {
      // The tail of the last chunk, so that a mark split between two chunks is still found.
      let tail: Buffer | null = null
      socket.on('data', (chunk: Buffer) => {
        const at = sharedNow()
        const data = tail === null ? chunk : Buffer.concat([tail, chunk])
        // Marks that lie wholly in the carried tail were counted with the chunk before.
        const from = Math.max(0, (tail?.length ?? 0) - SSE_MARK.length + 1)
        let found = 0
        for (let m = data.indexOf(SSE_MARK, from); m !== -1; m = data.indexOf(SSE_MARK, m + SSE_MARK.length))
          found++
        const seq = highestName(data)
        tail = data.subarray(Math.max(0, data.length - NAME_CARRY))
        if (found === 0) return
        follower.seen += found
        onSeen(index, follower.seen, at, seq)
      })
    } else {
      // Whole answers by their Content-Length; each answered request is asked again from its cursor.
      let text = ''
      socket.on('data', (chunk: Buffer) => {
        const at = sharedNow()
        text += chunk.toString('latin1')
        for (;;) {
          const head = text.indexOf('\r\n\r\n')
          if (head === -1) return
          const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, head))?.[1])
          if (!Number.isFinite(length) || text.length < head + 4 + length) return
          const status = text.slice(9, 12)
          const body = text.slice(head + 4, head + 4 + length)
          text = text.slice(head + 4 + length)
          if (status !== '200') return fail(`follower ${index}: ${status} ${body.slice(0, 200)}`)
          follower.seen++
          onSeen(index, follower.seen, at, highestName(Buffer.from(body, 'latin1')))
          const cursor = /"cursor":"([^"]+)"/.exec(body)?.[1]
          if (cursor === undefined) return fail(`follower ${index}: an answer without a cursor`)
          ask(socket, path.replace(/cursor=[^&]*/, `cursor=${cursor}`), sessionId)
        }
      })
    }
    socket.on('error', (error) => fail(String(error)))
    socket.on('close', () => fail(`follower ${index} closed by the service`))
    ask(socket, path, sessionId)
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
