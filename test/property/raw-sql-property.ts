import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { appOver } from '../helpers/apps/test-app.js'
import type { Backend } from '../helpers/databases/backends.js'
import type { Store } from '../../src/store/store.js'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'

/**
 * What the replay properties (changes-replay.ts, tree-replay.ts) run on: one fresh database
 * per backend, the app over its store, and a second connection writing raw SQL. FC_SEED=<n>
 * replays a failure.
 */
export interface PropertyRig {
  app: FastifyInstance
  sql: RawSql
  store: Store
}

export async function assertOnRawSql<T>(
  backend: Backend,
  numRuns: number,
  arbitrary: fc.Arbitrary<T>,
  run: (rig: PropertyRig, value: T) => Promise<void>,
  /** values run first, within numRuns: histories that once failed */
  examples: T[] = [],
): Promise<void> {
  const opened = await backend.open()
  const app = await appOver(opened.store)
  const sql = await openRawSql(opened.url)
  const rig = { app, sql, store: opened.store }
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)
  try {
    await fc.assert(
      fc.asyncProperty(arbitrary, (value) => run(rig, value)),
      {
        numRuns,
        examples: examples.map((value): [T] => [value]),
        ...(seed === undefined ? {} : { seed }),
      },
    )
  } finally {
    await sql.close()
    await app.close()
    await opened.cleanup()
  }
}
