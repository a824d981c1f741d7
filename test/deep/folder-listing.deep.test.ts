import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { summary } from '../property/listing/check.js'
import { runListingProperty } from '../property/listing/runner.js'

/**
 * The long run of the model-based property test (test/property/listing/): at
 * least 10,000 checked requests per backend. A case here is one request compared with the
 * model; they come in batches of 20 to 40 per random data set (DEEP_DATA_SETS, default 400),
 * because loading a data set costs far more than checking a request against it.
 */

const DATA_SETS = Number(process.env.DEEP_DATA_SETS ?? 400)
const REQUESTS_PER_SET = 40
const MIN_CASES = Number(process.env.DEEP_MIN_CASES ?? 10_000)

for (const backend of allBackends()) {
  describe(
    `${backend.name}: GET /v1/folders agrees with the reference model (deep)`,
    { skip: backend.skip },
    () => {
      it(`on ${DATA_SETS} data sets and at least ${MIN_CASES} requests`, async (t) => {
        const stats = await runListingProperty(backend, {
          numRuns: DATA_SETS,
          maxRequests: REQUESTS_PER_SET,
          recycleEvery: 200,
        })
        t.diagnostic(summary(stats))
        assert.equal(stats.cases, DATA_SETS)
        assert.ok(
          stats.requests >= MIN_CASES,
          `only ${stats.requests} requests were checked: ${summary(stats)}`,
        )
        for (const status of [200, 400, 401, 403, 404])
          assert.ok((stats.byStatus.get(status) ?? 0) > 0, summary(stats))
        assert.ok(stats.laterPages > 0 && stats.tiedNames > 0 && stats.clamped > 0, summary(stats))
      })
    },
  )
}
