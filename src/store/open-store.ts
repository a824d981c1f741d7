import type { Config } from '../config.js'
import { ConfigError } from '../config.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Store } from './store.js'

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
    store = openSqliteStore(target.path, { busyTimeoutMs: settings.sqliteBusyTimeoutMs })
  }
  try {
    await store.migrate()
  } catch (error) {
    await store.close()
    throw error
  }
  return store
}
