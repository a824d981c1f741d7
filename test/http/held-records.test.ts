import assert from 'node:assert/strict'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { allBackends } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * Held long-polls are parked records (docs/performance.md "Fan-out"): no timer and no
 * listener of their own. With 1 and with 1,000 requests held (raw sockets, so the client
 * side makes no timers either), the process has the same active timers (but the database
 * pool's), and a held request's response and socket carry the listeners they had on arrival
 * plus the same few for each (Node's and Fastify's own), counted, not timed.
 */

const OWNER = uuid('7fc00000', 1)
const SESSION = uuid('7fc00000', 2)
const ROOT = uuid('7fc00000', 3)
const MANY = 1000
/** at most this many more timers: the database driver's idle connections, not the requests */
const POOL_TIMERS = 20

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length
const listeners = (emitter: NodeJS.EventEmitter) =>
  emitter.eventNames().reduce((sum, name) => sum + emitter.listenerCount(name), 0)

for (const backend of allBackends()) {
  describe(`${backend.name}: held long-polls as records`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let app: FastifyInstance
    let port = 0
    let cursor = ''
    const clients: Socket[] = []
    /** each request's response and the listeners it and its socket had when it arrived */
    const arrived = new Map<ServerResponse, number>()

    before(async () => {
      opened = await backend.open()
      await seedOwner(opened.store, {
        owner: OWNER,
        username: 'held',
        sessions: [SESSION],
        folders: [{ id: ROOT, name: 'root' }],
      })
      app = await appOver(opened.store, {
        longPollMaxWaiters: MANY,
        longPollMaxPerSession: MANY,
        longPollIntervalMs: 100,
      })
      // Before the app's own listener: what a response and its socket carry on arrival.
      app.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
        arrived.set(res, listeners(res) + listeners(req.socket))
      })
      const base = await app.listen({ host: '127.0.0.1', port: 0 })
      port = Number(new URL(base).port)
      const download = await fetch(`${base}/v1/folders/tree?root=${ROOT}`, {
        headers: { cookie: `session_id=${SESSION}` },
      })
      cursor = ((await download.json()) as { cursor: string; has_more: boolean }).cursor
    })
    after(async () => {
      for (const client of clients) client.destroy()
      await app?.close()
      await opened?.cleanup()
    })

    /** Opens held requests until `count` are held, and waits until the process holds them all. */
    async function holdUntil(count: number) {
      const request =
        `GET /v1/folders/tree?root=${ROOT}&cursor=${cursor}&wait=30 HTTP/1.1\r\n` +
        `Host: 127.0.0.1\r\nCookie: session_id=${SESSION}\r\n\r\n`
      while (clients.length < count) {
        const client = connect(port, '127.0.0.1')
        client.on('error', () => undefined)
        client.write(request)
        clients.push(client)
      }
      const held = () => [...arrived.keys()].filter((res) => !res.writableEnded)
      for (let waited = 0; held().length < count && waited < 400; waited++) await sleep(25)
      assert.equal(held().length, count, 'every request is held')
      // Past the reads before each park.
      await sleep(300)
      return held()
    }

    /** The listeners a held request's response and socket gained since it arrived. */
    const gained = (res: ServerResponse) =>
      listeners(res) + listeners(res.socket ?? res) - (arrived.get(res) ?? 0)

    it('holds 1,000 requests with the timers and per-request listeners of one', async () => {
      const one = await holdUntil(1)
      const [first] = one
      assert.ok(first !== undefined)
      const timersWithOne = timers()
      const gainedByOne = gained(first)

      const many = await holdUntil(MANY)
      // A timer per held request would be ~1,000 more; the database pool's idle connections
      // (PostgreSQL: a timer each, a few more opened for the reads) are bounded by the pool.
      const more = timers() - timersWithOne
      assert.ok(more <= POOL_TIMERS, `${more} more active timers with ${MANY} held than with 1`)
      for (const res of many) assert.equal(gained(res), gainedByOne, 'the listeners a held request gains')
      assert.ok(
        gainedByOne <= 3,
        `${gainedByOne} listeners gained per held request (Fastify's and Node's own)`,
      )
    })
  })
}
