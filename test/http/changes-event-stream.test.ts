import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends } from '../helpers/databases/backends.js'
import { openEventStream, type OpenedStream } from '../helpers/http/event-stream-client.js'
import { assertEndsWhenFrozenWhileIdle } from '../helpers/http/frozen-while-idle.js'
import { countingCalls } from '../helpers/apps/counting-store.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { appOver, type AppOverrides } from '../helpers/apps/test-app.js'
import type { Store } from '../../src/store/store.js'
import { ALICE as OWNER, ALICE_SESSION as SESSION } from '../helpers/fixtures/users.js'

/**
 * GET /v1/folders/changes as Server-Sent Events (docs/api.md "Push"), read by a client that
 * parses the stream as EventSource does: one event per commit whose data is the 200 body,
 * resuming with Last-Event-ID, the checks before every event (revoked session, frozen user,
 * folder gone), heartbeats, the held-request bound, and shutdown.
 */

const REVOKED = uuid('5ee00000', 3)
const PARENT = uuid('5ee00000', 4)
const DOOMED = uuid('5ee00000', 5)
/** A user of its own, frozen by one test while its stream is idle. */
const FROZEN_OWNER = uuid('5ee00000', 8)
const FROZEN_SESSION = uuid('5ee00000', 9)
const FROZEN_PARENT = uuid('5ee00000', 10)
const PATH = '/v1/folders/changes'

interface ChangesJson {
  changes: { type: string; folder?: { id: string }; id?: string }[]
  cursor: string
  has_more: boolean
}

const ids = (data: string) =>
  (JSON.parse(data) as ChangesJson).changes.map((c) => (c.type === 'upsert' ? c.folder?.id : `${c.type}`))

for (const backend of allBackends()) {
  describe(`${backend.name}: GET /v1/folders/changes as an event stream`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let sql: RawSql
    const apps: FastifyInstance[] = []
    const streams: OpenedStream[] = []

    /** A listening app over the test store; closed after the suite. */
    async function serve(overrides: AppOverrides = {}, store: Store = opened.store) {
      const app = await appOver(store, {
        longPollIntervalMs: 100,
        eventStream: { heartbeatMs: 60_000 },
        ...overrides,
      })
      apps.push(app)
      return { app, base: await app.listen({ host: '127.0.0.1', port: 0 }) }
    }
    async function open(base: string, query = '', headers: Record<string, string> = {}, session = SESSION) {
      const stream = await openEventStream(`${base}${PATH}?folder_id=${PARENT}${query}`, {
        cookie: `session_id=${session}`,
        ...headers,
      })
      streams.push(stream)
      return stream
    }
    /** A new live session of the owner, for a test that revokes it. */
    const addSession = (id: string) =>
      sql.run(
        `INSERT INTO sessions (id, user_id, created_at) VALUES (?, ?, ${sql.time})`,
        id,
        OWNER,
        Date.now(),
      )
    const insert = async (name: string, parent = PARENT) => {
      const id = randomUUID()
      await insertLiveFolder(sql, { id, name, parent, owner: OWNER, at: Date.now() })
      return id
    }

    before(async () => {
      opened = await backend.open()
      await opened.store.importData(
        validateImport(
          {
            users: [
              { id: OWNER, username: 'alice' },
              { id: FROZEN_OWNER, username: 'frozen-later' },
            ],
            sessions: [
              { id: SESSION, user_id: OWNER },
              { id: REVOKED, user_id: OWNER },
              { id: FROZEN_SESSION, user_id: FROZEN_OWNER },
            ],
            folders: [
              { id: PARENT, name: 'followed', owner_id: OWNER },
              { id: DOOMED, name: 'doomed', owner_id: OWNER },
              { id: FROZEN_PARENT, name: 'followed until frozen', owner_id: FROZEN_OWNER },
            ],
          },
          Date.now(),
        ),
      )
      sql = await openRawSql(opened.url)
    })
    after(async () => {
      for (const stream of streams) stream.close()
      await Promise.all(apps.map((app) => app.close()))
      await sql?.close()
      await opened?.cleanup()
    })

    it('sends retry, then the present as the first event, then one event per commit whose data is the 200 body', async () => {
      const { base } = await serve()
      const stream = await open(base)
      assert.equal(stream.status, 200)
      assert.equal(stream.headers['content-type'], 'text/event-stream; charset=utf-8')
      assert.equal(stream.headers['cache-control'], 'no-store')
      assert.equal(stream.headers['x-content-type-options'], 'nosniff')
      assert.match(String(stream.headers['x-request-id']), /^.+$/)
      assert.deepEqual(await stream.item(0, 5000), { kind: 'retry', ms: 2000 })
      const first = await stream.nextEvent(5000)
      assert.equal(first.event, 'changes')
      const present = JSON.parse(first.data) as ChangesJson
      assert.deepEqual(present.changes, [])
      assert.equal(first.id, present.cursor)

      const one = await insert('one')
      const e1 = await stream.nextEvent(5000)
      assert.deepEqual(ids(e1.data), [one])
      // byte for byte what the long-poll answer from the same cursor is
      const plain = await fetch(`${base}${PATH}?folder_id=${PARENT}&cursor=${first.id}`, {
        headers: { cookie: `session_id=${SESSION}` },
      })
      // (cursors are sealed with a fresh nonce each time: equal positions, different bytes)
      const uncursored = (text: string) => text.replace((JSON.parse(text) as ChangesJson).cursor, '')
      assert.equal(uncursored(await plain.text()), uncursored(e1.data))
      assert.equal(e1.id, (JSON.parse(e1.data) as ChangesJson).cursor)

      const two = await insert('two')
      const e2 = await stream.nextEvent(5000)
      assert.deepEqual(ids(e2.data), [two])
      // a change under another parent sends nothing
      await insert('elsewhere', DOOMED)
      const three = await insert('three')
      assert.deepEqual(ids((await stream.nextEvent(5000)).data), [three])
    })

    it('resumes from Last-Event-ID with no loss and no repeat; the header wins over the query cursor', async () => {
      const { base } = await serve()
      const stream = await open(base)
      const start = await stream.nextEvent(5000)
      const seen = await insert('seen')
      const last = await stream.nextEvent(5000)
      assert.deepEqual(ids(last.data), [seen])
      stream.close()
      const missed = [await insert('missed 1'), await insert('missed 2')]
      // EventSource reconnects to the same URL (here with the first cursor) and sends the last id
      const again = await open(base, `&cursor=${start.id}`, { 'last-event-id': last.id })
      assert.deepEqual(ids((await again.nextEvent(5000)).data), missed)
      const later = await insert('later')
      assert.deepEqual(ids((await again.nextEvent(5000)).data), [later])
    })

    it('ends with an error event carrying the 401 problem once the session is revoked, sending nothing committed after', async () => {
      const { base } = await serve()
      const stream = await open(base, '', {}, REVOKED)
      await stream.nextEvent(5000)
      await sql.run('DELETE FROM sessions WHERE id = ?', REVOKED)
      await insert('after the revoke')
      const final = await stream.nextEvent(5000)
      assert.equal(final.event, 'error')
      const problem = JSON.parse(final.data) as { status: number; code: string; request_id: string }
      assert.equal(problem.status, 401)
      assert.equal(problem.code, 'UNAUTHORIZED')
      await stream.ended
      assert.equal(stream.items.filter((i) => i.kind === 'event').length, 2, 'nothing else was sent')
    })

    it('ends with an error event carrying the 403 problem once the user is frozen while the stream is idle, sending nothing committed after', async () => {
      const { base } = await serve()
      const stream = await openEventStream(`${base}${PATH}?folder_id=${FROZEN_PARENT}`, {
        cookie: `session_id=${FROZEN_SESSION}`,
      })
      streams.push(stream)
      await stream.nextEvent(5000)
      await assertEndsWhenFrozenWhileIdle(stream, sql, { owner: FROZEN_OWNER, parent: FROZEN_PARENT })
      assert.equal(stream.items.filter((i) => i.kind === 'event').length, 2, 'nothing else was sent')
    })

    it('a revoke with nothing committed after it ends an idle stream at the next read of held sessions', async () => {
      const { base } = await serve({ sessionRecheckMs: 100 })
      const session = uuid('5ee00000', 11)
      await addSession(session)
      const stream = await open(base, '', {}, session)
      await stream.nextEvent(5000)
      await new Promise((resolve) => setTimeout(resolve, 300))
      await sql.run('DELETE FROM sessions WHERE id = ?', session)
      const final = await stream.nextEvent(5000)
      assert.equal(final.event, 'error')
      assert.equal((JSON.parse(final.data) as { status: number }).status, 401)
      await stream.ended
    })

    it('a revoke ends every idle stream of the session with the error event, none sent the change', async () => {
      const counted = countingCalls(opened.store, 'findSessionUser')
      const { base } = await serve({ longPollMaxPerSession: 100 }, counted.store)
      const session = uuid('5ee00000', 7)
      await addSession(session)
      const many = await Promise.all(Array.from({ length: 100 }, () => open(base, '', {}, session)))
      await Promise.all(many.map((s) => s.nextEvent(5000)))
      await new Promise((resolve) => setTimeout(resolve, 300))
      const before = counted.calls()
      await sql.run('DELETE FROM sessions WHERE id = ?', session)
      await insert('after the revoke of a hundred')
      for (const s of many) {
        const final = await s.nextEvent(10_000)
        assert.equal(final.event, 'error')
        assert.equal((JSON.parse(final.data) as { status: number }).status, 401)
        await s.ended
        assert.equal(s.items.filter((i) => i.kind === 'event').length, 2, 'nothing else was sent')
      }
      assert.ok(counted.calls() - before <= 2, `${counted.calls() - before} session lookups for 100 streams`)
    })

    it('ends with a 404 error event when the followed folder is deleted', async () => {
      const { base } = await serve()
      const stream = await openEventStream(`${base}${PATH}?folder_id=${DOOMED}`, {
        cookie: `session_id=${SESSION}`,
      })
      streams.push(stream)
      await stream.nextEvent(5000)
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, DOOMED)
      const final = await stream.nextEvent(5000)
      assert.equal(final.event, 'error')
      assert.equal((JSON.parse(final.data) as { status: number }).status, 404)
      await stream.ended
    })

    it('sends a comment line every heartbeat interval', async () => {
      const { base } = await serve({ eventStream: { heartbeatMs: 100 } })
      const stream = await open(base)
      await stream.nextEvent(5000)
      const started = Date.now()
      for (let seen = 2; ; seen++) {
        const item = await stream.item(seen, 2000)
        if (item.kind === 'comment') break
      }
      assert.ok(Date.now() - started < 2000)
    })

    it('sends the heartbeat to every open stream, from one timer', async () => {
      const { base } = await serve({ eventStream: { heartbeatMs: 100 }, longPollMaxPerSession: 30 })
      const many = await Promise.all(Array.from({ length: 30 }, () => open(base)))
      await Promise.all(many.map((s) => s.nextEvent(5000)))
      await Promise.all(
        many.map(async (s) => {
          for (let seen = 2; ; seen++) if ((await s.item(seen, 2000)).kind === 'comment') return
        }),
      )
      for (const s of many) s.close()
    })

    it('answers ordinary problems before the stream starts, and 429 past the held-request bound', async () => {
      const { base } = await serve({ longPollMaxWaiters: 1 })
      const anonymous = await openEventStream(`${base}${PATH}`, {})
      assert.equal(anonymous.status, 401)
      assert.equal(anonymous.headers['content-type'], 'application/problem+json; charset=utf-8')
      const unknown = await openEventStream(`${base}${PATH}?folder_id=${randomUUID()}`, {
        cookie: `session_id=${SESSION}`,
      })
      assert.equal(unknown.status, 404)
      const forged = await open(base, '', { 'last-event-id': 'not a cursor' })
      assert.equal(forged.status, 400)
      assert.match(forged.body, /Last-Event-ID/)

      const holding = await open(base)
      await holding.nextEvent(5000)
      const refused = await open(base)
      assert.equal(refused.status, 429)
      assert.equal((JSON.parse(refused.body) as { code: string }).code, 'RATE_LIMITED')
      assert.match(refused.headers['retry-after'] ?? '', /^[1-9][0-9]*$/)
      holding.close()
      await new Promise((resolve) => setTimeout(resolve, 200))
      const next = await open(base)
      assert.equal(next.status, 200, 'a closed stream frees its place')
    })

    it('records a stream in the request metrics however it ends', async () => {
      const { base } = await serve()
      const counted = async () => {
        const text = await (await fetch(`${base}/metrics`)).text()
        const line = text
          .split('\n')
          .find(
            (l) =>
              l.startsWith('http_requests_total{') &&
              l.includes(`route="${PATH}"`) &&
              l.includes('status="200"'),
          )
        return line === undefined ? 0 : Number(line.split(' ').at(-1))
      }
      const before = await counted()
      const left = await open(base)
      await left.nextEvent(5000)
      left.close()
      const revoked = uuid('5ee00000', 6)
      await addSession(revoked)
      const ended = await open(base, '', {}, revoked)
      await ended.nextEvent(5000)
      await sql.run('DELETE FROM sessions WHERE id = ?', revoked)
      await insert('ends a stream')
      await ended.ended
      await new Promise((resolve) => setTimeout(resolve, 200))
      assert.equal(await counted(), before + 2)
    })

    it('streams woken by one commit share the read and the session check after it', async () => {
      const counted = countingCalls(opened.store, 'findSessionUser')
      // One session's twenty streams: its bound on held requests raised to let them all in.
      const { base } = await serve({ longPollMaxPerSession: 20 }, counted.store)
      const many = await Promise.all(Array.from({ length: 20 }, () => open(base)))
      await Promise.all(many.map((s) => s.nextEvent(5000)))
      await new Promise((resolve) => setTimeout(resolve, 300))
      const before = counted.calls()
      const id = await insert('seen by twenty')
      for (const s of many) assert.deepEqual(ids((await s.nextEvent(5000)).data), [id])
      assert.ok(counted.calls() - before <= 2, `${counted.calls() - before} session lookups for 20 streams`)
      for (const s of many) s.close()
    })

    it('ends the stream when its time runs out, while it waits for a change', async () => {
      const { base } = await serve({ eventStream: { heartbeatMs: 60_000, maxMs: 400 } })
      const stream = await open(base)
      await stream.nextEvent(5000)
      let timer: NodeJS.Timeout | undefined
      const outlived = new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve('still open after 5 s'), 5000)
      })
      assert.equal(await Promise.race([stream.ended.then(() => 'ended'), outlived]), 'ended')
      clearTimeout(timer)
    })

    it('on shutdown sends what is pending, then ends the stream', async () => {
      // a long poll interval: the pending change is found by the read made at shutdown
      const { app, base } = await serve({ longPollIntervalMs: 1000 })
      const stream = await open(base)
      await stream.nextEvent(5000)
      const pending = await insert('pending at shutdown')
      await app.close()
      const last = await stream.nextEvent(5000)
      assert.deepEqual(ids(last.data), [pending])
      await stream.ended
    })
  })
}
