import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { allBackends } from '../helpers/databases/backends.js'
import {
  UNKNOWN_ID,
  folders,
  loadDocument,
  useSeededAppWithRawSql,
  sessions,
  users,
} from '../helpers/fixtures/contract-data.js'
import { appOver, listBody, request } from '../helpers/apps/test-app.js'
import { JSON_TYPE, assertProblem, assertUnauthorized, header } from '../helpers/http/http-asserts.js'
import { insertLiveFolder } from '../../harness/raw-sql.js'
import { beginDraining } from '../../src/http/plugins/drain.js'

/**
 * GET /v1/folders/changes over HTTP (docs/api.md "Changes"): every status and parameter rule,
 * each kind of entry for a write made by raw SQL on a second connection, has_more and the
 * cursor after the last entry consumed, 410 after an import, 404 once the folder is gone,
 * the listing's rel="changes" link, and wait.
 */

const PATH = '/v1/folders/changes'

interface ChangesJson {
  changes: (
    | { type: 'upsert'; folder: Record<string, unknown> & { id: string; name: string } }
    | { type: 'remove'; id: string }
    | { type: 'owner'; owner: { id: string; username: string; avatar_url: string | null } }
  )[]
  cursor: string
  has_more: boolean
}

const body = (res: LightMyRequestResponse) => JSON.parse(res.payload) as ChangesJson

/** 400 INVALID_INPUT naming `param` (and no other parameter of this endpoint). */
function assertInvalidParam(res: LightMyRequestResponse, param: string) {
  const problem = assertProblem(res, 400, 'INVALID_INPUT')
  assert.ok(problem.detail.includes(`'${param}'`), `detail names ${param}: ${problem.detail}`)
  for (const other of ['folder_id', 'cursor', 'limit', 'wait'].filter((p) => p !== param)) {
    assert.ok(!problem.detail.includes(`'${other}'`), `detail names only ${param}: ${problem.detail}`)
  }
  if (param === 'cursor') {
    // where a changes cursor comes from, not a listing's continuation token
    assert.match(problem.detail, /this endpoint/, problem.detail)
    assert.match(problem.detail, /rel="changes"/, problem.detail)
    assert.doesNotMatch(problem.detail, /continuation token|Link header/, problem.detail)
  }
}

for (const backend of allBackends()) {
  describe(`${backend.name}: GET /v1/folders/changes`, { skip: backend.skip }, () => {
    const t = useSeededAppWithRawSql(backend)

    const changes = (query: string, session = sessions.aliceLive.id) =>
      request(t.app, { url: PATH, session, query })
    async function ok(query: string, session?: string): Promise<ChangesJson> {
      const res = await changes(query, session)
      assert.equal(res.statusCode, 200, res.payload)
      assert.equal(header(res, 'content-type'), JSON_TYPE)
      assert.equal(header(res, 'cache-control'), 'no-store')
      return body(res)
    }
    /** A fresh live folder of alice at the root, followed from a fresh cursor. */
    async function followed(): Promise<{ parent: string; cursor: string }> {
      const parent = randomUUID()
      await insertLiveFolder(t.sql, {
        id: parent,
        name: `parent ${parent}`,
        parent: null,
        owner: users.alice.id,
        at: Date.now(),
      })
      const { cursor } = await ok(`folder_id=${parent}`)
      return { parent, cursor }
    }
    const child = async (parent: string, name: string) => {
      const id = randomUUID()
      await insertLiveFolder(t.sql, { id, name, parent, owner: users.alice.id, at: Date.now() })
      return id
    }
    /** The listed folder object (the listing's exact bytes, parsed) of `id` under `parent`. */
    async function listed(parent: string, id: string) {
      const res = await request(t.app, {
        session: sessions.aliceLive.id,
        query: `folder_id=${parent}&limit=100`,
      })
      return listBody(res).folders.find((f) => f.id === id)
    }

    describe('checks, in the listing order', () => {
      it('401 without or with a bad session, before any parameter check', async () => {
        assertUnauthorized(await request(t.app, { url: PATH, query: 'limit=0' }))
        assertUnauthorized(await changes('wait=99', randomUUID()))
      })

      it('403 for a frozen account, before parameters', async () => {
        assertProblem(await changes('limit=0', sessions.carolLive.id), 403, 'FROZEN_ACCOUNT')
      })

      it('400 naming each malformed or repeated parameter', async () => {
        for (const [query, param] of [
          ['folder_id=nope', 'folder_id'],
          ['folder_id=', 'folder_id'],
          [`folder_id=${UNKNOWN_ID}&folder_id=${UNKNOWN_ID}`, 'folder_id'],
          ['limit=0', 'limit'],
          ['limit=-1', 'limit'],
          ['limit=1e2', 'limit'],
          ['limit=', 'limit'],
          ['limit=1&limit=2', 'limit'],
          ['wait=61', 'wait'],
          ['wait=-1', 'wait'],
          ['wait=1.5', 'wait'],
          ['wait=', 'wait'],
          ['wait=1&wait=1', 'wait'],
          ['cursor=', 'cursor'],
          ['cursor=not%20a%20token', 'cursor'],
          ['cursor=a&cursor=b', 'cursor'],
        ] as const) {
          assertInvalidParam(await changes(query), param)
        }
      })

      it('400 for a cursor of another folder, user or kind, or forged; before the 404', async () => {
        const { parent, cursor } = await followed()
        assertInvalidParam(await changes(`cursor=${cursor}`), 'cursor') // the root's feed
        assertInvalidParam(
          await changes(`folder_id=${parent}&cursor=${cursor}`, sessions.bobLive.id),
          'cursor',
        )
        assertInvalidParam(await changes(`folder_id=${UNKNOWN_ID}&cursor=${cursor}`), 'cursor')
        const forged = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BA' : 'AA')
        assertInvalidParam(await changes(`folder_id=${parent}&cursor=${forged}`), 'cursor')
        // a listing continuation token of the same user and folder
        await child(parent, 'one')
        await child(parent, 'two')
        const list = await request(t.app, {
          session: sessions.aliceLive.id,
          query: `folder_id=${parent}&limit=1`,
        })
        const next = /cursor=([A-Za-z0-9_-]+)>; rel="next"/.exec(header(list, 'link') ?? '')?.[1]
        assert.ok(next !== undefined)
        assertInvalidParam(await changes(`folder_id=${parent}&cursor=${next}`), 'cursor')
      })

      it('404 for an unknown, foreign or deleted folder, the same body', async () => {
        const unknown = assertProblem(await changes(`folder_id=${UNKNOWN_ID}`), 404, 'NOT_FOUND')
        const foreign = assertProblem(
          await changes(`folder_id=${folders.nested.id}`, sessions.bobLive.id),
          404,
          'NOT_FOUND',
        )
        const deleted = assertProblem(await changes(`folder_id=${folders.deletedRoot.id}`), 404, 'NOT_FOUND')
        assert.equal(unknown.detail, foreign.detail)
        assert.equal(unknown.detail, deleted.detail)
      })

      it('405 with Allow for other methods; HEAD answers like GET without a body', async () => {
        const res = await request(t.app, { url: PATH, method: 'POST', session: sessions.aliceLive.id })
        assertProblem(res, 405, 'METHOD_NOT_ALLOWED')
        assert.equal(header(res, 'allow'), 'GET, HEAD')
        const head = await request(t.app, { url: PATH, method: 'HEAD', session: sessions.aliceLive.id })
        assert.equal(head.statusCode, 200)
        assert.equal(head.payload, '')
      })
    })

    describe('entries', () => {
      it('no cursor: no changes and a fresh cursor; nothing since: the same answer', async () => {
        const { parent, cursor } = await followed()
        assert.match(cursor, /^[A-Za-z0-9_-]{1,256}$/)
        const again = await ok(`folder_id=${parent}&cursor=${cursor}`)
        assert.deepEqual(again.changes, [])
        assert.equal(again.has_more, false)
      })

      it('insert, rename, timestamps, delete, undelete, move out and in, owner change and row delete', async () => {
        const { parent, cursor: start } = await followed()
        const other = (await followed()).parent
        let cursor = start
        const step = async (write: () => Promise<unknown>): Promise<ChangesJson['changes']> => {
          await write()
          const answer = await ok(`folder_id=${parent}&cursor=${cursor}`)
          assert.equal(answer.has_more, false)
          cursor = answer.cursor
          return answer.changes
        }
        const upsertOf = async (id: string) => ({ type: 'upsert', folder: await listed(parent, id) })

        const id = randomUUID()
        const inserted = await step(() =>
          insertLiveFolder(t.sql, { id, name: 'new', parent, owner: users.alice.id, at: Date.now() }),
        )
        assert.deepEqual(inserted, [await upsertOf(id)])
        assert.equal((inserted[0] as { folder: { name: string } }).folder.name, 'new')

        assert.deepEqual(
          await step(() => t.sql.run('UPDATE folders SET name = ? WHERE id = ?', 'renamed', id)),
          [await upsertOf(id)],
        )
        assert.deepEqual(
          await step(() =>
            t.sql.run(`UPDATE folders SET updated_at = ${t.sql.time} WHERE id = ?`, Date.now() + 5000, id),
          ),
          [await upsertOf(id)],
        )
        assert.deepEqual(
          await step(() => t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.true} WHERE id = ?`, id)),
          [{ type: 'remove', id }],
        )
        assert.deepEqual(
          await step(() => t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.false} WHERE id = ?`, id)),
          [await upsertOf(id)],
        )
        assert.deepEqual(
          await step(() => t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', other, id)),
          [{ type: 'remove', id }],
        )
        const back = await step(() => t.sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', parent, id))
        assert.deepEqual(back, [await upsertOf(id)])
        assert.deepEqual(await step(() => t.sql.run('DELETE FROM folders WHERE id = ?', id)), [
          { type: 'remove', id },
        ])
        // a write elsewhere shows nothing here
        assert.deepEqual(await step(() => child(other, 'elsewhere')), [])
      })

      it('owner: a username or avatar change is one entry with the new owner', async () => {
        const daveFeed = await ok('', sessions.daveLive.id)
        await t.sql.run('UPDATE users SET username = ? WHERE id = ?', 'dave-renamed', users.dave.id)
        await t.sql.run(
          'UPDATE users SET avatar_url = ? WHERE id = ?',
          'https://cdn.example.org/d.png',
          users.dave.id,
        )
        const answer = await ok(`cursor=${daveFeed.cursor}`, sessions.daveLive.id)
        assert.deepEqual(answer.changes, [
          {
            type: 'owner',
            owner: {
              id: users.dave.id,
              username: 'dave-renamed',
              avatar_url: 'https://cdn.example.org/d.png',
            },
          },
        ])
      })

      it('a folder given to another user is a remove', async () => {
        const { parent, cursor } = await followed()
        const id = await child(parent, 'gift')
        await t.sql.run('UPDATE folders SET owner_id = ?, folder_id = NULL WHERE id = ?', users.bob.id, id)
        const answer = await ok(`folder_id=${parent}&cursor=${cursor}`)
        assert.deepEqual(answer.changes, [{ type: 'remove', id }])
      })

      it('collapses a folder to its latest state within one answer', async () => {
        const { parent, cursor } = await followed()
        const a = await child(parent, 'a')
        const b = await child(parent, 'b')
        await t.sql.run('UPDATE folders SET name = ? WHERE id = ?', 'a2', a)
        const answer = await ok(`folder_id=${parent}&cursor=${cursor}`)
        assert.deepEqual(
          answer.changes.map((c) => (c.type === 'upsert' ? c.folder.name : c.type)),
          ['b', 'a2'],
        )
        assert.ok(answer.changes.every((c) => c.type !== 'upsert' || c.folder.id === a || c.folder.id === b))
      })
    })

    describe('has_more and the cursor', () => {
      it('pages with small limits: has_more until the present, the cursor after the last consumed', async () => {
        const { parent, cursor: start } = await followed()
        const ids: string[] = []
        for (let i = 0; i < 5; i++) ids.push(await child(parent, `c${i}`))
        const seen: string[] = []
        let cursor = start
        const flags: boolean[] = []
        for (let i = 0; i < 10; i++) {
          const answer = await ok(`folder_id=${parent}&cursor=${cursor}&limit=2`)
          assert.ok(answer.changes.length <= 2)
          for (const c of answer.changes) if (c.type === 'upsert') seen.push(c.folder.id)
          flags.push(answer.has_more)
          cursor = answer.cursor
          if (!answer.has_more) break
        }
        assert.deepEqual(seen, ids, 'every change once, in commit order: the cursor never skipped ahead')
        assert.deepEqual(flags, [true, true, false])
        // the final cursor is the present: nothing follows
        assert.deepEqual((await ok(`folder_id=${parent}&cursor=${cursor}`)).changes, [])
      })

      it('clamps limit to 1000', async () => {
        const { parent, cursor } = await followed()
        await child(parent, 'x')
        assert.equal((await ok(`folder_id=${parent}&cursor=${cursor}&limit=99999`)).changes.length, 1)
      })
    })

    describe('reset, deletion, listing link', () => {
      it('410 CURSOR_EXPIRED after an import touching the owner', async () => {
        const { parent, cursor } = await followed()
        await loadDocument(t.store, {
          folders: [{ name: 'imported', folder_id: null, owner_id: users.alice.id }],
        })
        assertProblem(await changes(`folder_id=${parent}&cursor=${cursor}`), 410, 'CURSOR_EXPIRED')
        // listing again gives a cursor that works
        const list = await request(t.app, { session: sessions.aliceLive.id, query: `folder_id=${parent}` })
        const link = /<([^>]+)>; rel="changes"/.exec(header(list, 'link') ?? '')?.[1]
        assert.ok(link !== undefined)
        const res = await request(t.app, { url: link, session: sessions.aliceLive.id })
        assert.equal(res.statusCode, 200)
      })

      it('404 once the followed folder is deleted', async () => {
        const { parent, cursor } = await followed()
        await t.sql.run(`UPDATE folders SET is_deleted = ${t.sql.true} WHERE id = ?`, parent)
        assertProblem(await changes(`folder_id=${parent}&cursor=${cursor}`), 404, 'NOT_FOUND')
      })

      it('the listing links rel="changes" to this endpoint from the point it was read at', async () => {
        const { parent } = await followed()
        const list = await request(t.app, { session: sessions.aliceLive.id, query: `folder_id=${parent}` })
        const link = /<([^>]+)>; rel="changes"/.exec(header(list, 'link') ?? '')?.[1]
        assert.ok(link?.startsWith(`${PATH}?folder_id=${parent}&cursor=`), link)
        const id = await child(parent, 'after the listing')
        const answer = body(await request(t.app, { url: link, session: sessions.aliceLive.id }))
        assert.deepEqual(answer.changes, [{ type: 'upsert', folder: await listed(parent, id) }])
        const root = await request(t.app, { session: sessions.aliceLive.id })
        assert.match(
          header(root, 'link') ?? '',
          /<\/v1\/folders\/changes\?cursor=[A-Za-z0-9_-]+>; rel="changes"$/,
        )
      })
    })

    describe('wait', () => {
      it('answers within a second of a raw-SQL commit', async () => {
        const { parent, cursor } = await followed()
        const started = Date.now()
        const held = changes(`folder_id=${parent}&cursor=${cursor}&wait=20`)
        await new Promise((resolve) => setTimeout(resolve, 300))
        const id = randomUUID()
        const committed = Date.now()
        await insertLiveFolder(t.sql, { id, name: 'awaited', parent, owner: users.alice.id, at: Date.now() })
        const res = await held
        const answered = Date.now()
        assert.equal(res.statusCode, 200)
        assert.deepEqual(
          body(res).changes.map((c) => (c.type === 'upsert' ? c.folder.id : c.type)),
          [id],
        )
        assert.ok(answered - committed < 1000, `answered ${answered - committed} ms after the commit`)
        assert.ok(answered - started >= 300, 'it was held')
      })

      it('a change under another parent of the same owner does not end the wait', async () => {
        const { parent, cursor } = await followed()
        const other = (await followed()).parent
        const held = changes(`folder_id=${parent}&cursor=${cursor}&wait=1`)
        await new Promise((resolve) => setTimeout(resolve, 200))
        await child(other, 'elsewhere')
        const res = await held
        assert.deepEqual(body(res), { changes: [], cursor, has_more: false })
      })

      it('times out with no changes, the same cursor and has_more false', async () => {
        const { parent, cursor } = await followed()
        const started = Date.now()
        const answer = await ok(`folder_id=${parent}&cursor=${cursor}&wait=1`)
        assert.deepEqual(answer, { changes: [], cursor, has_more: false })
        assert.ok(Date.now() - started >= 950, 'held about a second')
      })

      it('wait=0 and waits with changes pending answer at once', async () => {
        const { parent, cursor } = await followed()
        let started = Date.now()
        await ok(`folder_id=${parent}&cursor=${cursor}&wait=0`)
        assert.ok(Date.now() - started < 500)
        await child(parent, 'pending')
        started = Date.now()
        assert.equal((await ok(`folder_id=${parent}&cursor=${cursor}&wait=30`)).changes.length, 1)
        assert.ok(Date.now() - started < 500)
      })
    })

    describe('every answer passes the checks when it is sent', () => {
      /** A user of its own with one session and one root folder, written as another writer would. */
      async function freshUser(): Promise<{ user: string; session: string; folder: string }> {
        const [user, session, folder] = [randomUUID(), randomUUID(), randomUUID()]
        await t.sql.run(
          `INSERT INTO users (id, username, is_suspended, created_at, updated_at)
           VALUES (?, ?, ${t.sql.false}, ${t.sql.time}, ${t.sql.time})`,
          user,
          `user-${user}`,
          Date.now(),
          Date.now(),
        )
        await t.sql.run(
          `INSERT INTO sessions (id, user_id, created_at) VALUES (?, ?, ${t.sql.time})`,
          session,
          user,
          Date.now(),
        )
        await insertLiveFolder(t.sql, { id: folder, name: 'mine', parent: null, owner: user, at: Date.now() })
        return { user, session, folder }
      }
      async function held(session: string, waitSeconds: number) {
        const fresh = JSON.parse((await request(t.app, { url: PATH, session })).payload) as ChangesJson
        return request(t.app, { url: PATH, session, query: `cursor=${fresh.cursor}&wait=${waitSeconds}` })
      }
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

      it('a session revoked during the wait: 401 after the change that wakes it, without it', async () => {
        const { user, session } = await freshUser()
        const started = Date.now()
        const answer = held(session, 8)
        await pause(300)
        await t.sql.run('DELETE FROM sessions WHERE id = ?', session)
        const id = randomUUID()
        await insertLiveFolder(t.sql, {
          id,
          name: 'after the revoke',
          parent: null,
          owner: user,
          at: Date.now(),
        })
        const res = await answer
        assertUnauthorized(res)
        assert.ok(!res.payload.includes(id), 'nothing committed after the revoke')
        assert.ok(Date.now() - started < 4000, 'woken by the change, not by the end of the wait')
      })

      it('a session revoked during the wait: 401 when the wait runs out too', async () => {
        const { session } = await freshUser()
        const answer = held(session, 1)
        await pause(200)
        await t.sql.run('DELETE FROM sessions WHERE id = ?', session)
        assertUnauthorized(await answer)
      })

      it('a session expired during the wait: 401', async () => {
        const { session } = await freshUser()
        await t.sql.run(
          `UPDATE sessions SET expires_at = ${t.sql.time} WHERE id = ?`,
          Date.now() + 500,
          session,
        )
        assertUnauthorized(await held(session, 2))
      })

      it('a user frozen during the wait: 403 after a rename, without it', async () => {
        const { user, session, folder } = await freshUser()
        const answer = held(session, 8)
        await pause(300)
        await t.sql.run(`UPDATE users SET is_suspended = ${t.sql.true} WHERE id = ?`, user)
        await t.sql.run('UPDATE folders SET name = ? WHERE id = ?', 'renamed while frozen', folder)
        const res = await answer
        assertProblem(res, 403, 'FROZEN_ACCOUNT')
        assert.ok(!res.payload.includes('renamed while frozen'))
      })

      describe('with nothing committed that would wake it: the sessions read again while held', () => {
        let sweeping: FastifyInstance
        before(async () => {
          sweeping = await appOver(t.store, { sessionRecheckMs: 100 })
        })
        after(() => sweeping?.close())
        async function heldOn(session: string, waitSeconds: number) {
          const fresh = JSON.parse((await request(sweeping, { url: PATH, session })).payload) as ChangesJson
          const started = Date.now()
          const res = await request(sweeping, {
            url: PATH,
            session,
            query: `cursor=${fresh.cursor}&wait=${waitSeconds}`,
          })
          return { res, seconds: (Date.now() - started) / 1000 }
        }

        it('a user frozen during a 30 s wait: 403 long before the wait ends', async () => {
          const { user, session } = await freshUser()
          const answer = heldOn(session, 30)
          await pause(300)
          await t.sql.run(`UPDATE users SET is_suspended = ${t.sql.true} WHERE id = ?`, user)
          const { res, seconds } = await answer
          assertProblem(res, 403, 'FROZEN_ACCOUNT')
          assert.ok(seconds < 15, `answered after ${seconds} s of a 30 s wait`)
        })

        it('a session revoked during a 30 s wait: 401 long before the wait ends', async () => {
          const { session } = await freshUser()
          const answer = heldOn(session, 30)
          await pause(300)
          await t.sql.run('DELETE FROM sessions WHERE id = ?', session)
          const { res, seconds } = await answer
          assertUnauthorized(res)
          assert.ok(seconds < 15, `answered after ${seconds} s of a 30 s wait`)
        })

        it('a session that still passes waits its whole time: 200, nothing, after the wait', async () => {
          const { session } = await freshUser()
          const { res, seconds } = await heldOn(session, 1)
          assert.equal(res.statusCode, 200, res.payload)
          assert.deepEqual(body(res).changes, [])
          assert.ok(seconds >= 0.9, `answered after ${seconds} s of a 1 s wait`)
        })
      })
    })
  })

  describe(`${backend.name}: held requests, bounded and answered at shutdown`, { skip: backend.skip }, () => {
    const t = useSeededAppWithRawSql(backend)

    it('requests woken together by one commit share one read and one session check after it', async () => {
      let reads = 0
      let lookups = 0
      const counting = new Proxy(t.store, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver)
          const counted = property === 'readChanges' || property === 'findSessionUser'
          if (!counted || typeof value !== 'function') return value
          return (...args: unknown[]) => {
            if (property === 'readChanges') reads++
            else lookups++
            return (value as (...a: unknown[]) => unknown).apply(target, args)
          }
        },
      })
      // twenty held requests of one session: above the default bound per session
      const app = await appOver(counting, { longPollMaxPerSession: 20 })
      try {
        const get = (query: string) => request(app, { url: PATH, session: sessions.bobLive.id, query })
        const fresh = JSON.parse((await get('')).payload) as ChangesJson
        const held = Array.from({ length: 20 }, () => get(`cursor=${fresh.cursor}&wait=20`))
        await new Promise((resolve) => setTimeout(resolve, 300))
        const before = reads
        const lookupsBefore = lookups
        const id = randomUUID()
        await insertLiveFolder(t.sql, {
          id,
          name: 'shared',
          parent: null,
          owner: users.bob.id,
          at: Date.now(),
        })
        for (const res of await Promise.all(held)) {
          assert.deepEqual(
            body(res).changes.map((c) => (c.type === 'upsert' ? c.folder.id : c.type)),
            [id],
          )
        }
        assert.equal(before, 1, 'held requests at the present parked without a read')
        assert.ok(reads - before <= 2, `${reads - before} reads for 20 woken requests`)
        const checks = lookups - lookupsBefore
        assert.ok(checks <= 2, `${checks} session lookups for 20 woken requests of one session`)
      } finally {
        await app.close()
      }
    })

    it('a client that disconnects frees its slot at once', async () => {
      const app = await appOver(t.store, { longPollMaxWaiters: 1 })
      try {
        const address = await app.listen({ host: '127.0.0.1', port: 0 })
        const headers = { cookie: `session_id=${sessions.aliceLive.id}` }
        const fresh = (await (await fetch(`${address}${PATH}`, { headers })).json()) as ChangesJson
        const url = `${address}${PATH}?cursor=${fresh.cursor}&wait=30`
        const leaving = new AbortController()
        const first = fetch(url, { headers, signal: leaving.signal }).catch(() => 'aborted')
        await new Promise((resolve) => setTimeout(resolve, 200))
        // the slot is taken: a second waiter is refused
        assert.equal((await fetch(url, { headers })).status, 429)
        leaving.abort()
        assert.equal(await first, 'aborted')
        await new Promise((resolve) => setTimeout(resolve, 50))
        const started = Date.now()
        const res = await fetch(url.replace('wait=30', 'wait=1'), { headers })
        assert.equal(res.status, 200, 'the slot was freed')
        assert.ok(Date.now() - started >= 900, 'and the new request was held')
      } finally {
        await app.close()
      }
    })

    it('429 RATE_LIMITED with Retry-After past LONG_POLL_MAX_WAITERS; answered on close', async () => {
      const app = await appOver(t.store, { longPollMaxWaiters: 2 })
      let closed = false
      try {
        const get = (query: string) => request(app, { url: PATH, session: sessions.aliceLive.id, query })
        const fresh = JSON.parse((await get('')).payload) as ChangesJson
        const wait = `cursor=${fresh.cursor}&wait=30`
        const held = [get(wait), get(wait)]
        await new Promise((resolve) => setTimeout(resolve, 200))
        const refused = await get(wait)
        assertProblem(refused, 429, 'RATE_LIMITED')
        assert.match(header(refused, 'retry-after') ?? '', /^[1-9][0-9]*$/)
        // a request with nothing to wait for still answers
        assert.equal((await get(`cursor=${fresh.cursor}`)).statusCode, 200)
        const started = Date.now()
        await app.close()
        closed = true
        for (const res of await Promise.all(held)) {
          assert.equal(res.statusCode, 200)
          assert.deepEqual(JSON.parse(res.payload), { changes: [], cursor: fresh.cursor, has_more: false })
        }
        assert.ok(Date.now() - started < 2000)
      } finally {
        if (!closed) await app.close()
      }
    })

    it('429 with Retry-After past LONG_POLL_PER_SESSION, while another session still holds', async () => {
      const app = await appOver(t.store, { longPollMaxWaiters: 10, longPollMaxPerSession: 2 })
      try {
        const get = (session: string, query: string) => request(app, { url: PATH, session, query })
        const cursorOf = async (session: string) =>
          (JSON.parse((await get(session, '')).payload) as ChangesJson).cursor
        const [alice, bob] = [await cursorOf(sessions.aliceLive.id), await cursorOf(sessions.bobLive.id)]
        const aliceHeld = [1, 2].map(() => get(sessions.aliceLive.id, `cursor=${alice}&wait=2`))
        await new Promise((resolve) => setTimeout(resolve, 200))
        const refused = await get(sessions.aliceLive.id, `cursor=${alice}&wait=2`)
        assertProblem(refused, 429, 'RATE_LIMITED')
        assert.match(header(refused, 'retry-after') ?? '', /^[1-9][0-9]*$/)
        const started = Date.now()
        const bobHeld = await get(sessions.bobLive.id, `cursor=${bob}&wait=1`)
        assert.deepEqual(JSON.parse(bobHeld.payload), { changes: [], cursor: bob, has_more: false })
        assert.ok(Date.now() - started >= 900, 'the other session was held')
        for (const res of await Promise.all(aliceHeld)) assert.equal(res.statusCode, 200)
      } finally {
        await app.close()
      }
    })

    it('while draining: 503 UNAVAILABLE with Retry-After, and held requests answered before exit', async () => {
      const app = await appOver(t.store)
      let closed = false
      try {
        const get = (query: string) => request(app, { url: PATH, session: sessions.aliceLive.id, query })
        const fresh = JSON.parse((await get('')).payload) as ChangesJson
        const holding = get(`cursor=${fresh.cursor}&wait=30`)
        await new Promise((resolve) => setTimeout(resolve, 200))
        beginDraining(app)
        for (const query of [`cursor=${fresh.cursor}&wait=30`, `cursor=${fresh.cursor}`, '']) {
          const res = await get(query)
          assertProblem(res, 503, 'UNAVAILABLE')
          assert.match(header(res, 'retry-after') ?? '', /^[1-9][0-9]*$/)
        }
        const started = Date.now()
        await app.close()
        closed = true
        const res = await holding
        assert.equal(res.statusCode, 200)
        assert.deepEqual(JSON.parse(res.payload), { changes: [], cursor: fresh.cursor, has_more: false })
        assert.ok(Date.now() - started < 2000)
      } finally {
        if (!closed) await app.close()
      }
    })
  })
}
