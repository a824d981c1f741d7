import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { postgresBackend } from '../helpers/databases/backends.js'
import { faultData, ownPath, seed, type FaultData } from '../helpers/fixtures/fault-data.js'
import { Load, sleep, tally, type Outcome } from '../helpers/http/load.js'
import { createEmptyDatabase } from '../helpers/databases/postgres.js'
import { startService, type Service } from '../helpers/processes/cli.js'

/**
 * Every connection of the service terminated by pg_terminate_backend, again and again, under
 * HTTP load (the store-level version is test/postgres/outage.test.ts). The role of
 * TEST_DATABASE_URL may terminate its own backends, so a fresh database of that role is
 * enough. The service (built CLI, a child process) must survive, answer every request 200
 * or 503 UNAVAILABLE with Retry-After (never another status, never a dropped connection),
 * and serve 200 once the terminations stop.
 */

const TERMINATE_FOR_MS = 2000
const TERMINATE_EVERY_MS = 100

function describeOutcome(o: Outcome): string {
  return `${o.path} -> ${o.status ?? ''} ${o.error ?? ''} in ${o.endedAt - o.startedAt} ms ${o.body.slice(0, 160)}`
}

describe('PostgreSQL backends terminated under load', { skip: postgresBackend.skip }, () => {
  let database: { url: string; drop(): Promise<void> } | undefined
  let service: Service | undefined
  let data: FaultData

  before(async () => {
    database = await createEmptyDatabase(process.env.TEST_DATABASE_URL ?? '')
    data = faultData(3, 30)
    await seed(database.url, data)
    service = await startService(database.url, { DB_POOL_SIZE: '4', DB_CONNECT_TIMEOUT_MS: '2000' })
  })
  after(async () => {
    await service?.stop()
    await database?.drop()
  })

  it('survives, answers 200 or 503 meanwhile, and 200 once the terminations stop', async (t) => {
    const svc = service as Service
    const load = new Load({
      base: svc.base,
      connections: 4,
      path: (w, n) => ownPath(data, w, n),
      cookie: (w) => `session_id=${data.sessions[w % data.sessions.length]}`,
      timeoutMs: 15_000,
    }).start()
    await sleep(500)

    const admin = new pg.Client({ connectionString: (database as { url: string }).url })
    await admin.connect()
    let terminated = 0
    const from = Date.now()
    try {
      while (Date.now() - from < TERMINATE_FOR_MS) {
        const { rows } = await admin.query<{ n: string }>(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n
             FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
              -- the service's connections (same role); not an autovacuum worker, which
              -- runs as a superuser this role may not terminate
              AND backend_type = 'client backend' AND usename = current_user`,
        )
        terminated += Number(rows[0]?.n ?? 0)
        await sleep(TERMINATE_EVERY_MS)
      }
    } finally {
      await admin.end()
    }
    const stoppedTerminating = Date.now()
    await sleep(1000)
    const outcomes = await load.stop()
    const summary = `terminated ${terminated} backends; outcomes ${JSON.stringify(tally(outcomes))}`
    t.diagnostic(summary)

    assert.ok(terminated >= 5, `the test must actually terminate connections: ${summary}`)
    assert.ok(svc.running(), `the service exited\n${svc.stderr()}`)
    const broken = outcomes.filter((o) => o.error !== undefined || (o.status !== 200 && o.status !== 503))
    assert.deepEqual(broken.map(describeOutcome), [], summary)
    for (const o of outcomes.filter((x) => x.status === 503)) {
      assert.match(String(o.headers['retry-after']), /^[1-9][0-9]*$/, describeOutcome(o))
      assert.match(String(o.headers['content-type']), /^application\/problem\+json/, describeOutcome(o))
    }
    const later = outcomes.filter((o) => o.startedAt > stoppedTerminating + 200)
    assert.ok(later.length > 10, summary)
    assert.deepEqual(
      later.filter((o) => o.status !== 200).map(describeOutcome),
      [],
      `after the terminations every answer is 200\n${summary}`,
    )
  })
})
