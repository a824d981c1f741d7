/**
 * Every setting of the service (docs/configuration.md), read once from the environment and
 * command-line flags into one frozen object shared by the CLI and the server. A bad value
 * stops start-up with a ConfigError naming the setting.
 */

import { isIP } from 'node:net'
import { availableParallelism } from 'node:os'

export const DEFAULT_DATABASE_URL = 'sqlite:./data/folder-service.db'
/**
 * 100 requests a second sustained for a whole minute, per session: far beyond what a person
 * browsing folders (or a well-behaved sync client) sends, low enough to blunt a runaway
 * script. Load tests should set RATE_LIMIT_PER_MINUTE=0.
 */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 6000
/**
 * Requests with an unknown or expired session one client address may send a minute (and
 * never more than RATE_LIMIT_PER_MINUTE): a person mistypes or outlives a session a few
 * times, not 60 times a minute, while each such request costs a database lookup.
 */
export const DEFAULT_AUTH_FAILURES_PER_MINUTE = 60
/** Connections per read replica, per process. */
export const DEFAULT_REPLICA_POOL_SIZE = 5
/** Connect and statement timeout on a read replica: a slow replica costs a request this much, once. */
export const DEFAULT_REPLICA_TIMEOUT_MS = 1000
/**
 * Connections open at once: far more than a load balancer's pool or a crowd of browsers
 * needs, and well under the common file limits (`ulimit -n`, 65,536 or more in most
 * containers; set it lower where the limit is 1,024) with room left for the database.
 */
export const DEFAULT_MAX_CONNECTIONS = 10_000
/** Budget of the listing cache (finished answers), in MiB; 0 turns it off. */
export const DEFAULT_LISTING_CACHE_MB = 64
/**
 * Held changes requests per process, by default a quarter of MAX_CONNECTIONS: each holds a
 * connection, so held requests alone can never take the connections that listings, other
 * users and /healthz need (each costs a few KB and a timer, none a database connection).
 */
export const longPollMaxWaitersDefault = (maxConnections: number) => Math.floor(maxConnections / 4)
export const DEFAULT_LONG_POLL_MAX_WAITERS = longPollMaxWaitersDefault(DEFAULT_MAX_CONNECTIONS)
/** Held requests one session may have at once: a few tabs or feeds, never the process's share. */
export const DEFAULT_LONG_POLL_PER_SESSION = 4
/** Between two reads of the waited-on owners' generations: a commit is answered within about this. */
export const DEFAULT_LONG_POLL_INTERVAL_MS = 250

export interface Config {
  /** `postgres://...`, `postgresql://...`, `sqlite:PATH` or a plain file path */
  databaseUrl: string
  host: string
  port: number
  logLevel: string
  /** requests per minute per session (per address when unauthenticated); 0: off */
  rateLimitPerMinute: number
  /** unknown or expired sessions per minute per client address, then 429; 0: off */
  authFailuresPerMinute: number
  /** origins allowed to call with credentials; empty: CORS off */
  corsOrigins: readonly string[]
  /**
   * Which proxies may set X-Forwarded-For (Fastify trustProxy): false (none), true (any),
   * or addresses and CIDR ranges. Decides the client address used by the per-address
   * rate limit and logged.
   */
  trustProxy: boolean | readonly string[]
  /** PostgreSQL streaming replicas of databaseUrl for listing reads; empty: none */
  databaseReadUrls: readonly string[]
  /** PostgreSQL connections per process */
  dbPoolSize: number
  /** connections per read replica per process */
  dbReplicaPoolSize: number
  /** connect and statement timeout on a read replica */
  dbReplicaTimeoutMs: number
  /** how long to wait for a new database connection */
  dbConnectTimeoutMs: number
  /** longest a query may run before it is cancelled (PostgreSQL statement_timeout) */
  dbStatementTimeoutMs: number
  /** how long SQLite waits for a lock held by another process */
  sqliteBusyTimeoutMs: number
  /** HTTP keep-alive; longer than the usual load balancer idle timeout (60 s) */
  keepAliveTimeoutMs: number
  /** longest a whole request may take to arrive */
  requestTimeoutMs: number
  /** longest the request headers may take to arrive (slow-loris guard); at most requestTimeoutMs */
  headersTimeoutMs: number
  /** connections open at once; past it new ones are closed as soon as they are accepted */
  maxConnections: number
  /** longest graceful shutdown may take before the process exits anyway */
  shutdownTimeoutMs: number
  /**
   * After SIGTERM, how long to keep accepting and answering (readiness already 503) before
   * the listener closes, so load balancers stop routing here before connections are refused
   */
  shutdownDelayMs: number
  /** a second listener for /metrics only, so it can stay private; null: /metrics on the main one */
  metricsPort: number | null
  metricsHost: string
  /** memory for finished listing responses reused while the database is unchanged; 0: off */
  listingCacheMb: number
  /** the folder browser page at `/` and its assets; off for deployments that want the API alone */
  folderBrowser: boolean
  /** how long the change log keeps changes (older cursors: 410) */
  changeRetentionDays: number
  /** held (wait) changes requests per process, below maxConnections; past it 429 */
  longPollMaxWaiters: number
  /** held (wait) changes requests per session; past it 429 */
  longPollMaxPerSession: number
  /** how often the watcher reads the generations of the owners being waited on */
  longPollIntervalMs: number
  /** commit hints wake held requests and streams sooner than the poll (NOTIFY, data_version) */
  feedWakeups: boolean
  /** PostgreSQL: where the LISTEN connection goes (around a pooler); null: DATABASE_URL */
  feedListenUrl: string | null
}

export type Env = Record<string, string | undefined>

/** Values given on the command line; they win over the environment. */
export interface ConfigFlags {
  db?: string | undefined
  host?: string | undefined
  port?: string | undefined
  logLevel?: string | undefined
  /** `--no-folder-browser` gives false */
  folderBrowser?: boolean | undefined
  /** `--workers`: validated here, read by `serve` with {@link loadWorkers} */
  workers?: string | undefined
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  constructor(
    readonly setting: string,
    reason: string,
  ) {
    super(`${setting}: ${reason}`)
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function integer(
  setting: string,
  text: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (text === undefined || text === '') return fallback
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(setting, `expected a whole number from ${min} to ${max}, got '${text}'`)
  }
  return Number(text)
}

function onOff(setting: string, value: string | undefined, fallback: boolean): boolean {
  const raw = (value ?? '').trim().toLowerCase()
  if (raw === '') return fallback
  if (['on', 'true', '1'].includes(raw)) return true
  if (['off', 'false', '0'].includes(raw)) return false
  throw new ConfigError(setting, `expected on or off (true/false, 1/0), got '${value}'`)
}

function text(value: string | undefined, fallback: string): string {
  return value === undefined || value === '' ? fallback : value
}

/**
 * One CORS origin in the form browsers send in the Origin header (scheme, host, optional
 * port; lower case, default port dropped), so that matching is an exact string compare.
 */
function corsOrigin(value: string): string {
  const refuse = () =>
    new ConfigError(
      'CORS_ORIGINS',
      `expected comma-separated origins such as https://app.example.com, got '${value}'`,
    )
  if (!/^https?:\/\/[^/\s?#@]+$/i.test(value)) throw refuse()
  try {
    return new URL(value).origin
  } catch {
    throw refuse()
  }
}

/**
 * `''`/`false`, `true`, or comma-separated addresses and CIDR ranges. No hop count: Fastify
 * 5 refuses to trust by hop count alone (it cannot vouch for the immediate peer).
 */
function trustProxy(value: string | undefined): boolean | readonly string[] {
  const raw = (value ?? '').trim()
  if (raw === '' || raw === 'false') return false
  if (raw === 'true') return true
  const entries = raw.split(',').map((entry) => entry.trim())
  for (const entry of entries) {
    const [address = '', prefix, ...rest] = entry.split('/')
    const family = isIP(address)
    const maxPrefix = family === 6 ? 128 : 32
    const prefixOk = prefix === undefined || (/^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= maxPrefix)
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new ConfigError(
        'TRUST_PROXY',
        `expected true, false or addresses/CIDR ranges such as 10.0.0.0/8, got '${entry}'`,
      )
    }
  }
  return Object.freeze(entries)
}

/**
 * Comma-separated postgres:// or postgresql:// URLs, each one pg can connect with: a host
 * (or a `host=` socket directory), a port from 1 to 65535, valid percent escapes. An empty
 * entry (`url,,`) is refused too: it is a typo, not "no replica". The message names the
 * entry by position and never repeats it (it may hold a password).
 */
function readUrls(value: string | undefined): readonly string[] {
  const raw = text(value, '')
  if (raw.trim() === '') return Object.freeze([])
  const urls = raw.split(',').map((url) => url.trim())
  urls.forEach((url, index) => {
    const problem = readUrlProblem(url)
    if (problem !== null) {
      throw new ConfigError(
        'DATABASE_READ_URLS',
        `expected comma-separated postgres:// URLs; entry ${index + 1} ${problem}`,
      )
    }
  })
  return Object.freeze(urls)
}

/** Why one read URL cannot be used, or null; the reason never quotes the URL. */
function readUrlProblem(url: string): string | null {
  if (url === '') return 'is empty'
  if (!/^postgres(ql)?:\/\/[^\s]+$/i.test(url)) return 'is not one'
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'cannot be parsed (check its host and port)'
  }
  if (parsed.port === '0') return 'has port 0 (expected 1 to 65535)'
  if (parsed.hostname === '' && !parsed.searchParams.has('host')) return 'names no host'
  try {
    decodeURIComponent(parsed.username + parsed.password + parsed.pathname)
  } catch {
    return 'has a malformed percent escape'
  }
  return null
}

/**
 * FEED_NOTIFY: `on` (the default: LISTEN on DATABASE_URL, or SQLite's data_version), `off`
 * (the poll alone), or a postgres:// URL for the LISTEN connection alone (a direct one where
 * DATABASE_URL goes through a pooler in transaction mode, which drops notifications).
 */
function feedNotify(value: string | undefined): Pick<Config, 'feedWakeups' | 'feedListenUrl'> {
  const raw = text(value, 'on').trim()
  if (/^postgres(ql)?:\/\/[^\s]+$/i.test(raw)) return { feedWakeups: true, feedListenUrl: raw }
  try {
    return { feedWakeups: onOff('FEED_NOTIFY', raw, true), feedListenUrl: null }
  } catch {
    throw new ConfigError('FEED_NOTIFY', 'expected on, off or a postgres:// URL')
  }
}

/** METRICS_PORT set (1-65535, or 0 for any free port): /metrics moves to METRICS_HOST:METRICS_PORT. */
function metricsListener(env: Env): Pick<Config, 'metricsPort' | 'metricsHost'> {
  const metricsHost = text(env.METRICS_HOST, '127.0.0.1')
  const port = env.METRICS_PORT
  if (port === undefined || port === '') return { metricsPort: null, metricsHost }
  return { metricsPort: integer('METRICS_PORT', port, 0, 0, 65535), metricsHost }
}

/** Most worker processes: far more than any machine's cores, low enough to catch a typo. */
export const MAX_WORKERS = 256

/**
 * WORKERS (or `serve --workers`, which wins): how many processes serve the port (node:cluster),
 * each a whole service with its own cache and database connections. A whole number, or
 * `auto`: one per core this process may use. Default 1: no cluster. Read by `serve` alone,
 * apart from Config, which describes one serving process.
 */
export function loadWorkers(env: Env = process.env, flag?: string): number {
  const setting = flag === undefined ? 'WORKERS' : '--workers'
  const value = flag ?? env.WORKERS
  if (value?.trim().toLowerCase() === 'auto') return Math.min(availableParallelism(), MAX_WORKERS)
  try {
    return integer(setting, value?.trim(), 1, 1, MAX_WORKERS)
  } catch {
    throw new ConfigError(setting, `expected auto or a whole number from 1 to ${MAX_WORKERS}, got '${value}'`)
  }
}

export function loadConfig(env: Env = process.env, flags: ConfigFlags = {}): Readonly<Config> {
  const logLevel = text(flags.logLevel ?? env.LOG_LEVEL, 'info')
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}, got '${logLevel}'`)
  }
  const corsOrigins = text(env.CORS_ORIGINS, '')
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '')
    .map(corsOrigin)
  const requestTimeoutMs = integer('REQUEST_TIMEOUT_MS', env.REQUEST_TIMEOUT_MS, 30_000, 1, 3_600_000)
  const headersTimeoutMs = integer(
    'HEADERS_TIMEOUT_MS',
    env.HEADERS_TIMEOUT_MS,
    Math.min(20_000, requestTimeoutMs),
    1,
    3_600_000,
  )
  // Node refuses a headers timeout longer than the request timeout.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      'HEADERS_TIMEOUT_MS',
      `must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got '${headersTimeoutMs}'`,
    )
  }
  const maxConnections = integer(
    'MAX_CONNECTIONS',
    env.MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS,
    1,
    1_000_000,
  )
  // Held requests each keep a connection: their bound must leave connections to everything else.
  const longPollMaxWaiters = integer(
    'LONG_POLL_MAX_WAITERS',
    env.LONG_POLL_MAX_WAITERS,
    longPollMaxWaitersDefault(maxConnections),
    0,
    1_000_000,
  )
  if (longPollMaxWaiters >= maxConnections) {
    throw new ConfigError(
      'LONG_POLL_MAX_WAITERS',
      `must be below MAX_CONNECTIONS (${maxConnections}), got '${longPollMaxWaiters}'`,
    )
  }
  // Validated with every other setting, so a bad WORKERS stops any command the same way;
  // kept out of Config (one serving process): `serve` reads it with loadWorkers.
  loadWorkers(env, flags.workers)
  return Object.freeze({
    databaseUrl: text(flags.db ?? env.DATABASE_URL, DEFAULT_DATABASE_URL),
    host: text(flags.host ?? env.HOST, '127.0.0.1'),
    port: integer(flags.port === undefined ? 'PORT' : '--port', flags.port ?? env.PORT, 3000, 0, 65535),
    logLevel,
    rateLimitPerMinute: integer(
      'RATE_LIMIT_PER_MINUTE',
      env.RATE_LIMIT_PER_MINUTE,
      DEFAULT_RATE_LIMIT_PER_MINUTE,
      0,
      10_000_000,
    ),
    authFailuresPerMinute: integer(
      'AUTH_FAILURES_PER_MINUTE',
      env.AUTH_FAILURES_PER_MINUTE,
      DEFAULT_AUTH_FAILURES_PER_MINUTE,
      0,
      10_000_000,
    ),
    corsOrigins: Object.freeze(corsOrigins),
    trustProxy: trustProxy(env.TRUST_PROXY),
    databaseReadUrls: readUrls(env.DATABASE_READ_URLS),
    dbPoolSize: integer('DB_POOL_SIZE', env.DB_POOL_SIZE, 10, 1, 1000),
    dbReplicaPoolSize: integer(
      'DB_REPLICA_POOL_SIZE',
      env.DB_REPLICA_POOL_SIZE,
      DEFAULT_REPLICA_POOL_SIZE,
      1,
      1000,
    ),
    dbReplicaTimeoutMs: integer(
      'DB_REPLICA_TIMEOUT_MS',
      env.DB_REPLICA_TIMEOUT_MS,
      DEFAULT_REPLICA_TIMEOUT_MS,
      1,
      600_000,
    ),
    dbConnectTimeoutMs: integer('DB_CONNECT_TIMEOUT_MS', env.DB_CONNECT_TIMEOUT_MS, 3000, 1, 600_000),
    dbStatementTimeoutMs: integer('DB_STATEMENT_TIMEOUT_MS', env.DB_STATEMENT_TIMEOUT_MS, 5000, 1, 600_000),
    sqliteBusyTimeoutMs: integer('SQLITE_BUSY_TIMEOUT_MS', env.SQLITE_BUSY_TIMEOUT_MS, 5000, 0, 600_000),
    keepAliveTimeoutMs: integer('KEEP_ALIVE_TIMEOUT_MS', env.KEEP_ALIVE_TIMEOUT_MS, 72_000, 1, 3_600_000),
    requestTimeoutMs,
    headersTimeoutMs,
    maxConnections,
    shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', env.SHUTDOWN_TIMEOUT_MS, 10_000, 1, 600_000),
    shutdownDelayMs: integer('SHUTDOWN_DELAY_MS', env.SHUTDOWN_DELAY_MS, 0, 0, 600_000),
    ...metricsListener(env),
    listingCacheMb: integer('LISTING_CACHE_MB', env.LISTING_CACHE_MB, DEFAULT_LISTING_CACHE_MB, 0, 65_536),
    folderBrowser: flags.folderBrowser ?? onOff('FOLDER_BROWSER', env.FOLDER_BROWSER, true),
    changeRetentionDays: integer('CHANGE_RETENTION_DAYS', env.CHANGE_RETENTION_DAYS, 30, 1, 36_500),
    longPollMaxWaiters,
    longPollMaxPerSession: integer(
      'LONG_POLL_PER_SESSION',
      env.LONG_POLL_PER_SESSION,
      DEFAULT_LONG_POLL_PER_SESSION,
      1,
      1_000_000,
    ),
    longPollIntervalMs: integer(
      'LONG_POLL_INTERVAL_MS',
      env.LONG_POLL_INTERVAL_MS,
      DEFAULT_LONG_POLL_INTERVAL_MS,
      10,
      1000,
    ),
    ...feedNotify(env.FEED_NOTIFY),
  })
}
