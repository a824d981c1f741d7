import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { faultData, ownPath, seed, type FaultData } from '../helpers/fixtures/fault-data.js'
import { Load, sleep, tally, type Outcome } from '../helpers/http/load.js'
import {
  privatePostgresSkip,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../helpers/databases/private-postgres.js'
import { startService, type Service } from '../helpers/processes/cli.js'

/**
 * The whole PostgreSQL server stops under load (pg_ctl stop -m fast on a private,
 * throwaway server: the machine's shared cluster is never touched), stays down, then
 * starts again on the same port. The service (the built CLI, a child process) must:
 * - answer 503 UNAVAILABLE problem+json with Retry-After while the database is down, each
 *   within the configured timeouts (no hang);
 * - never crash, never drop a connection, never answer another 5xx;
 * - serve 200 again after the restart, by itself (the same process throughout).
 */

const CONNECT_TIMEOUT_MS = 1000
const STATEMENT_TIMEOUT_MS = 1000
/** connect or statement timeout, the client-side grace, and room for a loaded machine */
const OUTAGE_ANSWER_WITHIN_MS = CONNECT_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + 500 + 2500

function describeOutcome(o: Outcome): string {
  return `${o.path} -> ${o.status ?? ''} ${o.error ?? ''} in ${o.endedAt - o.startedAt} ms ${o.body.slice(0, 160)}`
}

describe('PostgreSQL stopped under load, then restarted', { skip: privatePostgresSkip() }, () => {
  let server: PrivatePostgres | undefined
  let service: Service | undefined
  let data: FaultData

  before(async () => {
    server = await startPrivatePostgres()
    data = faultData(3, 30)
    await seed(server.url, data)
    service = await startService(server.url, {
      DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      DB_POOL_SIZE: '4',
    })
  })
  after(async () => {
    await service?.stop()
    server?.destroy()
  })

  it('answers 503 with Retry-After during the outage and 200 again after the restart', async (t) => {
    const svc = service as Service
    const pgs = server as PrivatePostgres
    const load = new Load({
      base: svc.base,
      connections: 4,
      path: (w, n) => ownPath(data, w, n),
      cookie: (w) => `session_id=${data.sessions[w % data.sessions.length]}`,
      timeoutMs: 15_000,
      pauseMs: 5,
    }).start()

    await sleep(1000)
    const stopping = Date.now()
    await pgs.stop()
    const stopped = Date.now()
    await sleep(2500)
    const restarting = Date.now()
    await pgs.start()
    const restarted = Date.now()
    // Back to 200 by itself, without a restart of the service.
    let healed: number | undefined
    while (healed === undefined && Date.now() - restarted < 15_000) {
      healed = load.outcomes.find((o) => o.startedAt > restarted && o.status === 200)?.startedAt
      await sleep(50)
    }
    await sleep(1500)
    const outcomes = await load.stop()
    const summary = `outcomes ${JSON.stringify(tally(outcomes))}; stop took ${stopped - stopping} ms, start ${restarted - restarting} ms`

    t.diagnostic(summary)
    // The process lived through it, and no request failed at the HTTP level.
    assert.ok(svc.running(), `the service exited\n${svc.stderr()}`)
    const broken = outcomes.filter((o) => o.error !== undefined || (o.status !== 200 && o.status !== 503))
    assert.deepEqual(broken.map(describeOutcome), [], summary)

    const healthy = outcomes.filter((o) => o.endedAt < stopping)
    assert.ok(healthy.length > 0, summary)
    assert.ok(
      healthy.every((o) => o.status === 200),
      `before the stop every answer is 200\n${summary}`,
    )

    const down = outcomes.filter((o) => o.startedAt > stopped && o.endedAt < restarting)
    assert.ok(down.length >= 4, `requests during the outage: ${down.length}\n${summary}`)
    for (const o of down) {
      assert.equal(o.status, 503, describeOutcome(o))
      assert.match(String(o.headers['content-type']), /^application\/problem\+json/, describeOutcome(o))
      assert.match(String(o.headers['retry-after']), /^[1-9][0-9]*$/, describeOutcome(o))
      const body = JSON.parse(o.body) as Record<string, unknown>
      assert.equal(body.code, 'UNAVAILABLE', describeOutcome(o))
      assert.doesNotMatch(
        o.body,
        /ECONNREFUSED|127\.0\.0\.1|postgres:\/\//,
        `internals in ${describeOutcome(o)}`,
      )
      assert.ok(o.endedAt - o.startedAt < OUTAGE_ANSWER_WITHIN_MS, `slow 503: ${describeOutcome(o)}`)
    }

    assert.ok(healed !== undefined, `no 200 within 15 s of the restart\n${summary}`)
    const afterHeal = outcomes.filter((o) => o.startedAt > healed)
    assert.ok(afterHeal.length > 10, summary)
    const notOk = afterHeal.filter((o) => o.status !== 200)
    assert.deepEqual(notOk.map(describeOutcome), [], `once healed, every answer is 200\n${summary}`)

    // Readiness follows the database; liveness never depended on it.
    const ready = await fetch(`${svc.base}/readyz`)
    assert.equal(ready.status, 200)
  })
})
