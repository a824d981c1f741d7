import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { StoreUnavailableError, type Store } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { appOver, listBody, request, type TestApp } from '../helpers/apps/test-app.js'
import { folders, seededApp, sessions } from '../helpers/fixtures/contract-data.js'
import { assertProblem, assertUnauthorized, header } from '../helpers/http/http-asserts.js'

/** Problem details on every error, 405, request ids, 503 and 500 (docs/api.md "Errors"). */

/** What the switchable store below does wrong right now; null: nothing. */
interface Fault {
  method: keyof Store
  fail: () => Error
  /** throw synchronously instead of rejecting */
  sync?: boolean
}

/**
 * A store that forwards to `store` except for the method named by the current fault. While
 * a fault is active the session lookup reports a listing generation never seen before (as
 * after a write), so the listing must be read and no cached answer hides the fault: a
 * cached answer under an unchanged generation would be right, not a fault hidden.
 */
let faultGeneration = -1
function faulty(store: Store, current: () => Fault | null): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const fault = current()
      if (fault !== null && prop === 'findSessionUser' && fault.method !== 'findSessionUser') {
        return async (...args: Parameters<Store['findSessionUser']>) => {
          const user = await target.findSessionUser(...args)
          return user === null ? null : { ...user, generation: faultGeneration-- }
        }
      }
      if (fault !== null && prop === fault.method) {
        return () => {
          if (fault.sync === true) throw fault.fail()
          return Promise.reject(fault.fail())
        }
      }
      const value: unknown = Reflect.get(target, prop, receiver)
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    },
  })
}

const SECRET = 'secret detail'
const OUTAGE = () =>
  new StoreUnavailableError('connect ECONNREFUSED 10.9.8.7:5432 secret-host', {
    cause: new Error('secret cause'),
  })
const BUG = () => Object.assign(new Error(SECRET), { code: 'SECRET_CODE' })

function assertNoInternals(payload: string): void {
  for (const word of ['secret', 'ECONNREFUSED', '10.9.8.7', 'stack', 'at ', 'Error:', 'SECRET_CODE', '.ts']) {
    assert.ok(!payload.includes(word), `payload leaks ${JSON.stringify(word)}: ${payload}`)
  }
}

for (const backend of allBackends()) {
  describe(`${backend.name}: GET /v1/folders errors`, { skip: backend.skip }, () => {
    let t: TestApp
    /** the same database behind a store that fails as `fault` says */
    let broken: FastifyInstance
    let fault: Fault | null = null
    before(async () => {
      t = await seededApp(backend)
      broken = await appOver(faulty(t.store, () => fault))
    })
    after(async () => {
      await broken?.close()
      await t?.close()
    })

    const alice = sessions.aliceLive.id
    function appWith(f: Fault): FastifyInstance {
      fault = f
      return broken
    }

    describe('problem details', () => {
      it('every error of the listing is problem+json with exactly the contract’s members', async () => {
        assertUnauthorized(await request(t.app))
        assertProblem(await request(t.app, { session: sessions.carolLive.id }), 403, 'FROZEN_ACCOUNT')
        assertProblem(await request(t.app, { session: alice, query: 'limit=0' }), 400, 'INVALID_INPUT')
        const notFound = assertProblem(
          await request(t.app, { session: alice, query: `folder_id=${folders.deletedRoot.id}` }),
          404,
          'NOT_FOUND',
        )
        assert.ok(!notFound.detail.includes(folders.deletedRoot.id))
      })

      it('an unknown route is 404 NOT_FOUND, with or without a session', async () => {
        // `/` is the folder browser (on by default); test/http/folder-browser-route.test.ts has it off.
        for (const url of ['/index.html', '/v1', '/v1/folder', '/v2/folders', '/v1/folders/x', '/v1/files']) {
          assertProblem(await request(t.app, { url }), 404, 'NOT_FOUND')
          assertProblem(await request(t.app, { url, session: alice }), 404, 'NOT_FOUND')
        }
      })

      it('a malformed URL is a problem too, never an HTML or plain error', async () => {
        const res = await t.app.inject({
          method: 'GET',
          url: '/v1/folders?folder_id=%E0%A4%A',
          headers: { cookie: `session_id=${alice}` },
        })
        assert.ok(res.statusCode >= 400 && res.statusCode < 500, `status ${res.statusCode}`)
        assert.equal(header(res, 'content-type')?.split(';')[0], 'application/problem+json')
      })
    })

    describe('405 METHOD_NOT_ALLOWED', () => {
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH'] as const) {
        it(`${method} /v1/folders is 405 with Allow: GET, HEAD`, async () => {
          for (const session of [alice, undefined]) {
            const res = await request(t.app, { method, session })
            assertProblem(res, 405, 'METHOD_NOT_ALLOWED')
            assert.equal(header(res, 'allow'), 'GET, HEAD')
          }
        })
      }

      for (const [type, payload] of [
        ['application/json', '{"name":"x"}'],
        ['application/json', '{not json'],
        ['text/plain', 'hello'],
        ['application/octet-stream', 'xx'],
        ['application/xml', '<a/>'],
      ] as const) {
        it(`POST with a ${type} body ${JSON.stringify(payload)} is 405 too`, async () => {
          const res = await t.app.inject({
            method: 'POST',
            url: '/v1/folders',
            headers: { cookie: `session_id=${alice}`, 'content-type': type },
            payload,
          })
          assertProblem(res, 405, 'METHOD_NOT_ALLOWED')
          assert.equal(header(res, 'allow'), 'GET, HEAD')
        })
      }
    })

    describe('X-Request-Id', () => {
      it('keeps a well-formed incoming id and reports it in the problem body', async () => {
        // a UUID, and nginx's $request_id (32 hex digits)
        for (const id of ['0f8fad5b-d9cb-469f-a165-70867728950e', '4f6b2a9c0d1e4f5a6b7c8d9e0f1a2b3c']) {
          const res = await request(t.app, { headers: { 'x-request-id': id } })
          assert.equal(header(res, 'x-request-id'), id)
          assert.equal(assertUnauthorized(res).request_id, id)
        }
        const okRes = await request(t.app, { session: alice, headers: { 'x-request-id': 'abc-123' } })
        assert.equal(okRes.statusCode, 200)
        assert.equal(header(okRes, 'x-request-id'), 'abc-123')
      })

      it('replaces a malformed incoming id', async () => {
        for (const bad of ['has spaces', 'x'.repeat(129), 'quote"inside', '<script>', '']) {
          const res = await request(t.app, { headers: { 'x-request-id': bad } })
          const body = assertUnauthorized(res)
          assert.notEqual(body.request_id, bad)
          assert.ok(body.request_id.length > 0 && body.request_id.length <= 128)
          assert.equal(header(res, 'x-request-id'), body.request_id)
        }
      })

      it('makes a fresh id for each request without one', async () => {
        const a = assertUnauthorized(await request(t.app))
        const b = assertUnauthorized(await request(t.app))
        assert.notEqual(a.request_id, b.request_id)
        const okRes = await request(t.app, { session: alice })
        assert.ok((header(okRes, 'x-request-id') ?? '').length > 0)
        assert.equal(listBody(okRes).page, 1)
      })
    })

    describe('database failures', () => {
      it('(the wrapped store answers normally without a fault)', async () => {
        fault = null
        const res = await request(broken, { session: alice })
        assert.equal(res.statusCode, 200)
        assert.ok(listBody(res).total > 0)
      })

      it('503 UNAVAILABLE with Retry-After when the session lookup cannot reach the database', async () => {
        const app = appWith({ method: 'findSessionUser', fail: OUTAGE })
        const res = await request(app, { session: alice })
        assertProblem(res, 503, 'UNAVAILABLE')
        const retry = header(res, 'retry-after') ?? ''
        assert.match(retry, /^[1-9][0-9]*$/)
        assertNoInternals(res.payload)
      })

      it('503 UNAVAILABLE with Retry-After when the listing cannot reach the database', async () => {
        const app = appWith({ method: 'listFolders', fail: OUTAGE })
        for (const query of [undefined, `folder_id=${folders.big.id}`]) {
          const res = await request(app, { session: alice, query })
          assertProblem(res, 503, 'UNAVAILABLE')
          assert.match(header(res, 'retry-after') ?? '', /^[1-9][0-9]*$/)
          assertNoInternals(res.payload)
        }
        // authentication still runs first: no session is 401, not 503
        assertUnauthorized(await request(app))
      })

      it('500 INTERNAL without internals for an unexpected error, rejected or thrown', async () => {
        for (const [method, sync] of [
          ['findSessionUser', false],
          ['findSessionUser', true],
          ['listFolders', false],
          ['listFolders', true],
        ] as const) {
          const app = appWith({ method, fail: BUG, sync })
          const res = await request(app, { session: alice })
          const body = assertProblem(res, 500, 'INTERNAL')
          assertNoInternals(res.payload)
          assert.equal(header(res, 'retry-after'), undefined)
          assert.ok(!body.detail.includes(SECRET))
        }
      })

      it('an error shaped like an HTTP client error from the store is still 500', async () => {
        const app = appWith({
          method: 'listFolders',
          fail: () => Object.assign(new Error(SECRET), { statusCode: 404 }),
        })
        const res = await request(app, { session: alice })
        assertProblem(res, 500, 'INTERNAL')
        assertNoInternals(res.payload)
      })
    })
  })
}
