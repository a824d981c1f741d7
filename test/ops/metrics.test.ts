import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { StoreUnavailableError, type Store } from '../../src/store/store.js'
import {
  PROJECTS,
  sessionCookieHeaders,
  openSeeded,
  type Seeded,
  useSeededApp,
} from '../helpers/apps/operability-db.js'
import { ALICE_SESSION } from '../helpers/fixtures/users.js'
import { appOver } from '../helpers/apps/test-app.js'
import { failingStore } from '../helpers/apps/failing-store.js'

/** /metrics (Prometheus text), /healthz and /readyz. */

/** The value of the sample `name{labels}` in a Prometheus text exposition, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue
    const [, labelText = '', value = ''] = /^[^{]+\{(.*)\} (\S+)$/.exec(line) ?? []
    const found = new Map([...labelText.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]))
    if (Object.entries(labels).every(([k, v]) => found.get(k) === v)) return Number(value)
  }
  return undefined
}

describe('/metrics', () => {
  const ctx = useSeededApp()

  const scrape = async (target = ctx.app) => {
    const res = await target.inject('/metrics')
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8')
    return res.payload
  }

  it('counts requests by method, route pattern and status, never by raw URL', async () => {
    const before = await scrape()
    const routeLabels = { method: 'GET', route: '/v1/folders', status: '200' }
    const start = sample(before, 'http_requests_total', routeLabels) ?? 0
    for (const query of ['', `?folder_id=${PROJECTS}`, '?page=2&limit=3']) {
      const res = await ctx.app.inject({
        url: `/v1/folders${query}`,
        headers: sessionCookieHeaders(ALICE_SESSION),
      })
      assert.equal(res.statusCode, 200)
    }
    await ctx.app.inject({ url: '/v1/folders' })
    await ctx.app.inject({ url: '/no/such/path/0a11ce00' })
    const text = await scrape()
    assert.equal(sample(text, 'http_requests_total', routeLabels), start + 3)
    assert.equal(
      sample(text, 'http_requests_total', { method: 'GET', route: '/v1/folders', status: '401' }),
      1,
    )
    assert.equal(sample(text, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1)
    assert.doesNotMatch(text, /folder_id=|\/no\/such|0a11ce00/, 'no raw URL in a label')
  })

  it('has a latency histogram with the same labels', async () => {
    await ctx.app.inject({ url: '/v1/folders', headers: sessionCookieHeaders(ALICE_SESSION) })
    const text = await scrape()
    const labels = { method: 'GET', route: '/v1/folders', status: '200' }
    const count = sample(text, 'http_request_duration_seconds_count', labels)
    assert.ok(count !== undefined && count >= 1, 'count')
    assert.equal(sample(text, 'http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }), count)
    assert.ok((sample(text, 'http_request_duration_seconds_sum', labels) ?? -1) > 0)
  })

  it('times database calls by operation, backend and outcome', async () => {
    await ctx.app.inject({ url: '/v1/folders', headers: sessionCookieHeaders(ALICE_SESSION) })
    const text = await scrape()
    for (const operation of ['findSessionUser', 'listFolders']) {
      const count = sample(text, 'db_operation_duration_seconds_count', {
        operation,
        backend: 'sqlite',
        outcome: 'ok',
      })
      assert.ok(count !== undefined && count >= 1, operation)
    }
  })

  it('includes the process default metrics', async () => {
    const text = await scrape()
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name)
    }
  })

  it('keeps one registry per app: a new ctx.app starts from zero', async () => {
    const other = await appOver(ctx.seeded.store)
    try {
      await other.inject({ url: '/v1/folders', headers: sessionCookieHeaders(ALICE_SESSION) })
      const text = await scrape(other)
      assert.equal(
        sample(text, 'http_requests_total', { method: 'GET', route: '/v1/folders', status: '200' }),
        1,
      )
    } finally {
      await other.close()
    }
  })

  it('counts failing database calls as errors', async () => {
    const broken = await appOver(failingStore(ctx.seeded.store, ['findSessionUser']))
    try {
      assert.equal(
        (await broken.inject({ url: '/v1/folders', headers: sessionCookieHeaders(ALICE_SESSION) }))
          .statusCode,
        500,
      )
      const text = await scrape(broken)
      assert.equal(
        sample(text, 'db_operation_duration_seconds_count', {
          operation: 'listFolders',
          backend: 'sqlite',
          outcome: 'error',
        }),
        1,
      )
    } finally {
      await broken.close()
    }
  })
})

describe('/healthz and /readyz', () => {
  let seeded: Seeded
  before(async () => {
    seeded = await openSeeded()
  })
  after(() => seeded.cleanup())

  it('/healthz answers 200 without calling the database', async () => {
    const app = await appOver(failingStore(seeded.store))
    try {
      const res = await app.inject('/healthz')
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json(), { status: 'ok' })
    } finally {
      await app.close()
    }
  })

  it('/readyz answers 200 when the database answers', async () => {
    const app = await appOver(seeded.store)
    try {
      const res = await app.inject('/readyz')
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json(), { status: 'ready' })
    } finally {
      await app.close()
    }
  })

  it('/readyz answers 503 problem+json with Retry-After when the database is down', async () => {
    const down: Store = Object.assign(Object.create(seeded.store) as Store, {
      ping: () => Promise.reject(new StoreUnavailableError('connection refused')),
    })
    for (const store of [down, failingStore(seeded.store)]) {
      const app = await appOver(store)
      try {
        const res = await app.inject('/readyz')
        assert.equal(res.statusCode, 503)
        assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
        assert.equal(res.headers['retry-after'], '2')
        const body = res.json<{ code: string; request_id: string }>()
        assert.equal(body.code, 'UNAVAILABLE')
        assert.equal(body.request_id, res.headers['x-request-id'])
        assert.doesNotMatch(res.payload, /connection refused|database is down/)
      } finally {
        await app.close()
      }
    }
  })
})
