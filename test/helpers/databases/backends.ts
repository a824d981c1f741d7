import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore } from '../../../src/store/open-store.js'
import type { Store } from '../../../src/store/store.js'

/**
 * The backends every contract test runs against, so both pass the same suite: SQLite always,
 * PostgreSQL when TEST_DATABASE_URL is set, reported as skipped otherwise.
 */

export interface Backend {
  name: 'sqlite' | 'postgres' | 'postgres+replica'
  /** why this backend's tests are skipped, or false when they run */
  skip: string | false
  /** A fresh, migrated, empty store of this backend, and the URL that opens it again. */
  open(): Promise<{ store: Store; url: string; cleanup(): Promise<void> }>
}

export const TEST_SETTINGS = {
  dbPoolSize: 4,
  dbConnectTimeoutMs: 3000,
  dbStatementTimeoutMs: 5000,
  sqliteBusyTimeoutMs: 2000,
}

export const sqliteBackend: Backend = {
  name: 'sqlite',
  skip: false,
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'folder-service-test-'))
    const url = `sqlite:${join(dir, 'test.db')}`
    const store = await openStore({ ...TEST_SETTINGS, databaseUrl: url })
    return {
      store,
      url,
      async cleanup() {
        await store.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  },
}

export const postgresBackend: Backend = {
  name: 'postgres',
  skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set',
  async open() {
    const { freshPostgresDatabase } = await import('./postgres.js')
    return freshPostgresDatabase(process.env.TEST_DATABASE_URL ?? '')
  },
}

export function allBackends(): Backend[] {
  return [sqliteBackend, postgresBackend]
}

/**
 * PostgreSQL reading listings on a streaming replica (TEST_DATABASE_READ_URL): every answer
 * must be exactly the primary's, whatever the replica's lag, so the listing suites run on it
 * too. Each store starts with the replica caught up and in rotation.
 */
export const replicaBackend: Backend = {
  name: 'postgres+replica',
  skip: !process.env.TEST_DATABASE_URL
    ? 'TEST_DATABASE_URL is not set'
    : !process.env.TEST_DATABASE_READ_URL
      ? 'TEST_DATABASE_READ_URL is not set (.ci/postgres-replica.sh starts a replica)'
      : false,
  async open() {
    const { replicatedDatabase } = await import('./replica.js')
    return replicatedDatabase()
  },
}

/** The backends of the listing suites: allBackends and PostgreSQL with a read replica. */
export function listingBackends(): Backend[] {
  return [...allBackends(), replicaBackend]
}
