import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { allBackends } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { openEventStream, type OpenedStream } from '../helpers/http/event-stream-client.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * Several frames for one socket leave in one write: a stream's headers, `retry:` line and the
 * answers of its catch-up (has_more, one folder an answer) reach the kernel as one write, and
 * each later event as one. Counted on the server's socket (its `_write` and `_writev`, which
 * the stream's writes reach once per write to the kernel), not timed.
 */

const OWNER = uuid('7fb00000', 1)
const SESSION = uuid('7fb00000', 2)
const ROOT = uuid('7fb00000', 3)
const CHILDREN = 4
const childOf = (i: number) => uuid('7fb10000', i + 1)

for (const backend of allBackends()) {
  describe(`${backend.name}: an event stream's writes`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let sql: RawSql
    let app: FastifyInstance
    const sockets: Socket[] = []
    const writes = new Map<Socket, number>()
    const streams: OpenedStream[] = []

    before(async () => {
      opened = await backend.open()
      await seedOwner(opened.store, {
        owner: OWNER,
        username: 'corked',
        sessions: [SESSION],
        folders: [
          { id: ROOT, name: 'root' },
          ...Array.from({ length: CHILDREN }, (_, i) => ({
            id: childOf(i),
            name: `child ${i}`,
            folder_id: ROOT,
          })),
        ],
      })
      sql = await openRawSql(opened.url)
      app = await appOver(opened.store, { longPollIntervalMs: 100, eventStream: { heartbeatMs: 60_000 } })
      app.server.on('connection', (socket: Socket) => {
        sockets.push(socket)
        writes.set(socket, 0)
        const count = () => writes.set(socket, (writes.get(socket) ?? 0) + 1)
        const write = socket._write.bind(socket)
        socket._write = (...args) => {
          count()
          write(...args)
        }
        const writev = socket._writev?.bind(socket)
        if (writev !== undefined)
          socket._writev = (...args) => {
            count()
            writev(...args)
          }
      })
    })
    after(async () => {
      for (const stream of streams) stream.close()
      await app?.close()
      await sql?.close()
      await opened?.cleanup()
    })

    it('sends the headers and a catch-up of several answers in one write, then one write an event', async () => {
      const base = await app.listen({ host: '127.0.0.1', port: 0 })
      const stream = await openEventStream(`${base}/v1/folders/tree?root=${ROOT}&limit=1`, {
        cookie: `session_id=${SESSION}`,
      })
      streams.push(stream)
      let answers = 0
      for (let more = true; more; answers++) {
        const event = await stream.nextEvent(5000)
        assert.equal(event.event, 'changes')
        more = (JSON.parse(event.data) as { has_more: boolean }).has_more
      }
      assert.ok(answers >= 3, `${answers} answers of one entry each`)
      const socket = sockets.at(-1)
      assert.ok(socket !== undefined)
      assert.equal(writes.get(socket), 1, `the headers and ${answers} answers in one write`)

      const added = randomUUID()
      await insertLiveFolder(sql, { id: added, name: 'after', parent: ROOT, owner: OWNER, at: Date.now() })
      const event = await stream.nextEvent(5000)
      assert.ok(event.data.includes(added))
      assert.equal(writes.get(socket), 2, 'one write for the event')
    })
  })
}
