import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore, type StoreSettings } from '../../../src/store/open-store.js'
import type { Store } from '../../../src/store/store.js'

/**
 * The backends every contract test runs against, so both pass the same suite: SQLite always,
 * PostgreSQL when TEST_DATABASE_URL is set, reported as skipped otherwise.
 */

export interface Backend {
  name: 'sqlite' | 'postgres' | 'postgres+replica' | 'postgres+pooler'
  /** why this backend's tests are skipped, or false when they run */
  skip: string | false
  /** A fresh, migrated, empty store of this backend, and the URL that opens it again. */
  open(): Promise<OpenedBackend>
  /** what opening its URL again takes besides TEST_SETTINGS (openStore) */
  settings?: Partial<StoreSettings>
}

interface OpenedBackend {
  store: Store
  url: string
  cleanup(): Promise<void>
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

/**
 * PostgreSQL through a connection pooler in transaction mode (CONTRACT 17): the database is
 * made on the server itself, and the store opened through the stock PgBouncer .ci/run
 * starts (TEST_POOLER_URL, .ci/pgbouncer.sh), with DATABASE_POOLER=transaction and no
 * direct URL, so everything it does (migrations, imports, transactions) goes through it.
 */
const poolerBackend: Backend = {
  name: 'postgres+pooler',
  skip: !process.env.TEST_DATABASE_URL
    ? 'TEST_DATABASE_URL is not set'
    : !process.env.TEST_POOLER_URL && process.env.CI !== 'true'
      ? 'TEST_POOLER_URL is not set (.ci/pgbouncer.sh starts a PgBouncer)'
      : false,
  settings: { databasePooler: 'transaction' },
  async open() {
    const { pooledDatabase } = await import('./postgres.js')
    return pooledDatabase(process.env.TEST_DATABASE_URL ?? '', process.env.TEST_POOLER_URL ?? '')
  },
}

/**
 * The backends of the contract suites' core (the store, listings and their cursors, the
 * change and tree logs, generations, names, bounds): `backends`, and PostgreSQL through a
 * transaction pooler. The core only, so that CI's time stays bounded (about 45 s through the
 * pooler at a load of 9); test/postgres/pooler.test.ts covers the commands, the feeds and
 * the processes through one.
 */
export function throughPooler(backends: Backend[]): Backend[] {
  return [...backends, poolerBackend]
}

/** The backends of the listing suites: allBackends and PostgreSQL with a read replica. */
export function listingBackends(): Backend[] {
  return [...allBackends(), replicaBackend]
}
