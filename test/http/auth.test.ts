import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { allBackends } from '../helpers/databases/backends.js'
import {
  NOW,
  UNKNOWN_ID,
  expectedChildren,
  folders,
  seededApp,
  sessions,
  users,
} from '../helpers/fixtures/contract-data.js'
import { listBody, request, type TestApp } from '../helpers/apps/test-app.js'
import { assertInvalid, assertProblem, assertUnauthorized, header } from '../helpers/http/http-asserts.js'

/** Authentication, account state and the order of checks (docs/api.md "Authentication" and "Checks, in this order"). */

for (const backend of allBackends()) {
  describe(`${backend.name}: GET /v1/folders authentication`, { skip: backend.skip }, () => {
    let t: TestApp
    before(async () => {
      t = await seededApp(backend)
    })
    after(async () => {
      await t?.close()
    })

    const aliceRootIds = () => expectedChildren(users.alice.id, null).map((f) => f.id)

    describe('401 UNAUTHORIZED', () => {
      it('without a Cookie header', async () => {
        assertUnauthorized(await request(t.app))
      })

      it('when the Cookie header holds no session_id', async () => {
        assertUnauthorized(await request(t.app, { cookieHeader: 'theme=dark; lang=en' }))
        assertUnauthorized(await request(t.app, { cookieHeader: `session=${sessions.aliceLive.id}` }))
        assertUnauthorized(await request(t.app, { cookieHeader: `Session_ID=${sessions.aliceLive.id}` }))
        assertUnauthorized(await request(t.app, { cookieHeader: '' }))
      })

      it('when the session_id value is not a UUID', async () => {
        const live = sessions.aliceLive.id
        for (const value of [
          '',
          'not-a-uuid',
          `{${live}}`,
          `urn:uuid:${live}`,
          live.replaceAll('-', ''),
          `${live}0`,
          live.slice(0, -1),
          `${live.slice(0, -1)}g`,
          `%20${live}`,
        ]) {
          assertUnauthorized(await request(t.app, { cookieHeader: `session_id=${value}` }))
        }
      })

      it('when the session_id value is a live session written with percent-escapes or quotes', async () => {
        // docs/api.md "Authentication": the value as sent must be a UUID; a decoding cookie parser would
        // accept these as the live session they spell.
        const live = sessions.aliceLive.id
        const escapeAll = [...live].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')
        for (const value of [
          `%${live.charCodeAt(0).toString(16)}${live.slice(1)}`,
          escapeAll,
          `${live.slice(0, 8)}%2D${live.slice(9)}`,
          `"${live}"`,
        ]) {
          assertUnauthorized(await request(t.app, { cookieHeader: `session_id=${value}` }))
        }
      })

      it('for an unknown session, and for a user id sent as a session id', async () => {
        assertUnauthorized(await request(t.app, { session: UNKNOWN_ID }))
        assertUnauthorized(await request(t.app, { session: users.alice.id }))
      })

      it('for an expired session, even of a frozen user', async () => {
        assertUnauthorized(await request(t.app, { session: sessions.aliceExpired.id }))
        assertUnauthorized(await request(t.app, { session: sessions.carolExpired.id }))
      })

      it('for a session that has been revoked', async () => {
        const id = sessions.aliceRevocable.id
        assert.equal((await request(t.app, { session: id })).statusCode, 200)
        assert.equal(await t.store.deleteSession(id), true)
        assertUnauthorized(await request(t.app, { session: id }))
      })

      it('when only another authentication method is offered', async () => {
        assertUnauthorized(
          await request(t.app, { headers: { authorization: `Bearer ${sessions.aliceLive.id}` } }),
        )
      })

      it(
        'for a session whose user is gone',
        {
          skip:
            backend.name === 'sqlite'
              ? false
              : 'unreachable through the data model: sessions cascade on user delete (SQLite test forces it)',
        },
        async () => {
          const id = sessions.ghostLive.id
          assert.equal((await request(t.app, { session: id })).statusCode, 200)
          // Remove the user behind the store's back with foreign keys off, so the session row stays.
          const db = new Database(t.url.replace(/^sqlite:/, ''))
          try {
            db.pragma('foreign_keys = OFF')
            assert.equal(db.prepare('DELETE FROM users WHERE id = ?').run(users.ghost.id).changes, 1)
            assert.equal(db.prepare('SELECT count(*) FROM sessions WHERE id = ?').pluck().get(id), 1)
          } finally {
            db.close()
          }
          assertUnauthorized(await request(t.app, { session: id }))
        },
      )

      it('uses the first session_id when the cookie appears twice', async () => {
        assertUnauthorized(
          await request(t.app, {
            cookieHeader: `session_id=${UNKNOWN_ID}; session_id=${sessions.aliceLive.id}`,
          }),
        )
        assertUnauthorized(
          await request(t.app, {
            cookieHeader: `session_id=${sessions.aliceExpired.id}; session_id=${sessions.aliceLive.id}`,
          }),
        )
        assertUnauthorized(
          await request(t.app, { cookieHeader: `session_id=garbage; session_id=${sessions.aliceLive.id}` }),
        )
      })

      it('says the session is missing, invalid or expired, and leaks nothing about the session', async () => {
        const missing = assertUnauthorized(await request(t.app))
        const expired = assertUnauthorized(await request(t.app, { session: sessions.aliceExpired.id }))
        const unknown = assertUnauthorized(await request(t.app, { session: UNKNOWN_ID }))
        assert.equal(expired.detail, unknown.detail, 'an expired and an unknown session look alike')
        for (const body of [missing, expired, unknown]) {
          assert.ok(!JSON.stringify(body).includes(sessions.aliceExpired.id))
          assert.ok(!JSON.stringify(body).includes(users.alice.username))
        }
      })
    })

    describe('accepted sessions', () => {
      it('a live session lists its own user’s root', async () => {
        const res = await request(t.app, { session: sessions.aliceLive.id })
        assert.equal(res.statusCode, 200)
        assert.equal(header(res, 'www-authenticate'), undefined)
        assert.deepEqual(
          listBody(res).folders.map((f) => f.id),
          aliceRootIds(),
        )
      })

      it('a session that never expires', async () => {
        const res = await request(t.app, { session: sessions.aliceNever.id })
        assert.equal(res.statusCode, 200)
        assert.deepEqual(
          listBody(res).folders.map((f) => f.id),
          aliceRootIds(),
        )
      })

      it('an upper-case session UUID', async () => {
        const res = await request(t.app, { session: sessions.aliceLive.id.toUpperCase() })
        assert.equal(res.statusCode, 200)
        assert.equal(listBody(res).total, aliceRootIds().length)
      })

      it('session_id among other cookies, first of two session_id cookies', async () => {
        const live = sessions.aliceLive.id
        for (const cookieHeader of [
          `theme=dark; session_id=${live}; lang=en`,
          `a=1;session_id=${live}`,
          `session_id=${live}; session_id=${UNKNOWN_ID}`,
          `session_id=${live}; session_id=garbage`,
          `other_session_id=${UNKNOWN_ID}; session_id=${live}`,
        ]) {
          const res = await request(t.app, { cookieHeader })
          assert.equal(res.statusCode, 200, cookieHeader)
          assert.equal(listBody(res).total, aliceRootIds().length, cookieHeader)
        }
      })

      it('the data is filtered for the session’s user: bob sees bob’s folders', async () => {
        const res = await request(t.app, { session: sessions.bobLive.id })
        assert.equal(res.statusCode, 200)
        assert.deepEqual(
          listBody(res).folders.map((f) => f.id),
          [folders.bobPrivate.id, folders.bobAlpha.id],
        )
        assert.deepEqual(listBody(res).folders[0]?.owner, {
          id: users.bob.id,
          username: 'bob',
          avatar_url: users.bob.avatar_url,
        })
      })
    })

    describe('403 FROZEN_ACCOUNT', () => {
      it('for a frozen user with a live session, on the root and on one of its folders', async () => {
        assertProblem(await request(t.app, { session: sessions.carolLive.id }), 403, 'FROZEN_ACCOUNT')
        assertProblem(
          await request(t.app, {
            session: sessions.carolLive.id,
            query: `folder_id=${folders.carolFolder.id}`,
          }),
          403,
          'FROZEN_ACCOUNT',
        )
      })

      it('follows the account state as it changes', async () => {
        const erin = { session: sessions.erinLive.id }
        assert.equal((await request(t.app, erin)).statusCode, 200)
        assert.equal(await t.store.setUserFrozen(users.erin.id, true, NOW), true)
        assertProblem(await request(t.app, erin), 403, 'FROZEN_ACCOUNT')
        assert.equal(await t.store.setUserFrozen(users.erin.id, false, NOW), true)
        const res = await request(t.app, erin)
        assert.equal(res.statusCode, 200)
        assert.deepEqual(
          listBody(res).folders.map((f) => f.id),
          [folders.erinFolder.id],
        )
      })
    })

    describe('order of checks: 401 > 403 > 400 > 404', () => {
      const badEverything = `page=0&limit=abc&folder_id=${UNKNOWN_ID}`

      it('401 before 400 and 404', async () => {
        assertUnauthorized(await request(t.app, { query: 'page=0' }))
        assertUnauthorized(await request(t.app, { query: badEverything }))
        assertUnauthorized(await request(t.app, { query: 'folder_id=nope' }))
        assertUnauthorized(await request(t.app, { query: `folder_id=${UNKNOWN_ID}` }))
        assertUnauthorized(await request(t.app, { session: sessions.aliceExpired.id, query: badEverything }))
        assertUnauthorized(await request(t.app, { cookieHeader: 'session_id=bad', query: 'page=1&page=2' }))
      })

      it('401 before 403: an expired session of a frozen user', async () => {
        assertUnauthorized(await request(t.app, { session: sessions.carolExpired.id, query: badEverything }))
      })

      it('403 before 400 and 404', async () => {
        const carol = sessions.carolLive.id
        assertProblem(await request(t.app, { session: carol, query: 'page=0' }), 403, 'FROZEN_ACCOUNT')
        assertProblem(await request(t.app, { session: carol, query: badEverything }), 403, 'FROZEN_ACCOUNT')
        assertProblem(
          await request(t.app, { session: carol, query: `folder_id=${UNKNOWN_ID}` }),
          403,
          'FROZEN_ACCOUNT',
        )
      })

      it('400 before 404', async () => {
        const alice = sessions.aliceLive.id
        assertInvalid(
          await request(t.app, { session: alice, query: `page=0&folder_id=${UNKNOWN_ID}` }),
          'page',
        )
        assertInvalid(
          await request(t.app, { session: alice, query: `limit=0&folder_id=${folders.bobPrivate.id}` }),
          'limit',
        )
        assertInvalid(
          await request(t.app, {
            session: alice,
            query: `page=1&page=2&folder_id=${folders.deletedRoot.id}`,
          }),
          'page',
        )
      })

      it('404 once everything else is fine', async () => {
        assertProblem(
          await request(t.app, { session: sessions.aliceLive.id, query: `folder_id=${UNKNOWN_ID}` }),
          404,
          'NOT_FOUND',
        )
      })
    })
  })
}
