import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { listingBackends, replicaBackend } from '../helpers/databases/backends.js'
import { summary } from './listing/check.js'
import { runListingProperty } from './listing/runner.js'

/**
 * The quick share of the model-based property test (test/property/listing/): a few dozen
 * random data sets per backend, each checked with a batch of random requests. The long run
 * (10,000 cases) is test/deep/folder-listing.deep.test.ts. FC_SEED=<n> replays a failure.
 */

const QUICK_RUNS = 30
const REQUESTS_PER_CASE = 30

for (const backend of listingBackends()) {
  describe(`${backend.name}: GET /v1/folders agrees with the reference model`, { skip: backend.skip }, () => {
    it(`on ${QUICK_RUNS} random data sets and up to ${REQUESTS_PER_CASE} random requests each`, async (t) => {
      const stats = await runListingProperty(backend, { numRuns: QUICK_RUNS, maxRequests: REQUESTS_PER_CASE })
      t.diagnostic(summary(stats))
      // The generator must actually reach every outcome the model distinguishes.
      assert.equal(stats.cases, QUICK_RUNS)
      for (const status of [200, 400, 401, 403, 404]) {
        assert.ok((stats.byStatus.get(status) ?? 0) > 0, `no ${status} was exercised: ${summary(stats)}`)
      }
      assert.ok(stats.laterPages > 0, `no non-empty page after the first: ${summary(stats)}`)
      assert.ok(stats.tiedNames > 0, `no page with same-name siblings: ${summary(stats)}`)
      assert.ok(stats.writes > 0, `no Store write between requests: ${summary(stats)}`)
      if (backend === replicaBackend) {
        assert.ok(stats.replicaReads > 0, `the replica served no listing: ${summary(stats)}`)
      }
    })
  })
}
