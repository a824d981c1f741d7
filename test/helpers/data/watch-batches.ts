import assert from 'node:assert/strict'
import type { WatchBatch } from 'folder-service/client'

/** Reading the client's watch and tree iterators in tests: the next batch, or all within a time. */

/** The next batch of a client watch or tree that has one (they end only by error or abort). */
export async function nextBatch<Batch = WatchBatch>(watch: AsyncGenerator<Batch>): Promise<Batch> {
  const next = await watch.next()
  assert.equal(next.done, false)
  return next.value
}

/**
 * Pulls every item of the iterator `start` makes for `ms` (then aborts its signal): what it
 * yielded, and the error it ended with, if any, other than the abort.
 */
export async function followFor<T>(
  ms: number,
  start: (signal: AbortSignal) => AsyncGenerator<T>,
): Promise<{ items: T[]; error: unknown }> {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), ms)
  const items: T[] = []
  let error: unknown = null
  try {
    for await (const item of start(controller.signal)) items.push(item)
  } catch (e) {
    if (!controller.signal.aborted) error = e
  } finally {
    clearTimeout(timer)
  }
  return { items, error }
}
