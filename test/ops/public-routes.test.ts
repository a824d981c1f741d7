import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { SECURITY_HEADERS } from '../../src/http/plugins/security-headers.js'
import { logRecords, startService, ensureBuilt } from '../helpers/processes/cli.js'
import { useSeededApp } from '../helpers/apps/operability-db.js'

/** The public routes are cheap to serve (OWASP API4): static assets cached and compressed once. */

const BUNDLE = '/docs/static/swagger-ui-bundle.js'

describe('Swagger UI assets', () => {
  const ctx = useSeededApp()

  it('are served compressed, with long-lived caching headers and an ETag that gives 304', async () => {
    const plain = await ctx.app.inject({ url: BUNDLE })
    assert.equal(plain.statusCode, 200)
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.ok(plain.rawPayload.length > 1_000_000, `${plain.rawPayload.length} bytes`)
    const cacheControl = String(plain.headers['cache-control'])
    assert.match(cacheControl, /^public, max-age=(\d+)$/)
    assert.ok(Number(/max-age=(\d+)/.exec(cacheControl)?.[1]) >= 86_400, cacheControl)
    assert.match(String(plain.headers.etag), /^"[A-Za-z0-9_-]+"$/)
    assert.equal(plain.headers.vary, 'Accept-Encoding')
    assert.match(String(plain.headers['content-type']), /^text\/javascript/)
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
      if (name !== 'content-security-policy') assert.equal(plain.headers[name], value, name)
    }

    const br = await ctx.app.inject({ url: BUNDLE, headers: { 'accept-encoding': 'gzip, deflate, br' } })
    assert.equal(br.headers['content-encoding'], 'br')
    assert.ok(br.rawPayload.length < plain.rawPayload.length / 3, `${br.rawPayload.length} bytes`)
    assert.ok(brotliDecompressSync(br.rawPayload).equals(plain.rawPayload))
    const gz = await ctx.app.inject({ url: BUNDLE, headers: { 'accept-encoding': 'gzip, br;q=0' } })
    assert.equal(gz.headers['content-encoding'], 'gzip')
    assert.ok(gunzipSync(gz.rawPayload).equals(plain.rawPayload))
    assert.equal(gz.headers.etag, plain.headers.etag)

    const notModified = await ctx.app.inject({
      url: BUNDLE,
      headers: { 'if-none-match': String(plain.headers.etag) },
    })
    assert.equal(notModified.statusCode, 304)
    assert.equal(notModified.rawPayload.length, 0)
    assert.equal(notModified.headers['cache-control'], cacheControl)
  })

  it('still answers the page, the generated files and unknown assets as before', async () => {
    assert.equal((await ctx.app.inject({ url: '/docs' })).statusCode, 200)
    assert.match(
      (await ctx.app.inject({ url: '/docs/static/swagger-initializer.js' })).payload,
      /SwaggerUIBundle/,
    )
    const missing = await ctx.app.inject({ url: '/docs/static/nope.js' })
    assert.equal(missing.statusCode, 404)
    assert.match(String(missing.headers['content-type']), /^application\/problem\+json/)
  })
})

describe('METRICS_PORT: /metrics on its own listener', () => {
  let dir: string
  before(() => {
    ensureBuilt()
    dir = mkdtempSync(join(tmpdir(), 'fs-metrics-port-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('serves /metrics there only, and not on the main listener', async () => {
    const service = await startService(`sqlite:${join(dir, 'db.sqlite')}`, { METRICS_PORT: '0' })
    try {
      const line = logRecords(service).find(
        (r) => typeof r.msg === 'string' && r.msg.startsWith('Metrics served at'),
      )
      const url = /http:\/\/\S+\/metrics/.exec(String(line?.msg))?.[0]
      assert.ok(url !== undefined, service.lines().join('\n'))
      assert.equal((await fetch(`${service.base}/healthz`)).status, 200)
      const scraped = await fetch(url)
      assert.equal(scraped.status, 200)
      assert.match(
        await scraped.text(),
        /^http_requests_total\{method="GET",route="\/healthz",status="200"\} 1$/m,
      )
      const main = await fetch(`${service.base}/metrics`)
      assert.equal(main.status, 404)
      assert.match(String(main.headers.get('content-type')), /^application\/problem\+json/)
      const other = await fetch(url.replace('/metrics', '/healthz'))
      assert.equal(other.status, 404)
    } finally {
      assert.deepEqual(await service.stop(), { code: 0, signal: null })
    }
  })
})
