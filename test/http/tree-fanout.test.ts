import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { allBackends } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { openEventStream, type OpenedStream } from '../helpers/http/event-stream-client.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { countingCalls } from '../helpers/apps/counting-store.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * Many followers of one user's tree, each on its own session, woken by one commit: one read
 * of the log for all of them, their session checks in one statement, and the same event,
 * byte for byte, to each (counted, not timed).
 */

const OWNER = uuid('7fa00000', 1)
const ROOT = uuid('7fa00000', 2)
const FOLLOWERS = 12
const sessionOf = (i: number) => uuid('7fa10000', i + 1)
const PATH = '/v1/folders/tree'

for (const backend of allBackends()) {
  describe(`${backend.name}: tree followers woken together`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let sql: RawSql
    let app: FastifyInstance
    let counted: ReturnType<typeof countingCalls>
    let batches: ReturnType<typeof countingCalls>
    let lookups: ReturnType<typeof countingCalls>
    const streams: OpenedStream[] = []
    let base = ''

    before(async () => {
      opened = await backend.open()
      await seedOwner(opened.store, {
        owner: OWNER,
        username: 'fan-out',
        sessions: Array.from({ length: FOLLOWERS }, (_, i) => sessionOf(i)),
        folders: [{ id: ROOT, name: 'root' }],
      })
      sql = await openRawSql(opened.url)
      counted = countingCalls(opened.store, 'readTree')
      batches = countingCalls(counted.store, 'findSessionUsers')
      lookups = countingCalls(batches.store, 'findSessionUser')
      // No sweep of held sessions during the test: the statements counted are the wake's.
      app = await appOver(lookups.store, {
        longPollIntervalMs: 100,
        sessionRecheckMs: 60_000,
        eventStream: { heartbeatMs: 60_000 },
      })
      base = await app.listen({ host: '127.0.0.1', port: 0 })
    })
    after(async () => {
      for (const stream of streams) stream.close()
      await app?.close()
      await sql?.close()
      await opened?.cleanup()
    })

    it('share one read of the log and one session statement, and get the same event', async () => {
      for (let i = 0; i < FOLLOWERS; i++) {
        const stream = await openEventStream(`${base}${PATH}?root=${ROOT}`, {
          cookie: `session_id=${sessionOf(i)}`,
        })
        streams.push(stream)
        const download = JSON.parse((await stream.nextEvent(5000)).data) as { has_more: boolean }
        assert.equal(download.has_more, false)
      }
      await new Promise((resolve) => setTimeout(resolve, 300))
      const before = counted.calls()
      const [batchesBefore, lookupsBefore] = [batches.calls(), lookups.calls()]
      const added = randomUUID()
      await insertLiveFolder(sql, {
        id: added,
        name: 'seen by all',
        parent: ROOT,
        owner: OWNER,
        at: Date.now(),
      })
      const events = await Promise.all(streams.map((stream) => stream.nextEvent(5000)))
      for (const event of events) {
        assert.equal(event.event, 'changes')
        assert.ok(event.data.includes(added))
        assert.equal(event.data, events[0]?.data)
        assert.equal(event.id, events[0]?.id, 'one answer, one cursor')
      }
      const reads = counted.calls() - before
      assert.ok(reads <= 2, `${reads} reads of the log for ${FOLLOWERS} followers`)
      // Their twelve session checks: in one statement, or two when the wake spanned two turns.
      const [batched, alone] = [batches.calls() - batchesBefore, lookups.calls() - lookupsBefore]
      assert.ok(batched >= 1 && batched <= 2 && alone === 0, `${batched} batches, ${alone} lone lookups`)
    })

    it('give followers that arrive at one cursor, with nothing new, that same cursor back', async () => {
      // So they go on holding one token, which the next wake opens once for all of them
      // rather than once each (src/feed/feed.ts cursorAt).
      const cookie = `session_id=${sessionOf(0)}`
      let cursor = ''
      for (let more = true; more;) {
        const page = await fetch(`${base}${PATH}?root=${ROOT}${cursor === '' ? '' : `&cursor=${cursor}`}`, {
          headers: { cookie },
        })
        const body = (await page.json()) as { cursor: string; has_more: boolean }
        cursor = body.cursor
        more = body.has_more
      }
      const again = await fetch(`${base}${PATH}?root=${ROOT}&cursor=${cursor}`, { headers: { cookie } })
      assert.equal(
        ((await again.json()) as { cursor: string }).cursor,
        cursor,
        'an answer at the place it began',
      )
      for (let i = 1; i <= 3; i++) {
        const stream = await openEventStream(`${base}${PATH}?root=${ROOT}&cursor=${cursor}`, {
          cookie: `session_id=${sessionOf(i)}`,
        })
        streams.push(stream)
        const first = await stream.nextEvent(5000)
        assert.equal(first.id, cursor, `follower ${i}'s first event`)
        assert.deepEqual(JSON.parse(first.data), { changes: [], cursor, has_more: false })
      }
      // Past a change, a new cursor.
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'root renamed', ROOT)
      await insertLiveFolder(sql, {
        id: randomUUID(),
        name: 'one more',
        parent: ROOT,
        owner: OWNER,
        at: Date.now(),
      })
      const moved = await fetch(`${base}${PATH}?root=${ROOT}&cursor=${cursor}`, { headers: { cookie } })
      const body = (await moved.json()) as { changes: unknown[]; cursor: string }
      assert.equal(body.changes.length, 1)
      assert.notEqual(body.cursor, cursor)
    })
  })
}
