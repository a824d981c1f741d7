import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { FolderServiceClient } from 'folder-service/client'
import { DEMO_SESSION_ID, seedDemo } from '../../src/cli/seed-demo.js'
import { sqliteBackend } from '../helpers/databases/backends.js'
import { serveBackend, type ServedBackend } from '../helpers/apps/served-backend.js'
import { followFor } from '../helpers/fixtures/watch-batches.js'

/**
 * `watch()` against a real `serve` process that drains (SIGTERM during SHUTDOWN_DELAY_MS):
 * whatever the draining service answers to changes requests (an empty answer at once, or
 * 503 with Retry-After), the watch asks a handful of times in 2.5 s, not hundreds. The
 * backend does not matter here: the pacing is the client's.
 */

const DELAY_MS = 6_000

describe('watch() against a draining service', { timeout: 60_000 }, () => {
  let served: ServedBackend
  before(async () => {
    served = await serveBackend(sqliteBackend, (store) => seedDemo(store, Date.now()), {
      SHUTDOWN_DELAY_MS: String(DELAY_MS),
    })
  })
  after(() => served?.close())

  it('asks a handful of times in 2.5 s of the drain', async () => {
    const asked: number[] = []
    const counting: typeof fetch = (input, init) => {
      if (String(input instanceof Request ? input.url : input).includes('/v1/folders/changes'))
        asked.push(Date.now())
      return fetch(input, init)
    }
    const client = new FolderServiceClient({
      baseUrl: served.service.base,
      sessionId: DEMO_SESSION_ID,
      fetch: counting,
    })
    served.service.child.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 300))
    const { items, error } = await followFor(2_500, (signal) => client.watch(null, { wait: 30, signal }))
    assert.ok(
      asked.length >= 1 && asked.length <= 5,
      `${asked.length} changes requests in 2.5 s of the drain (${String(error)}, ${items.length} batches)`,
    )
  })
})
