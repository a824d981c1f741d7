import assert from 'node:assert/strict'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { FastifyInstance } from 'fastify'
import { allBackends } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * An idle stream keeps nothing of the answers it sent. Streams of the tree feed whose first
 * answer is a download of 1,000 folders (a different `limit` each, so no two share a body)
 * are opened on raw sockets that drop what they receive; after a full collection, the heap
 * grows by less than half of one such answer per stream. A stream that kept its first answer
 * (the body, its JSON and its event frame) would grow it by several times the answer's size.
 * Counted after collections, not timed.
 */

const OWNER = uuid('7fd00000', 1)
const SESSION = uuid('7fd00000', 2)
const ROOT = uuid('7fd00000', 3)
const CHILDREN = 1000
const STREAMS = 20
/** every name this long, so that an answer of 1,000 folders is well over 100 KB */
const NAME = 'n'.repeat(100)

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Collects until the heap stops shrinking; its used size then. */
async function settledHeap(): Promise<number> {
  let used = Number.POSITIVE_INFINITY
  for (let round = 0; round < 5; round++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    const now = process.memoryUsage().heapUsed
    if (now >= used) return now
    used = now
  }
  return used
}

/**
 * A stream on a raw socket that counts what arrives and keeps none of it; resolved once its
 * first event, at least `atLeast` bytes, has arrived whole (a chunk ends an event's blank line).
 */
function openStream(port: number, path: string, atLeast: number, sockets: Socket[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\ncookie: session_id=${SESSION}\r\n\r\n`,
      )
    })
    sockets.push(socket)
    let received = 0
    let tail = ''
    socket.on('data', (data: Buffer) => {
      received += data.length
      tail = (tail + data.toString('latin1')).slice(-8)
      if (received >= atLeast && tail.endsWith('\n\n\r\n')) resolve(received)
    })
    socket.on('error', reject)
  })
}

for (const backend of allBackends()) {
  describe(`${backend.name}: an idle stream's memory`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let app: FastifyInstance
    let port = 0
    const sockets: Socket[] = []

    before(async () => {
      opened = await backend.open()
      await seedOwner(opened.store, {
        owner: OWNER,
        username: 'idle',
        sessions: [SESSION],
        folders: [
          { id: ROOT, name: 'root' },
          ...Array.from({ length: CHILDREN }, (_, i) => ({
            id: uuid('7fd10000', i + 1),
            name: `${NAME} ${i}`,
            folder_id: ROOT,
          })),
        ],
      })
      app = await appOver(opened.store, {
        longPollMaxWaiters: STREAMS * 2,
        longPollMaxPerSession: STREAMS * 2,
        eventStream: { heartbeatMs: 60_000 },
      })
      await app.listen({ port: 0, host: '127.0.0.1' })
      const address = app.server.address()
      port = typeof address === 'object' && address !== null ? address.port : 0
    })
    after(async () => {
      for (const socket of sockets) socket.destroy()
      await app?.close()
      await opened?.cleanup()
    })

    it('keeps less than half its first answer, after sending a download of 1,000 folders', async () => {
      const path = (limit: number) => `/v1/folders/tree?root=${ROOT}&limit=${limit}`
      // One stream first, so that what every stream shares (compiled code, the statements) is made.
      const answer = await openStream(port, path(1000), 100_000, sockets)
      const before = await settledHeap()
      for (let i = 1; i <= STREAMS; i++) await openStream(port, path(1000 - i), 100_000, sockets)
      const perStream = ((await settledHeap()) - before) / STREAMS
      console.log(
        `an answer of ${(answer / 1024).toFixed(0)} KB; ${(perStream / 1024).toFixed(1)} KB of heap a stream`,
      )
      assert.ok(answer > 100_000, `the first answer is ${answer} bytes`)
      assert.ok(
        perStream < answer / 2,
        `${perStream.toFixed(0)} bytes of heap a stream, the answer ${answer}`,
      )
    })

    it('keeps a stand-in, not its own copy, of the header block it sent', async () => {
      // Node keeps `_header` for a response's life; once sent, only its presence is tested.
      type Kept = ServerResponse & { _header?: unknown }
      const responses: Kept[] = []
      const keep = (_request: IncomingMessage, response: ServerResponse) => void responses.push(response)
      app.server.on('request', keep)
      try {
        const received: string[] = []
        for (let i = 0; i < 2; i++) {
          const socket = connect(port, '127.0.0.1')
          sockets.push(socket)
          socket.on('data', (data: Buffer) => received.push(data.toString('latin1')))
          socket.write(
            `GET /v1/folders/tree?root=${ROOT}&limit=10 HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\ncookie: session_id=${SESSION}\r\n\r\n`,
          )
        }
        for (let waited = 0; waited < 100 && received.join('').split('event: changes').length < 3; waited++)
          await new Promise((resolve) => setTimeout(resolve, 50))
        const sent = received.join('').split('\r\n\r\n')[0] ?? ''
        assert.ok(sent.length > 300, `the header block sent: ${sent.length} characters`)
        assert.equal(responses.length, 2)
        for (const response of responses) {
          assert.equal(response.headersSent, true)
          assert.equal(typeof response._header, 'string')
          assert.ok(
            String(response._header).length < 64,
            `kept: ${String(response._header).length} characters`,
          )
          assert.throws(() => response.setHeader('x-late', '1'), { code: 'ERR_HTTP_HEADERS_SENT' })
        }
      } finally {
        app.server.off('request', keep)
      }
    })
  })
}
