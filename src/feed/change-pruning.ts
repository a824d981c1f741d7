import type { AdminStore } from '../store/store.js'

/**
 * Keeps the change log to CHANGE_RETENTION_DAYS: at start and then every PRUNE_EVERY_MS,
 * deletes older log rows in small batches, each its own short statement, yielding to the
 * event loop between them, so that writers are never held behind one long delete. A failed
 * run is reported and tried again at the next tick.
 */

const DAY_MS = 86_400_000
/** between two runs */
const PRUNE_EVERY_MS = 15 * 60_000
/** log rows deleted per statement */
export const PRUNE_BATCH = 1000

export interface Pruning {
  /** the current run, if any (for tests) */
  readonly running: Promise<number> | null
  stop(): Promise<void>
}

export function startPruning(
  store: Pick<AdminStore, 'pruneChanges'>,
  options: { retentionDays: number; everyMs?: number; onError: (error: unknown) => void },
): Pruning {
  let stopped = false
  let running: Promise<number> | null = null
  let timer: NodeJS.Timeout | null = null

  const run = async (): Promise<number> => {
    const before = Date.now() - options.retentionDays * DAY_MS
    let total = 0
    for (;;) {
      if (stopped) return total
      const deleted = await store.pruneChanges(before, PRUNE_BATCH)
      total += deleted
      if (deleted < PRUNE_BATCH) return total
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  const tick = () => {
    timer = null
    running = run()
      .catch((error: unknown) => {
        options.onError(error)
        return 0
      })
      .finally(() => {
        running = null
        if (!stopped) timer = setTimeout(tick, options.everyMs ?? PRUNE_EVERY_MS).unref()
      })
  }
  tick()
  return {
    get running() {
      return running
    },
    async stop() {
      stopped = true
      if (timer !== null) clearTimeout(timer)
      await running
    },
  }
}
