import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { sqliteBackend } from '../helpers/databases/backends.js'
import {
  assertAcceptable,
  documentedParameters,
  hostileRequestArb,
  openFuzzTarget,
  within,
  type FuzzTarget,
} from '../helpers/fixtures/hostile.js'

/** The long run of the random hostile requests of test/fuzz/hostile-input.test.ts. */

const RUNS = Number(process.env.DEEP_FUZZ_RUNS ?? 5000)

describe('sqlite: random hostile requests (deep)', () => {
  let t: FuzzTarget
  before(async () => {
    t = await openFuzzTarget(sqliteBackend)
  })
  after(async () => {
    await t?.close()
  })

  it(`answers ${RUNS} random hostile requests with 2xx/304 or a 4xx problem, never a 5xx`, async () => {
    const { query } = await documentedParameters(t.app)
    let answered = 0
    await fc.assert(
      fc.asyncProperty(hostileRequestArb(query, t.aliceSession), async (r) => {
        const what = `GET ?${r.query} cookie=${JSON.stringify(r.cookie)}`
        const res = await within(
          t.app.inject({
            method: 'GET',
            url: `/v1/folders?${r.query}`,
            headers: r.cookie === undefined ? {} : { cookie: r.cookie },
          }),
          10_000,
          what,
        )
        assertAcceptable(res, what)
        answered++
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    )
    assert.equal(answered, RUNS)
  })
})
