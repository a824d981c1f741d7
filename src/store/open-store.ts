import { dirname, resolve } from 'node:path'
import type { Config } from '../config.js'
import { ConfigError, DEFAULTS } from '../config.js'
import { postgresUrlProblem } from '../database-url/url-problem.js'
import { isDirectory } from './sqlite/ensure-directory.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Store } from './store.js'

/**
 * Chooses and connects the backend named by the database URL (README "Command line"):
 * `postgres://` or `postgresql://` is PostgreSQL; `sqlite:PATH` or a plain path is SQLite.
 * The only module that turns configuration into connections: adapters never read settings.
 */

export type DatabaseTarget = { kind: 'postgres'; url: string } | { kind: 'sqlite'; path: string }

export function parseDatabaseUrl(url: string): DatabaseTarget {
  if (/^postgres(ql)?:\/\//i.test(url)) {
    // A single host is read by node-postgres as it always was; a host list (or an unknown
    // target_session_attrs, or a host or port in the query) is checked here, so a URL the
    // service cannot use stops start-up.
    if (url.includes(',') || /[?&](target_session_attrs|host|port)=/.test(url)) {
      const problem = postgresUrlProblem(url)
      if (problem !== null) throw new ConfigError('DATABASE_URL', `the PostgreSQL URL ${problem}`)
    }
    return { kind: 'postgres', url }
  }
  // Any other scheme (mysql://, file://) is a mistake, not a file named after it.
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]
  if (scheme !== undefined && scheme.toLowerCase() !== 'sqlite')
    throw new ConfigError(
      'DATABASE_URL',
      `'${scheme}://' is no database this service uses (postgres://, postgresql://, sqlite:PATH or a file path)`,
    )
  const path = url.replace(/^sqlite:(\/\/)?/i, '')
  if (path === '') throw new ConfigError('DATABASE_URL', `no SQLite file path in '${url}'`)
  return { kind: 'sqlite', path }
}

/**
 * Whether the SQLite file's directory may be created: only the default's (`./data/`). Any
 * other directory must exist, so a typo in `--db` stops the command instead of serving a
 * fresh empty database; the error names the setting.
 */
function createsSqliteDirectory(path: string): boolean {
  if (path === ':memory:') return false
  const directory = dirname(resolve(path))
  const defaultTarget = parseDatabaseUrl(DEFAULTS.databaseUrl)
  if (defaultTarget.kind === 'sqlite' && directory === dirname(resolve(defaultTarget.path))) return true
  if (isDirectory(directory)) return false
  throw new ConfigError(
    'DATABASE_URL',
    `the directory of SQLite database ${path} does not exist (set by --db or DATABASE_URL; only the default ./data/ is created)`,
  )
}

export type StoreSettings = Pick<
  Config,
  'databaseUrl' | 'dbPoolSize' | 'dbConnectTimeoutMs' | 'dbStatementTimeoutMs' | 'sqliteBusyTimeoutMs'
> &
  Partial<
    Pick<
      Config,
      | 'databaseReadUrls'
      | 'dbReplicaPoolSize'
      | 'dbReplicaTimeoutMs'
      | 'feedNotify'
      | 'failoverWaitMs'
      | 'databasePooler'
      | 'databaseDirectUrl'
    >
  >

/**
 * The replicas' pools: small, and quick to give up (connect and statement timeout alike),
 * since every read they fail is answered by the primary instead.
 */
function replicaSettings(settings: StoreSettings) {
  const urls = settings.databaseReadUrls ?? []
  if (urls.length === 0) return undefined
  const timeoutMs = settings.dbReplicaTimeoutMs ?? DEFAULTS.dbReplicaTimeoutMs
  return {
    urls,
    poolSize: settings.dbReplicaPoolSize ?? DEFAULTS.dbReplicaPoolSize,
    connectTimeoutMs: timeoutMs,
    statementTimeoutMs: timeoutMs,
    // DATABASE_POOLER speaks for every entry of DATABASE_READ_URLS too (CONTRACT 17).
    pooler: settings.databasePooler ?? DEFAULTS.databasePooler,
  }
}

/** Opens the backend and brings its schema up to date; `migrated` is told the steps applied. */
export async function openStore(
  settings: StoreSettings,
  migrated?: (steps: readonly string[]) => void,
): Promise<Store> {
  const target = parseDatabaseUrl(settings.databaseUrl)
  const feedNotify = settings.feedNotify ?? DEFAULTS.feedNotify
  const pooler = settings.databasePooler ?? DEFAULTS.databasePooler
  const directUrl = settings.databaseDirectUrl ?? null
  let store: Store
  if (target.kind === 'postgres') {
    // Loaded on demand: the embedded default never pays for the PostgreSQL driver.
    const { openPostgresStore } = await import('./postgres/postgres-store.js')
    store = await openPostgresStore(target.url, {
      poolSize: settings.dbPoolSize,
      connectTimeoutMs: settings.dbConnectTimeoutMs,
      statementTimeoutMs: settings.dbStatementTimeoutMs,
      failoverWaitMs: settings.failoverWaitMs ?? DEFAULTS.failoverWaitMs,
      pooler,
      replicas: replicaSettings(settings),
      directUrl,
      listen: feedNotify,
    })
  } else {
    if ((settings.databaseReadUrls ?? []).length > 0) {
      throw new ConfigError('DATABASE_READ_URLS', 'read replicas need a PostgreSQL DATABASE_URL')
    }
    if (pooler !== 'none') {
      throw new ConfigError('DATABASE_POOLER', 'a connection pooler needs a PostgreSQL DATABASE_URL')
    }
    if (directUrl !== null) {
      throw new ConfigError('DATABASE_DIRECT_URL', 'a direct URL needs a PostgreSQL DATABASE_URL')
    }
    store = openSqliteStore(target.path, {
      busyTimeoutMs: settings.sqliteBusyTimeoutMs,
      createDirectory: createsSqliteDirectory(target.path),
    })
  }
  try {
    const steps = await store.migrate()
    migrated?.(steps)
  } catch (error) {
    await store.close()
    throw error
  }
  return store
}
