import assert from 'node:assert/strict'
import { ChangesQuery } from '../../src/schemas/changes-query.js'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import fc from 'fast-check'
import { DEFAULTS } from '../../src/config.js'
import type { Store } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { appOver } from '../helpers/apps/test-app.js'
import {
  HOSTILE_PATHS,
  HOSTILE_QUERIES,
  HOSTILE_VALUES,
  Findings,
  assertAcceptable,
  describeResponse,
  documentedParameters,
  encodeAny,
  hostileCookies,
  hostileRequestArb,
  openFuzzTarget,
  within,
  type DocumentedParameters,
  type FuzzTarget,
} from '../helpers/fixtures/hostile.js'
import { modelAnswer } from '../helpers/fixtures/model.js'

/**
 * Hostile input over app.inject: every documented parameter (read from the OpenAPI
 * document), the cookie, other headers, methods and paths, each given every value of the
 * dictionary, with and without a valid session (so the values also reach validation and
 * the database). Every answer must be 2xx/304 or a 4xx problem+json: never a 5xx, an
 * internal detail, a reflected header, or a hang. Where the contract decides the outcome
 * (query values, cookie values), the exact status is checked too.
 *
 * Query parameters reach the database, so they are fuzzed on every backend; cookies,
 * headers, methods, paths and the random combinations act on the HTTP layer and run once,
 * on SQLite. FUZZ_RUNS raises the random combinations (the deep run uses 5,000).
 */

const ANSWER_WITHIN_MS = 10_000
/** fast-check runs of the random combination test; FUZZ_RUNS raises it for a longer session. */
const RANDOM_RUNS = Number(process.env.FUZZ_RUNS ?? 150)

for (const backend of allBackends()) {
  describe(`${backend.name}: hostile input over HTTP`, { skip: backend.skip }, () => {
    let t: FuzzTarget
    let params: DocumentedParameters
    before(async () => {
      t = await openFuzzTarget(backend)
      params = await documentedParameters(t.app)
    })
    after(async () => {
      await t?.close()
    })

    const send = async (options: InjectOptions, what: string): Promise<LightMyRequestResponse> =>
      within(t.app.inject(options), ANSWER_WITHIN_MS, what)

    const cookieOf = (session: string | undefined) =>
      session === undefined ? {} : { cookie: `session_id=${session}` }

    it('reads the parameters to attack from the OpenAPI document', () => {
      // The document is generated from the route's schema; if it lost a parameter the
      // fuzzing below would silently skip it, so its content is pinned here.
      assert.deepEqual([...params.query].sort(), ['cursor', 'folder_id', 'limit', 'order', 'page'])
      assert.ok(params.header.includes('if-none-match'), JSON.stringify(params))
      assert.ok(params.header.includes('x-request-id'), JSON.stringify(params))
      assert.deepEqual(params.cookie, ['session_id'])
    })

    it('answers every hostile value of every query parameter as the contract says', async () => {
      let checked = 0
      for (const name of params.query) {
        for (const value of HOSTILE_VALUES) {
          for (const session of [t.aliceSession, undefined]) {
            const query = `${encodeURIComponent(name)}=${encodeAny(value)}`
            const what = `GET ?${query.slice(0, 200)} session=${session ?? 'none'}`
            const res = await send(
              { method: 'GET', url: `/v1/folders?${query}`, headers: cookieOf(session) },
              what,
            )
            assertAcceptable(res, what)
            const cookie = session === undefined ? undefined : `session_id=${session}`
            const expected = modelAnswer(t.model, { cookie, query }, Date.now())
            assert.equal(res.statusCode, expected.status, `${what}\n${res.payload.slice(0, 300)}`)
            checked++
          }
        }
      }
      assert.equal(checked, params.query.length * HOSTILE_VALUES.length * 2)
    })

    it('answers every hostile value of every changes parameter with 200, 400 or 404, never a 5xx', async () => {
      let checked = 0
      for (const name of Object.keys(ChangesQuery.properties)) {
        for (const value of HOSTILE_VALUES) {
          const query = `${encodeURIComponent(name)}=${encodeAny(value)}`
          const what = `GET /v1/folders/changes?${query.slice(0, 200)}`
          const res = await send(
            { method: 'GET', url: `/v1/folders/changes?${query}`, headers: cookieOf(t.aliceSession) },
            what,
          )
          assertAcceptable(res, what)
          assert.ok([200, 400, 404].includes(res.statusCode), `${what}\n${res.payload.slice(0, 300)}`)
          checked++
        }
      }
      assert.equal(checked, 4 * HOSTILE_VALUES.length)
    })

    it('answers hostile query structures (brackets, repeats, bad escapes, sizes) without a 5xx', async () => {
      for (const query of HOSTILE_QUERIES) {
        for (const session of [t.aliceSession, undefined]) {
          const what = `GET ?${query.slice(0, 200)} session=${session ?? 'none'}`
          const res = await send(
            { method: 'GET', url: `/v1/folders?${query}`, headers: cookieOf(session) },
            what,
          )
          assertAcceptable(res, what)
          if (session === undefined) assert.equal(res.statusCode, 401, what)
          else {
            const expected = modelAnswer(t.model, { cookie: `session_id=${session}`, query }, Date.now())
            assert.equal(res.statusCode, expected.status, `${what}\n${res.payload.slice(0, 300)}`)
          }
        }
      }
    })

    it('limits floods of unknown, expired and hostile sessions per address, before the database', async () => {
      let lookups = 0
      const counting = Object.assign(Object.create(t.store) as Store, {
        findSessionUser: (id: string, now: number) => {
          lookups++
          return t.store.findSessionUser(id, now)
        },
      })
      // The service's own limits (RATE_LIMIT_PER_MINUTE 6000, AUTH_FAILURES_PER_MINUTE 60),
      // which the test app turns off by default.
      const app = await appOver(counting, {
        rateLimitPerMinute: DEFAULTS.rateLimitPerMinute,
        authFailuresPerMinute: DEFAULTS.authFailuresPerMinute,
      })
      try {
        const findings = new Findings()
        const sessions = fc.sample(
          fc.oneof(
            fc.uuid(),
            fc.constant(t.expiredSession),
            fc.constant(t.unknown),
            fc.uuid().map((u) => u.toUpperCase()),
          ),
          { numRuns: 300, seed: 13 },
        )
        const statuses = new Map<number, number>()
        for (const [i, session] of sessions.entries()) {
          const res = await within(
            app.inject({
              url: '/v1/folders',
              remoteAddress: '203.0.113.9',
              headers: { cookie: `session_id=${session}` },
            }),
            ANSWER_WITHIN_MS,
            `flood ${i}`,
          )
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
          findings.check(`flood ${i}: ${session}`, () => {
            assertAcceptable(res, `GET with session ${session}`)
            assert.ok([401, 429].includes(res.statusCode), describeResponse(res))
          })
        }
        findings.assertNone('session floods')
        const budget = DEFAULTS.authFailuresPerMinute
        assert.equal(lookups, budget, `lookups; statuses ${JSON.stringify([...statuses])}`)
        assert.equal(statuses.get(429), sessions.length - budget)
        // Another address, and a live session from it, are untouched by the flood.
        const live = await app.inject({
          url: '/v1/folders',
          remoteAddress: '203.0.113.10',
          headers: { cookie: `session_id=${t.aliceSession}` },
        })
        assert.equal(live.statusCode, 200)
      } finally {
        await app.close()
      }
    })

    // Everything below acts on the HTTP layer alone (the database sees at most a session
    // lookup): once, on SQLite, keeps the suite quick. The query values above reach every backend.
    if (backend.name !== 'sqlite') return

    it('answers hostile cookies with 401 (and only the exact first session_id authenticates)', async () => {
      for (const cookie of hostileCookies(t.aliceSession)) {
        const what = `cookie ${JSON.stringify(cookie.slice(0, 200))}`
        const res = await send({ method: 'GET', url: '/v1/folders', headers: { cookie } }, what)
        assertAcceptable(res, what)
        assert.equal(res.statusCode, 401, what)
      }
      // The same value, hostile only in what surrounds it, still authenticates.
      for (const cookie of [
        `a=${'x'.repeat(100 * 1024)}; session_id=${t.aliceSession}`,
        `session_id=${t.aliceSession}; session_id=garbage`,
        `session_id=${t.aliceSession.toUpperCase()}`,
        `${Array.from({ length: 2000 }, (_, i) => `c${i}=${i}`).join('; ')}; session_id=${t.aliceSession}`,
      ]) {
        const what = `cookie ${JSON.stringify(cookie.slice(0, 120))}...`
        const res = await send({ method: 'GET', url: '/v1/folders', headers: { cookie } }, what)
        assert.equal(res.statusCode, 200, `${what}\n${res.payload.slice(0, 300)}`)
      }
      // Hostile values of the documented cookie, spliced in raw.
      for (const name of params.cookie) {
        for (const value of HOSTILE_VALUES) {
          const what = `cookie ${name}=${JSON.stringify(value.slice(0, 100))}`
          const res = await send(
            { method: 'GET', url: '/v1/folders', headers: { cookie: `${name}=${value}` } },
            what,
          )
          assertAcceptable(res, what)
          assert.equal(res.statusCode, 401, what)
        }
      }
    })

    it('answers hostile values of the documented headers and common ones without reflecting them', async () => {
      const headerNames = [
        ...params.header,
        'accept',
        'accept-encoding',
        'origin',
        'x-forwarded-for',
        'host',
        'range',
      ]
      for (const name of headerNames) {
        for (const value of HOSTILE_VALUES) {
          const what = `header ${name}: ${JSON.stringify(value.slice(0, 100))}`
          const res = await send(
            { method: 'GET', url: '/v1/folders', headers: { ...cookieOf(t.aliceSession), [name]: value } },
            what,
          )
          assertAcceptable(res, what)
          // A hostile value in a header decides nothing here: the session and query are valid.
          const expected = name === 'if-none-match' && value.trim() === '*' ? 304 : 200
          assert.equal(res.statusCode, expected, what)
          // X-Request-Id is echoed only when well formed, so it can forge no header or log line.
          const echoed = String(res.headers['x-request-id'])
          assert.match(echoed, /^[A-Za-z0-9._:@/+=-]{1,128}$/, what)
          if (name === 'x-request-id' && echoed === value) {
            assert.match(value, /^[A-Za-z0-9._:@/+=-]{1,128}$/, what)
          }
        }
      }
    })

    it('answers other methods, bodies and neighbouring paths with a problem, never a 5xx', async () => {
      for (const method of ['HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const) {
        for (const payload of [undefined, '{"page":1}', '{"page":', 'x'.repeat(100 * 1024)]) {
          const what = `${method} /v1/folders with ${payload === undefined ? 'no body' : `${payload.length}-byte body`}`
          const res = await send(
            {
              method,
              url: '/v1/folders',
              headers: {
                ...cookieOf(t.aliceSession),
                ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
              },
              ...(payload === undefined ? {} : { payload }),
            },
            what,
          )
          if (method === 'HEAD') assert.equal(res.statusCode, 200, what)
          else {
            assertAcceptable(res, what)
            assert.equal(res.statusCode, 405, what)
          }
        }
      }
      for (const payload of ['{"page":"1"}', '{"page":', '\u0000']) {
        const what = `GET with a body ${JSON.stringify(payload)}`
        const res = await send(
          {
            method: 'GET',
            url: '/v1/folders',
            headers: { ...cookieOf(t.aliceSession), 'content-type': 'application/json' },
            payload,
          },
          what,
        )
        assertAcceptable(res, what)
      }
    })

    it('answers neighbouring paths (case, slashes, dots, escapes, sizes) with a problem, never a 5xx', async () => {
      // Collected, so one report lists every path that breaks the rule.
      const findings = new Findings()
      for (const path of HOSTILE_PATHS) {
        for (const session of [t.aliceSession, undefined]) {
          const what = `GET ${path.slice(0, 200)} session=${session ?? 'none'}`
          const res = await send({ method: 'GET', url: path, headers: cookieOf(session) }, what)
          findings.check(what, () => assertAcceptable(res, what))
        }
      }
      findings.assertNone('paths answered outside the problem+json contract')
    })

    it('answers random query strings and cookies built from the documented names and hostile values', async () => {
      const arb = hostileRequestArb(params.query, t.aliceSession)
      let answered = 0
      await fc.assert(
        fc.asyncProperty(arb, async ({ query: q, cookie: c }) => {
          const what = `GET ?${q} cookie=${JSON.stringify(c)}`
          const res = await send(
            { method: 'GET', url: `/v1/folders?${q}`, headers: c === undefined ? {} : { cookie: c } },
            what,
          )
          assertAcceptable(res, what)
          answered++
        }),
        { numRuns: RANDOM_RUNS, includeErrorInReport: true },
      )
      assert.equal(answered, RANDOM_RUNS)
    })
  })
}
