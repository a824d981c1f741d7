import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { loadConfig } from '../../src/config.js'
import {
  sessionCookieHeaders,
  openSeeded,
  type Seeded,
  useSeededApp,
} from '../helpers/apps/operability-db.js'
import { ALICE_SESSION } from '../helpers/fixtures/users.js'
import { appOver } from '../helpers/apps/test-app.js'

/** CORS (off by default, CORS_ORIGINS allow-list with credentials) and security headers. */

const ALLOWED = 'https://app.example.com'
const OTHER = 'https://evil.example.net'

const corsHeaders = (res: LightMyRequestResponse) =>
  Object.keys(res.headers).filter((name) => name.startsWith('access-control-'))
const varyTokens = (res: LightMyRequestResponse) =>
  String(res.headers.vary ?? '')
    .split(',')
    .map((t) => t.trim().toLowerCase())

describe('CORS', () => {
  let seeded: Seeded
  before(async () => {
    seeded = await openSeeded()
  })
  after(() => seeded.cleanup())

  const preflight = (app: FastifyInstance, origin: string) =>
    app.inject({
      method: 'OPTIONS',
      url: '/v1/folders',
      headers: {
        origin,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'if-none-match',
      },
    })

  describe('off by default', () => {
    let app: FastifyInstance
    before(async () => {
      app = await appOver(seeded.store, { corsOrigins: loadConfig({}).corsOrigins })
    })
    after(() => app.close())

    it('sends no CORS header, whatever the Origin', async () => {
      const res = await app.inject({
        url: '/v1/folders',
        headers: { ...sessionCookieHeaders(ALICE_SESSION), origin: ALLOWED },
      })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(corsHeaders(res), [])
    })

    it('answers OPTIONS with 405 problem+json and Allow', async () => {
      const res = await preflight(app, ALLOWED)
      assert.equal(res.statusCode, 405)
      assert.equal(res.headers.allow, 'GET, HEAD')
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
      assert.deepEqual(corsHeaders(res), [])
    })
  })

  describe('with CORS_ORIGINS', () => {
    let app: FastifyInstance
    before(async () => {
      // written as an operator might: case and default port are normalised away
      const { corsOrigins } = loadConfig({
        CORS_ORIGINS: ` HTTPS://App.Example.com:443 , http://localhost:5173`,
      })
      assert.deepEqual(corsOrigins, [ALLOWED, 'http://localhost:5173'])
      app = await appOver(seeded.store, { corsOrigins, rateLimitPerMinute: 100 })
    })
    after(() => app.close())

    it('echoes an allowed origin exactly, with credentials, and varies on Origin and Cookie', async () => {
      const res = await app.inject({
        url: '/v1/folders',
        headers: { ...sessionCookieHeaders(ALICE_SESSION), origin: ALLOWED },
      })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['access-control-allow-origin'], ALLOWED)
      assert.equal(res.headers['access-control-allow-credentials'], 'true')
      const exposed = String(res.headers['access-control-expose-headers']).toLowerCase()
      for (const name of ['link', 'etag', 'x-request-id', 'retry-after', 'ratelimit-remaining']) {
        assert.ok(exposed.includes(name), `exposes ${name}`)
      }
      assert.ok(varyTokens(res).includes('origin'), String(res.headers.vary))
      assert.ok(varyTokens(res).includes('cookie'), String(res.headers.vary))
    })

    it('gives other origins, and requests without Origin, no CORS header at all', async () => {
      for (const headers of [{ origin: OTHER }, { origin: 'null' }, { origin: `${ALLOWED}.evil.net` }, {}]) {
        const res = await app.inject({
          url: '/v1/folders',
          headers: { ...sessionCookieHeaders(ALICE_SESSION), ...headers },
        })
        assert.equal(res.statusCode, 200)
        assert.deepEqual(corsHeaders(res), [], JSON.stringify(headers))
        assert.ok(varyTokens(res).includes('origin'), 'caches still keep the variants apart')
      }
    })

    it('answers a preflight from an allowed origin with 204', async () => {
      const res = await preflight(app, ALLOWED)
      assert.equal(res.statusCode, 204)
      assert.equal(res.payload, '')
      assert.equal(res.headers['access-control-allow-origin'], ALLOWED)
      assert.equal(res.headers['access-control-allow-credentials'], 'true')
      assert.equal(res.headers['access-control-allow-methods'], 'GET, HEAD')
      assert.match(String(res.headers['access-control-allow-headers']), /If-None-Match/i)
      assert.equal(res.headers['access-control-max-age'], '600')
    })

    it('refuses a preflight from another origin: 405, no CORS header', async () => {
      const res = await preflight(app, OTHER)
      assert.equal(res.statusCode, 405)
      assert.deepEqual(corsHeaders(res), [])
    })

    it('lets the allowed origin read error bodies (401, 404) too', async () => {
      for (const url of ['/v1/folders', '/nowhere']) {
        const res = await app.inject({ url, headers: { origin: ALLOWED } })
        assert.ok(res.statusCode === 401 || res.statusCode === 404)
        assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
        assert.equal(res.headers['access-control-allow-origin'], ALLOWED)
      }
    })
  })
})

describe('security headers', () => {
  const ctx = useSeededApp()

  it('sends nosniff, no-framing, no-referrer and a deny-all CSP on every API response, errors included', async () => {
    const responses = [
      await ctx.app.inject({ url: '/v1/folders', headers: sessionCookieHeaders(ALICE_SESSION) }),
      await ctx.app.inject({ url: '/v1/folders' }),
      await ctx.app.inject({ url: '/v1/folders?page=x', headers: sessionCookieHeaders(ALICE_SESSION) }),
      await ctx.app.inject({ method: 'POST', url: '/v1/folders' }),
      await ctx.app.inject({ url: '/nowhere' }),
      await ctx.app.inject({ url: '/healthz' }),
      await ctx.app.inject({ url: '/metrics' }),
      await ctx.app.inject({ url: '/v1/openapi.json' }),
    ]
    assert.deepEqual(
      responses.map((r) => r.statusCode),
      [200, 401, 400, 405, 404, 200, 200, 200],
    )
    for (const res of responses) {
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(res.headers['x-frame-options'], 'DENY')
      assert.equal(res.headers['referrer-policy'], 'no-referrer')
      assert.equal(res.headers['cross-origin-resource-policy'], 'same-origin')
      assert.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'")
      assert.match(String(res.headers['strict-transport-security']), /^max-age=\d+/)
      assert.equal(res.headers['x-powered-by'], undefined)
    }
  })
})
