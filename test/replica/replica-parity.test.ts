import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { openStore } from '../../src/store/open-store.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { appOver, type TestApp } from '../helpers/apps/test-app.js'
import { loadDataset } from '../helpers/fixtures/contract-data.js'
import { assertSameAnswers, PARITY_SESSIONS, parityRequests } from '../helpers/http/parity.js'
import {
  replicaSkip,
  replicatedDatabase,
  routing,
  type ReplicatedDatabase,
} from '../helpers/databases/replica.js'

/**
 * Which database served a listing never shows (docs/scale-out.md): the contract data set is
 * read by one app on the primary alone and by another through the replica, and every answer
 * (status, headers, ETag, body) must be the same bytes. The replica must have served the
 * listings, or the comparison would prove nothing.
 */

describe('the replica and the primary answer byte for byte alike', { skip: replicaSkip }, () => {
  let db: ReplicatedDatabase
  let primary: TestApp
  let replica: TestApp

  before(async () => {
    db = await replicatedDatabase(loadDataset)
    const primaryStore = await openStore({ ...TEST_SETTINGS, databaseUrl: db.url })
    const over = async (store: typeof db.store, close: () => Promise<void>): Promise<TestApp> => {
      const app = await appOver(store)
      return {
        app,
        store,
        url: db.url,
        backend: 'postgres',
        close: async () => {
          await app.close()
          await close()
        },
      }
    }
    primary = await over(primaryStore, () => primaryStore.close())
    replica = await over(db.store, () => db.cleanup())
  })
  after(async () => {
    await primary?.close()
    await replica?.close()
  })

  for (const [session, minimum] of PARITY_SESSIONS) {
    it(`for ${parityRequests().length} requests of session ${session.id}`, async () => {
      const before = routing(db.store)
      const compared = await assertSameAnswers(primary, replica, session.id)
      assert.ok(compared >= minimum, `only ${compared} listings compared`)
      const now = routing(db.store)
      const served = (now.replicas[0]?.reads ?? 0) - (before.replicas[0]?.reads ?? 0)
      // Every 200 read on the replica (404s are confirmed on the primary).
      assert.ok(served >= compared, `the replica served ${served} of ${compared} listings`)
    })
  }
})
