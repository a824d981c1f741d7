import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { Config } from '../config.js'
import { ensureDirectory } from '../ensure-directory.js'
import { ConfigError } from '../config.js'
import { SqliteStore } from './sqlite/sqlite-store.js'
import { StoreUnavailableError, type Store } from './store.js'

/**
 * Chooses and connects the backend named by the database URL (README "Command line"):
 * `postgres://` or `postgresql://` is PostgreSQL; `sqlite:PATH` or a plain path is SQLite.
 * The only module that turns configuration into connections: adapters never read settings.
 */

export type DatabaseTarget = { kind: 'postgres'; url: string } | { kind: 'sqlite'; path: string }

export function parseDatabaseUrl(url: string): DatabaseTarget {
  if (/^postgres(ql)?:\/\//i.test(url)) return { kind: 'postgres', url }
  const path = url.replace(/^sqlite:(\/\/)?/i, '')
  if (path === '') throw new ConfigError('DATABASE_URL', `no SQLite file path in '${url}'`)
  return { kind: 'sqlite', path }
}

export type StoreSettings = Pick<
  Config,
  'databaseUrl' | 'dbPoolSize' | 'dbConnectTimeoutMs' | 'dbStatementTimeoutMs' | 'sqliteBusyTimeoutMs'
>

function openSqlite(path: string, busyTimeoutMs: number): Store {
  try {
    if (path !== ':memory:') ensureDirectory(dirname(path))
    const db = new Database(path, { timeout: busyTimeoutMs })
    // WAL: readers never block the writer; NORMAL sync is durable across process crashes in WAL.
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    db.pragma('foreign_keys = ON')
    // 64 MiB page cache (default 2 MiB): large folders and bulk imports of random-UUID keys
    // otherwise thrash it. An upper bound, not an allocation.
    db.pragma('cache_size = -65536')
    return new SqliteStore(db)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw new StoreUnavailableError(`cannot open SQLite database ${path}: ${reason}`, { cause: error })
  }
}

/** Opens the backend and brings its schema up to date. */
export async function openStore(settings: StoreSettings): Promise<Store> {
  const target = parseDatabaseUrl(settings.databaseUrl)
  let store: Store
  if (target.kind === 'postgres') {
    // Loaded on demand: the embedded default never pays for the PostgreSQL driver.
    const { openPostgresStore } = await import('./postgres/postgres-store.js')
    store = await openPostgresStore(target.url, {
      poolSize: settings.dbPoolSize,
      connectTimeoutMs: settings.dbConnectTimeoutMs,
      statementTimeoutMs: settings.dbStatementTimeoutMs,
    })
  } else {
    store = openSqlite(target.path, settings.sqliteBusyTimeoutMs)
  }
  try {
    await store.migrate()
  } catch (error) {
    await store.close()
    throw error
  }
  return store
}
