import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { DEFAULTS, loadConfig } from '../../src/config.js'
import { validateImport } from '../../src/import/validate-import.js'
import type { Store } from '../../src/store/store.js'
import { allBackends, type Backend } from '../helpers/databases/backends.js'
import {
  sessionCookieHeaders,
  openSeeded,
  seedDocument,
  type Seeded,
} from '../helpers/apps/operability-db.js'
import { ALICE_SESSION, BOB_SESSION, UNKNOWN_SESSION } from '../helpers/fixtures/users.js'
import { appOver } from '../helpers/apps/test-app.js'

/** Per-session rate limiting of /v1/folders (docs/configuration.md: RATE_LIMIT_PER_MINUTE). */

function assertRateLimited(res: LightMyRequestResponse, limit: number): void {
  assert.equal(res.statusCode, 429, res.payload)
  assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  const body = res.json<Record<string, unknown>>()
  assert.deepEqual(Object.keys(body).sort(), ['code', 'detail', 'request_id', 'status', 'title', 'type'])
  assert.equal(body.code, 'RATE_LIMITED')
  assert.equal(body.status, 429)
  assert.equal(body.title, 'Too Many Requests')
  assert.equal(body.request_id, res.headers['x-request-id'])
  const retryAfter = Number(res.headers['retry-after'])
  assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`)
  assert.equal(res.headers['ratelimit-limit'], String(limit))
  assert.equal(res.headers['ratelimit-remaining'], '0')
  assert.match(String(res.headers['ratelimit-reset']), /^[1-9][0-9]*$/)
}

const list = (app: FastifyInstance, session?: string, remoteAddress = '192.0.2.10') =>
  app.inject({
    url: '/v1/folders',
    remoteAddress,
    headers: session === undefined ? {} : sessionCookieHeaders(session),
  })

describe('rate limiting', () => {
  let seeded: Seeded
  before(async () => {
    seeded = await openSeeded()
  })
  after(() => seeded.cleanup())

  async function withApp(
    config: Parameters<typeof appOver>[1],
    work: (app: FastifyInstance) => Promise<void>,
    store?: Store,
  ) {
    const app = await appOver(store ?? seeded.store, config)
    try {
      await work(app)
    } finally {
      await app.close()
    }
  }

  it('answers the 4th request of a session in a minute (limit 3) with 429 problem+json and the headers', async () => {
    await withApp({ rateLimitPerMinute: 3 }, async (app) => {
      for (const remaining of ['2', '1', '0']) {
        const res = await list(app, ALICE_SESSION)
        assert.equal(res.statusCode, 200)
        assert.equal(res.headers['ratelimit-limit'], '3')
        assert.equal(res.headers['ratelimit-remaining'], remaining)
      }
      assertRateLimited(await list(app, ALICE_SESSION), 3)
      // the same session from another address is still the same budget
      assertRateLimited(await list(app, ALICE_SESSION, '198.51.100.7'), 3)
    })
  })

  it('gives every session its own budget', async () => {
    await withApp({ rateLimitPerMinute: 3 }, async (app) => {
      for (let i = 0; i < 3; i++) assert.equal((await list(app, ALICE_SESSION)).statusCode, 200)
      assertRateLimited(await list(app, ALICE_SESSION), 3)
      const bob = await list(app, BOB_SESSION)
      assert.equal(bob.statusCode, 200)
      assert.equal(bob.headers['ratelimit-remaining'], '2')
    })
  })

  it('limits requests without a well-formed session by client address, before authentication', async () => {
    let lookups = 0
    const counting: Store = Object.assign(Object.create(seeded.store) as Store, {
      findSessionUser: (id: string, now: number) => {
        lookups++
        return seeded.store.findSessionUser(id, now)
      },
    })
    await withApp(
      { rateLimitPerMinute: 3 },
      async (app) => {
        assert.equal((await list(app, undefined, '203.0.113.1')).statusCode, 401)
        assert.equal(
          (
            await app.inject({
              url: '/v1/folders',
              remoteAddress: '203.0.113.1',
              headers: { cookie: 'session_id=nope' },
            })
          ).statusCode,
          401,
        )
        assert.equal((await list(app, undefined, '203.0.113.1')).statusCode, 401)
        assertRateLimited(await list(app, undefined, '203.0.113.1'), 3)
        assert.equal(
          (await list(app, undefined, '203.0.113.2')).statusCode,
          401,
          'another address, another budget',
        )
        // an unknown (well-formed) session has a budget of its own; once spent, the database is spared
        for (let i = 0; i < 3; i++) assert.equal((await list(app, UNKNOWN_SESSION)).statusCode, 401)
        const before = lookups
        assertRateLimited(await list(app, UNKNOWN_SESSION), 3)
        assert.equal(lookups, before, 'a limited request never reaches the store')
      },
      counting,
    )
  })

  it('limits every public route per client address, whatever cookie comes with it', async () => {
    const urls = [
      '/healthz',
      '/readyz',
      '/metrics',
      '/v1/openapi.json',
      '/docs',
      '/docs/static/swagger-ui-bundle.js',
    ]
    await withApp({ rateLimitPerMinute: 2 }, async (app) => {
      for (const [n, url] of urls.entries()) {
        const address = `198.51.100.${n + 1}`
        const get = () =>
          app.inject({ url, remoteAddress: address, headers: sessionCookieHeaders(randomUUID()) })
        for (const remaining of ['1', '0']) {
          const res = await get()
          assert.equal(res.statusCode, 200, url)
          assert.equal(res.headers['ratelimit-remaining'], remaining, url)
        }
        const limited = await get()
        assertRateLimited(limited, 2)
        assert.match(limited.json<{ detail: string }>().detail, /for this address/)
      }
      // The API's budget is the session's own: spending an address's public budget leaves it whole.
      const api = await list(app, ALICE_SESSION, '198.51.100.1')
      assert.equal(api.statusCode, 200)
      assert.equal(api.headers['ratelimit-remaining'], '1')
    })
  })

  it('is off with 0: no limit, no RateLimit headers', async () => {
    await withApp({ rateLimitPerMinute: 0 }, async (app) => {
      for (let i = 0; i < 25; i++) {
        const res = await list(app, ALICE_SESSION)
        assert.equal(res.statusCode, 200)
        assert.equal(res.headers['ratelimit-limit'], undefined)
      }
    })
  })

  it('defaults to 6000 a minute (docs/configuration.md)', async () => {
    assert.equal(DEFAULTS.rateLimitPerMinute, 6000)
    await withApp({ ...DEFAULTS, logLevel: 'silent' }, async (app) => {
      const res = await list(app, ALICE_SESSION)
      assert.equal(res.headers['ratelimit-limit'], '6000')
    })
  })

  it('takes the client address from X-Forwarded-For only from trusted proxies (TRUST_PROXY)', async () => {
    const forwarded = (app: FastifyInstance, client: string) =>
      app.inject({ url: '/v1/folders', remoteAddress: '10.0.0.5', headers: { 'x-forwarded-for': client } })
    await withApp(
      { rateLimitPerMinute: 1, trustProxy: loadConfig({ TRUST_PROXY: '10.0.0.0/8' }).trustProxy },
      async (app) => {
        assert.equal((await forwarded(app, '198.51.100.1')).statusCode, 401)
        assert.equal(
          (await forwarded(app, '198.51.100.2')).statusCode,
          401,
          'each client behind the proxy has a budget',
        )
        assertRateLimited(await forwarded(app, '198.51.100.1'), 1)
      },
    )
    await withApp({ rateLimitPerMinute: 1 }, async (app) => {
      assert.equal((await forwarded(app, '198.51.100.1')).statusCode, 401)
      assertRateLimited(await forwarded(app, '198.51.100.2'), 1)
    })
  })
})

/**
 * Unknown and expired sessions are charged to the client address (OWASP API4): a client
 * sending a fresh random UUID each time must not escape the limit while each request costs
 * a session lookup. On both backends, since the lookup is what is spared.
 */
for (const backend of allBackends()) {
  describe(`${backend.name}: failed-authentication budget per client address`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<Backend['open']>>
    let lookups = 0
    let counting: Store
    before(async () => {
      opened = await backend.open()
      await opened.store.importData(validateImport(seedDocument(), Date.now()))
      counting = Object.assign(Object.create(opened.store) as Store, {
        findSessionUser: (id: string, now: number) => {
          lookups++
          return opened.store.findSessionUser(id, now)
        },
      })
    })
    after(() => opened?.cleanup())

    const fresh = (app: FastifyInstance, remoteAddress = '192.0.2.20') =>
      app.inject({ url: '/v1/folders', remoteAddress, headers: sessionCookieHeaders(randomUUID()) })

    it('RATE_LIMIT_PER_MINUTE=10: 40 fresh random sessions from one address get 429 after 10, without lookups', async () => {
      const app = await appOver(counting, {
        ...loadConfig({ RATE_LIMIT_PER_MINUTE: '10' }),
        logLevel: 'silent',
      })
      try {
        const statuses: number[] = []
        const start = lookups
        for (let i = 0; i < 40; i++) {
          const res = await fresh(app)
          statuses.push(res.statusCode)
          if (res.statusCode === 429) {
            assert.equal(res.json<{ code: string }>().code, 'RATE_LIMITED')
            const retryAfter = Number(res.headers['retry-after'])
            assert.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`)
          }
        }
        assert.deepEqual(statuses, [...Array<number>(10).fill(401), ...Array<number>(30).fill(429)])
        assert.equal(lookups - start, 10, 'refused requests never reach the store')
        // Another address keeps its budget; a live session elsewhere is untouched.
        assert.equal((await fresh(app, '192.0.2.21')).statusCode, 401)
        assert.equal((await list(app, ALICE_SESSION, '192.0.2.22')).statusCode, 200)
        // Requests without a well-formed cookie are the ordinary per-address limit's business.
        assert.equal((await list(app, undefined, '192.0.2.20')).statusCode, 401)
      } finally {
        await app.close()
      }
    })

    it('AUTH_FAILURES_PER_MINUTE is its own, stricter budget; 0 switches it off', async () => {
      const config = { ...loadConfig({ AUTH_FAILURES_PER_MINUTE: '3' }), logLevel: 'silent' }
      const app = await appOver(counting, config)
      try {
        for (let i = 0; i < 3; i++)
          assert.equal((await list(app, UNKNOWN_SESSION, '192.0.2.30')).statusCode, 401)
        const refused = await list(app, ALICE_SESSION, '192.0.2.30')
        assert.equal(refused.statusCode, 429, 'the address is refused before any lookup, live session or not')
        assert.match(refused.json<{ detail: string }>().detail, /unknown or expired session/)
        assert.equal((await list(app, ALICE_SESSION, '192.0.2.31')).statusCode, 200)
      } finally {
        await app.close()
      }
      const off = await appOver(counting, { ...config, authFailuresPerMinute: 0 })
      try {
        for (let i = 0; i < 10; i++) assert.equal((await fresh(off, '192.0.2.32')).statusCode, 401)
      } finally {
        await off.close()
      }
    })
  })
}
