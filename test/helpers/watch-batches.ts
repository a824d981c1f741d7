import assert from 'node:assert/strict'
import type { WatchBatch } from 'folder-service/client'

/** The next batch of a client watch that has one (a watch ends only by error or abort). */
export async function nextBatch(watch: AsyncGenerator<WatchBatch>): Promise<WatchBatch> {
  const next = await watch.next()
  assert.equal(next.done, false)
  return next.value
}
