import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { appOver } from '../../helpers/apps/test-app.js'
import { validateImport } from '../../../src/import/validate-import.js'
import type { Backend } from '../../helpers/databases/backends.js'
import { openRawSql } from '../../../harness/raw-sql.js'
import { newStats, type CheckStats } from './check.js'
import { concretise, hex } from './data.js'
import { checkRequest } from './requests.js'
import { dataSetArb, requestArb, type GenRequest } from './generators.js'
import { applyAction, type TargetDb } from './writes.js'

/**
 * Model-based property test of GET /v1/folders: random data sets loaded through the import
 * path (validateImport + Store.importData), random requests through app.inject, and every
 * answer compared with test/helpers/fixtures/model.ts: status, problem code, and for a 200 the whole
 * body (ids, order, names, owners, timestamps, total, page, limit).
 *
 * Cost choice: one database per backend per property run. Each fast-check case imports a
 * fresh data set (new ids and usernames, made unique by a per-case prefix) into that same
 * database and checks a batch of requests against it. Earlier cases' data stays, so every
 * case also runs among many other users' folders that must never show; the model knows only
 * the current case, which is right because everything earlier belongs to other users (404
 * as a parent, never listed). The database is replaced every `recycleEvery` cases so long
 * runs stay bounded. Shrinking re-imports under new ids, so it works unchanged.
 */

/** One backend's database and app, reopened every `recycleEvery` cases. */
class Target {
  private opened: (TargetDb & { app: FastifyInstance; cleanup(): Promise<void> }) | undefined
  private casesOnIt = 0
  constructor(
    private readonly backend: Backend,
    private readonly recycleEvery: number,
    private readonly stats: CheckStats,
  ) {}

  async app(): Promise<FastifyInstance> {
    if (this.opened !== undefined && this.casesOnIt >= this.recycleEvery) await this.close(this.stats)
    if (this.opened === undefined) {
      const opened = await this.backend.open()
      const app = await appOver(opened.store)
      const sql = await openRawSql(opened.url)
      this.opened = {
        store: opened.store,
        sql,
        app,
        cleanup: async () => {
          await sql.close()
          await opened.cleanup()
        },
      }
      this.casesOnIt = 0
    }
    this.casesOnIt++
    return this.opened.app
  }

  get db(): TargetDb {
    if (this.opened === undefined) throw new Error('not open')
    return this.opened
  }

  async close(stats: CheckStats): Promise<void> {
    const opened = this.opened
    this.opened = undefined
    if (opened !== undefined) {
      const routing = opened.store.readRouting?.()
      stats.primaryReads += routing?.primaryReads ?? 0
      stats.replicaReads += routing?.replicas.reduce((sum, replica) => sum + replica.reads, 0) ?? 0
      await opened.app.close()
      await opened.cleanup()
    }
  }
}

export interface RunOptions {
  numRuns: number
  /** requests per case */
  maxRequests: number
  recycleEvery?: number
  seed?: number
}

/**
 * Runs the property on one backend and returns what it exercised. A failure throws
 * fast-check's report (seed, path, the shrunk counterexample and the assertion message).
 */
export async function runListingProperty(backend: Backend, options: RunOptions): Promise<CheckStats> {
  const stats = newStats()
  const target = new Target(backend, options.recycleEvery ?? 2000, stats)
  const nonce = randomBytes(2).toString('hex')
  let counter = 0
  const property = fc.asyncProperty(
    dataSetArb,
    fc.array(requestArb, {
      minLength: Math.ceil(options.maxRequests / 2),
      maxLength: options.maxRequests,
      size: 'max',
    }),
    async (gen, requests) => {
      const app = await target.app()
      const prefix = `${nonce}${hex(counter++, 4)}`
      const concrete = concretise(gen, prefix, Date.now())
      await target.db.store.importData(validateImport(concrete.doc, concrete.importNow))
      stats.cases++
      let previous: GenRequest | undefined
      for (const r of requests) {
        if (r.action !== null) {
          await applyAction(target.db, concrete, r.action, stats)
          // The request answered just before the write is in the listing cache now: asked
          // again, it must reflect the write (a cache that missed it would answer stale).
          if (previous !== undefined) await checkRequest(app, concrete, previous, stats)
        }
        await checkRequest(app, concrete, r, stats)
        previous = r
      }
    },
  )
  const envSeed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)
  const seed = options.seed ?? envSeed
  try {
    await fc.assert(property, {
      numRuns: options.numRuns,
      // The shrunk case's own assertion (request, expected, actual) in the report.
      includeErrorInReport: true,
      ...(seed === undefined ? {} : { seed }),
    })
  } finally {
    await target.close(stats)
  }
  return stats
}
