/**
 * Every setting of the service, declared once in SETTINGS: its variable, flag, kind of value,
 * default, bounds, relation to other settings and meaning. The loader reads the environment
 * and flags through it into one frozen Config (whose type it also gives), and
 * `npm run docs:config` writes docs/configuration.md's table and .env.example from it. A bad
 * value stops start-up with a ConfigError naming the setting.
 */

import {
  ConfigError,
  corsOrigins,
  feedNotify,
  integer,
  oneOf,
  onOff,
  optionalPort,
  optionalPostgresUrl,
  processCount,
  readUrls,
  text,
  trustProxy,
  type Kind,
} from './config-values.js'
import {
  DEFAULT_SERVICE_NAME,
  httpUrl,
  keyValueList,
  optionalOneOf,
  OTLP_PROTOCOLS,
  otelBoolean,
  probability,
  TRACE_SAMPLERS,
  TRACES_EXPORTERS,
} from './tracing/otel-values.js'

export { ConfigError }

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

interface Flag {
  /** as typed, e.g. `--log-level` */
  name: string
  option: keyof ConfigFlags
  /** a bad value from the flag is reported under the variable's name (as it always has been) */
  blamesVariable?: true
}

/** Documentation text with literal text marked by `code` (Markdown or plain). */
type Note = (code: (literal: string) => string) => string

/** A default computed from an earlier setting's value. */
class Derived<T> {
  constructor(
    readonly from: string,
    readonly compute: (other: number) => T,
    /** how, for the documentation; `code` marks literal text */
    readonly note: Note,
  ) {}
}

/** How a whole-number setting is held against an earlier one; the messages are the contract's. */
const LIMITS = {
  below: { exceeds: (value: number, limit: number) => value >= limit, error: 'must be below', says: 'below' },
  atMost: {
    exceeds: (value: number, limit: number) => value > limit,
    error: 'must not exceed',
    says: 'at most',
  },
}

interface Limit {
  rule: keyof typeof LIMITS
  /** the earlier setting's variable */
  of: string
}

interface Setting<T> {
  variable: string
  flag?: Flag
  kind: Kind<T>
  default: T | Derived<T>
  /** said after the default in the documentation, e.g. what empty means */
  defaultNote?: Note
  /** a whole-number setting held against an earlier one */
  limit?: Limit
  /** one line for the table in docs/configuration.md (Markdown, links relative to docs/) */
  meaning: string
  /** the longer explanation .env.example gives (plain text) */
  details: string
  /** OpenTelemetry's own variables are documented in a table of their own */
  opentelemetry?: true
}

const setting = <T>(declared: Setting<T>): Setting<T> => declared

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** What DATABASE_URL reaches: the server, or a connection pooler in transaction mode. */
const POOLERS = ['none', 'transaction'] as const

/** Most worker processes: far more than any machine's cores, low enough to catch a typo. */
const MAX_WORKERS = 256

/**
 * The settings, in the order they are read (a relation or a derived default names an earlier
 * one) and documented. The keys are Config's.
 */
const SETTINGS = {
  databaseUrl: setting({
    variable: 'DATABASE_URL',
    flag: { name: '--db', option: 'db' },
    kind: text((code) => `${code('postgres://...')}, ${code('sqlite:PATH')} or a file path`),
    default: 'sqlite:./data/folder-service.db',
    meaning: 'the database: PostgreSQL, or an embedded SQLite file',
    details:
      'Database: postgres://user:pass@host:5432/db (or postgresql://), sqlite:PATH, or a plain file path (SQLite). A highly available PostgreSQL: several hosts, as libpq writes them, postgres://user:pass@h1:5432,h2:5433/db?target_session_attrs=read-write (docs/operations.md).',
  }),
  host: setting({
    variable: 'HOST',
    flag: { name: '--host', option: 'host' },
    kind: text(() => 'an address or host name'),
    default: '127.0.0.1',
    meaning: 'listen address',
    details: 'Listen address.',
  }),
  port: setting({
    variable: 'PORT',
    flag: { name: '--port', option: 'port' },
    kind: integer(0, 65535),
    default: 3000,
    meaning: 'listen port (`0`: any free port)',
    details: 'Listen port; 0 picks any free one.',
  }),
  logLevel: setting({
    variable: 'LOG_LEVEL',
    flag: { name: '--log-level', option: 'logLevel', blamesVariable: true },
    kind: oneOf(LOG_LEVELS),
    default: 'info',
    meaning: 'pino level',
    details: 'pino log level.',
  }),
  folderBrowser: setting({
    variable: 'FOLDER_BROWSER',
    flag: { name: '--no-folder-browser', option: 'folderBrowser' },
    kind: onOff,
    default: true,
    meaning: 'the folder browser at `/`; `off` serves the API alone',
    details: 'The folder browser page at / (and its files under /assets/). off serves the API alone.',
  }),
  // Validated with every other setting, so a bad WORKERS stops any command the same way;
  // kept out of Config (one serving process): `serve` reads it with loadWorkers.
  workers: setting({
    variable: 'WORKERS',
    flag: { name: '--workers', option: 'workers' },
    kind: processCount(MAX_WORKERS),
    default: 1,
    meaning:
      'processes serving the port, each with its own cache and pool ([sizing](performance.md#workers))',
    details:
      'Processes serving the port (node:cluster). Each is a whole service with its own listing cache (LISTING_CACHE_MB each) and its own PostgreSQL pool (DB_POOL_SIZE each); a worker that dies is restarted.',
  }),
  // 100 requests a second sustained for a whole minute, per session: far beyond what a
  // person browsing folders (or a well-behaved sync client) sends, low enough to blunt a
  // runaway script. Load tests set it to 0.
  rateLimitPerMinute: setting({
    variable: 'RATE_LIMIT_PER_MINUTE',
    kind: integer(0, 10_000_000),
    default: 6000,
    meaning: 'requests per minute per session (per address without one); `0` switches it off',
    details:
      'Requests per minute per session (per client address when there is no well-formed session cookie) on /v1/folders. 0 switches rate limiting off (load tests).',
  }),
  // A person mistypes or outlives a session a few times, not 60 times a minute, while each
  // such request costs a database lookup.
  authFailuresPerMinute: setting({
    variable: 'AUTH_FAILURES_PER_MINUTE',
    kind: integer(0, 10_000_000),
    default: 60,
    meaning:
      'unknown or expired sessions per minute per client address (capped by `RATE_LIMIT_PER_MINUTE`), then 429; `0` switches it off',
    details:
      'Requests with an unknown or expired session one client address may send a minute (never more than RATE_LIMIT_PER_MINUTE when that is on); then 429 for its requests carrying a session cookie until the minute ends. Each costs a database lookup, and a fresh random session id per request would otherwise escape the per-session limit. 0 switches it off.',
  }),
  trustProxy: setting({
    variable: 'TRUST_PROXY',
    kind: trustProxy,
    default: false,
    meaning: 'proxies trusted to set `X-Forwarded-For` (the client address of rate limits and logs)',
    details:
      'Proxies trusted to set X-Forwarded-For (decides the client address for rate limiting and logs). true trusts any: set it only when every request comes through your proxy. E.g. 10.0.0.0/8,127.0.0.1.',
  }),
  corsOrigins: setting({
    variable: 'CORS_ORIGINS',
    kind: corsOrigins,
    default: Object.freeze([]),
    defaultNote: () => '(off)',
    meaning: 'origins allowed to call with credentials',
    details:
      'Comma-separated browser origins allowed to call the API with credentials, e.g. https://app.example.com,https://admin.example.com. Empty: CORS off.',
  }),
  databaseReadUrls: setting({
    variable: 'DATABASE_READ_URLS',
    kind: readUrls,
    default: Object.freeze([]),
    meaning: 'PostgreSQL streaming replicas for listing reads ([scale-out](scale-out.md))',
    details:
      "PostgreSQL streaming replicas of DATABASE_URL (an entry may list several hosts): listing pages, counts and change feeds are read there once a replica has replayed the user's current listing generation (never a stale answer); empty: everything on DATABASE_URL. A malformed URL or an empty entry (url,,) stops start-up. See docs/scale-out.md.",
  }),
  databasePooler: setting<(typeof POOLERS)[number]>({
    variable: 'DATABASE_POOLER',
    kind: oneOf(POOLERS),
    default: 'none',
    meaning:
      '`transaction`: the database URLs reach a pooler in transaction mode ([poolers](operations.md#behind-a-connection-pooler))',
    details:
      'transaction: DATABASE_URL (and every DATABASE_READ_URLS entry) is a connection pooler in transaction mode (PgBouncer, RDS Proxy, Supavisor): no named prepared statements, no startup parameters, nothing kept between transactions; statement timeouts are set in each transaction or by the client. none: a direct connection (or a pooler in session mode). See docs/operations.md.',
  }),
  databaseDirectUrl: setting({
    variable: 'DATABASE_DIRECT_URL',
    kind: optionalPostgresUrl,
    default: null,
    defaultNote: () => '(none)',
    meaning:
      'the database itself, for `LISTEN` and migrations ([poolers](operations.md#behind-a-connection-pooler))',
    details:
      'The PostgreSQL database itself (not through a pooler; it may list hosts like DATABASE_URL), for what needs a session: the LISTEN connection that wakes followers at once, and migrations. Empty: migrations go through DATABASE_URL, and behind DATABASE_POOLER=transaction followers are woken by the poll alone (LONG_POLL_INTERVAL_MS).',
  }),
  dbPoolSize: setting({
    variable: 'DB_POOL_SIZE',
    kind: integer(1, 1000),
    default: 10,
    meaning: 'PostgreSQL connections per process',
    details: 'PostgreSQL connections per process.',
  }),
  dbReplicaPoolSize: setting({
    variable: 'DB_REPLICA_POOL_SIZE',
    kind: integer(1, 1000),
    default: 5,
    meaning: 'PostgreSQL connections per read replica per process',
    details: 'Connections per read replica per process.',
  }),
  dbReplicaTimeoutMs: setting({
    variable: 'DB_REPLICA_TIMEOUT_MS',
    kind: integer(1, 600_000),
    default: 1000,
    meaning: 'connect and statement timeout on a read replica (then the primary answers)',
    details:
      'Connect and statement timeout on a read replica (ms): a sick replica costs a request at most this once, then it is skipped and the primary answers.',
  }),
  dbConnectTimeoutMs: setting({
    variable: 'DB_CONNECT_TIMEOUT_MS',
    kind: integer(1, 600_000),
    default: 3000,
    meaning: 'wait for a PostgreSQL connection, new or pooled',
    details: 'How long to wait for a database connection, new or pooled (ms).',
  }),
  dbStatementTimeoutMs: setting({
    variable: 'DB_STATEMENT_TIMEOUT_MS',
    kind: integer(1, 600_000),
    default: 5000,
    meaning: 'longest a query may run (then 503)',
    details: 'Longest a query may run before it is cancelled (ms; PostgreSQL statement_timeout).',
  }),
  failoverWaitMs: setting({
    variable: 'FAILOVER_WAIT_MS',
    kind: integer(0, 600_000),
    default: 10_000,
    meaning: 'wait for a moved primary, then 503 ([high availability](operations.md#high-availability))',
    details:
      'With a host list in DATABASE_URL (or target_session_attrs=read-write): how long a request waits for the primary to be found when it has moved, a read cut off by the move being run again there (ms); then 503 with Retry-After. 0 answers at once. See docs/operations.md.',
  }),
  sqliteBusyTimeoutMs: setting({
    variable: 'SQLITE_BUSY_TIMEOUT_MS',
    kind: integer(0, 600_000),
    default: 5000,
    meaning: 'wait for a SQLite lock held by another process',
    details: 'How long SQLite waits for a lock held by another process (ms).',
  }),
  keepAliveTimeoutMs: setting({
    variable: 'KEEP_ALIVE_TIMEOUT_MS',
    kind: integer(1, 3_600_000),
    default: 72_000,
    meaning: 'HTTP keep-alive, longer than common load balancer idle timeouts',
    details:
      'HTTP keep-alive (ms): longer than the idle timeout of the load balancer in front (60 s on AWS ALB and most others), so the balancer, not us, closes idle connections.',
  }),
  requestTimeoutMs: setting({
    variable: 'REQUEST_TIMEOUT_MS',
    kind: integer(1, 3_600_000),
    default: 30_000,
    meaning: 'longest a whole request may take to arrive',
    details: 'Longest a whole request may take to arrive (ms).',
  }),
  // Node refuses a headers timeout longer than the request timeout.
  headersTimeoutMs: setting({
    variable: 'HEADERS_TIMEOUT_MS',
    kind: integer(1, 3_600_000),
    default: new Derived(
      'REQUEST_TIMEOUT_MS',
      (requestTimeoutMs) => Math.min(20_000, requestTimeoutMs),
      (code) => `or ${code('REQUEST_TIMEOUT_MS')} when lower`,
    ),
    limit: { rule: 'atMost', of: 'REQUEST_TIMEOUT_MS' },
    meaning: 'longest the request headers may take to arrive (slow-loris guard)',
    details:
      'Longest the request headers may take to arrive (ms; slow-loris guard). A connection that has sent nothing by then is closed.',
  }),
  // Far more than a load balancer's pool or a crowd of browsers needs, and well under the
  // common file limits (`ulimit -n`, 65,536 or more in most containers; set it lower where
  // the limit is 1,024) with room left for the database.
  maxConnections: setting({
    variable: 'MAX_CONNECTIONS',
    kind: integer(1, 1_000_000),
    default: 10_000,
    meaning:
      'connections open at once; past it new ones are closed on arrival ([limits](operations.md#connections))',
    details:
      "Connections open at once; past it, each new one is closed as soon as it is accepted while the open ones are still served. Keep it under the process's file limit (ulimit -n) with room for the database and logs.",
  }),
  shutdownTimeoutMs: setting({
    variable: 'SHUTDOWN_TIMEOUT_MS',
    kind: integer(1, 600_000),
    default: 10_000,
    meaning: 'graceful shutdown deadline',
    details: 'On SIGTERM/SIGINT: how long to let requests in flight finish before exiting anyway (ms).',
  }),
  shutdownDelayMs: setting({
    variable: 'SHUTDOWN_DELAY_MS',
    kind: integer(0, 600_000),
    default: 0,
    meaning: 'after SIGTERM, keep answering this long with `/readyz` at 503 before closing the listener',
    details:
      'On SIGTERM/SIGINT, first: how long to keep accepting and answering (ms), with /readyz already 503 and every answer saying Connection: close, so that load balancers stop routing here before the listener closes and no client sees a refused or reset connection. Set it a little above the time your balancer needs to notice (Kubernetes: readiness periodSeconds x failureThreshold, plus endpoint propagation), e.g. 5000. SHUTDOWN_TIMEOUT_MS counts after it. 0: close the listener at once.',
  }),
  listingCacheMb: setting({
    variable: 'LISTING_CACHE_MB',
    kind: integer(0, 65_536),
    default: 64,
    meaning: 'memory (MiB) for finished listings per process, on both backends; `0` switches it off',
    details:
      "Memory (MiB) per process for finished listing responses, on both backends, reused while the user's listing generation (kept by the database) is unchanged; 0 switches it off.",
  }),
  changeRetentionDays: setting({
    variable: 'CHANGE_RETENTION_DAYS',
    kind: integer(1, 36_500),
    default: 30,
    meaning: 'days the changes feed keeps changes; older cursors get 410 (`serve` prunes in the background)',
    details:
      'Days the changes feed (GET /v1/folders/changes) keeps changes; a cursor older than that gets 410 CURSOR_EXPIRED. serve prunes older changes in the background.',
  }),
  // Each held request keeps a connection, so held requests alone can never take the
  // connections that listings, other users and /healthz need (each costs a few KB and a
  // timer, none a database connection).
  longPollMaxWaiters: setting({
    variable: 'LONG_POLL_MAX_WAITERS',
    kind: integer(0, 1_000_000),
    default: new Derived(
      'MAX_CONNECTIONS',
      (maxConnections) => Math.floor(maxConnections / 4),
      (code) => `(¼ of ${code('MAX_CONNECTIONS')})`,
    ),
    limit: { rule: 'below', of: 'MAX_CONNECTIONS' },
    meaning: 'changes requests held (`wait`) at once per process; past it 429',
    details:
      'Changes requests held at once (wait=N) per process; past it 429 with Retry-After. Each keeps a connection open.',
  }),
  // A person's few followers, never the process's share: the folder browser holds one per
  // session and browser whatever its tabs (shared-follow.ts), leaving three for a phone, the
  // command line or a sync client.
  longPollMaxPerSession: setting({
    variable: 'LONG_POLL_PER_SESSION',
    kind: integer(1, 1_000_000),
    default: 4,
    meaning: 'changes requests one session may hold at once; past it 429',
    details: 'Changes requests one session may hold at once; past it 429 with Retry-After.',
  }),
  // A commit is answered within about this.
  longPollIntervalMs: setting({
    variable: 'LONG_POLL_INTERVAL_MS',
    kind: integer(10, 1000),
    default: 250,
    meaning: "how often held requests' owners are checked for changes",
    details:
      'How often (ms) the owners of held requests are checked for changes: one statement per interval for all of them, none while nothing is held.',
  }),
  // A revoke or a freeze writes nothing to the feeds' log: without this sweep a held request
  // would learn of it only at the end of its wait (up to 60 s).
  sessionRecheckMs: setting({
    variable: 'SESSION_RECHECK_MS',
    kind: integer(100, 60_000),
    default: 5000,
    meaning: "how often held requests' and streams' sessions are read again while they wait",
    details:
      'How often (ms) the sessions of held requests and event streams are read again while they wait (statements of 256 sessions, none while nothing is held): a session revoked or expired, or a user frozen, gets its 401 or 403 within about this.',
  }),
  feedNotify: setting({
    variable: 'FEED_NOTIFY',
    kind: feedNotify,
    default: true,
    meaning: 'commit hints wake held requests and streams at once ([operations](operations.md#wake-ups))',
    details:
      "Commit hints that wake held requests and event streams at once rather than at the next check: PostgreSQL LISTEN/NOTIFY on one dedicated connection (to DATABASE_DIRECT_URL when set), SQLite's data_version. on, or off (the check above alone).",
  }),
  metricsPort: setting({
    variable: 'METRICS_PORT',
    kind: optionalPort(),
    default: null,
    meaning: 'serve `/metrics` on this port only (not on the main listener), so it can stay private',
    details:
      'Serve /metrics on its own listener, port METRICS_PORT on METRICS_HOST, instead of on the main one (which then answers 404 for it), so that it can stay private. Empty: /metrics on the main listener, rate limited per client address like the other public routes.',
  }),
  metricsHost: setting({
    variable: 'METRICS_HOST',
    kind: text(() => 'an address or host name'),
    default: '127.0.0.1',
    meaning: 'address of the metrics listener (used with `METRICS_PORT`)',
    details: 'Address of the metrics listener (used with METRICS_PORT).',
  }),
  // OpenTelemetry's own variables, read with the specification's meaning (src/tracing/), but
  // for one default: tracing is off until OTEL_TRACES_EXPORTER asks for it.
  otelSdkDisabled: setting({
    opentelemetry: true,
    variable: 'OTEL_SDK_DISABLED',
    kind: otelBoolean,
    default: false,
    meaning: '`true` switches tracing off whatever else is set',
    details: 'OpenTelemetry: true switches tracing off, whatever the other OTEL_ variables say.',
  }),
  otelTracesExporter: setting({
    opentelemetry: true,
    variable: 'OTEL_TRACES_EXPORTER',
    kind: oneOf(TRACES_EXPORTERS),
    default: 'none',
    meaning:
      '`otlp` sends traces to a collector ([tracing](operations.md#tracing)); `none`: no tracing, nothing loaded',
    details:
      "OpenTelemetry: otlp sends traces over OTLP/HTTP to a collector (docs/operations.md, Tracing); none (the default here, unlike the specification's otlp) traces nothing and loads none of the SDK.",
  }),
  otelExporterOtlpEndpoint: setting({
    opentelemetry: true,
    variable: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    kind: httpUrl,
    default: 'http://localhost:4318',
    meaning: "the collector's OTLP/HTTP base URL (traces go to its `/v1/traces`)",
    details: "OpenTelemetry: the collector's OTLP/HTTP base URL; traces are sent to its path v1/traces.",
  }),
  otelExporterOtlpTracesEndpoint: setting({
    opentelemetry: true,
    variable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    kind: httpUrl,
    default: '',
    defaultNote: (code) => `(the one above and ${code('/v1/traces')})`,
    meaning: 'the whole URL traces are sent to, used as it is',
    details: 'OpenTelemetry: the whole URL traces are sent to, used as it is (no path is added).',
  }),
  otelExporterOtlpProtocol: setting({
    opentelemetry: true,
    variable: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    kind: oneOf(OTLP_PROTOCOLS),
    default: 'http/protobuf',
    meaning: 'the OTLP encoding (no gRPC)',
    details: 'OpenTelemetry: the OTLP encoding over HTTP, http/protobuf or http/json (gRPC is not offered).',
  }),
  otelExporterOtlpTracesProtocol: setting({
    opentelemetry: true,
    variable: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    kind: optionalOneOf(OTLP_PROTOCOLS),
    default: '',
    defaultNote: () => '(the one above)',
    meaning: "the traces' OTLP encoding, when not the one above",
    details: "OpenTelemetry: the traces' OTLP encoding, when it differs from OTEL_EXPORTER_OTLP_PROTOCOL.",
  }),
  otelServiceName: setting({
    opentelemetry: true,
    variable: 'OTEL_SERVICE_NAME',
    kind: text(() => 'a name'),
    default: '',
    defaultNote: (code) => `(${code('service.name')} below, else ${code(DEFAULT_SERVICE_NAME)})`,
    meaning: "the traces' `service.name`",
    details: `OpenTelemetry: the traces' service.name; it wins over a service.name in OTEL_RESOURCE_ATTRIBUTES. Empty: that one, else ${DEFAULT_SERVICE_NAME}.`,
  }),
  otelResourceAttributes: setting({
    opentelemetry: true,
    variable: 'OTEL_RESOURCE_ATTRIBUTES',
    kind: keyValueList,
    default: Object.freeze<Record<string, string>>({}),
    meaning: 'more attributes of the service in its traces (`deployment.environment.name=prod`)',
    details:
      'OpenTelemetry: attributes of the service added to its traces, e.g. deployment.environment.name=prod,service.namespace=drive (values percent-encoded).',
  }),
  otelTracesSampler: setting({
    opentelemetry: true,
    variable: 'OTEL_TRACES_SAMPLER',
    kind: {
      ...oneOf(TRACE_SAMPLERS),
      accepts: (code) =>
        `${code('always_on')}, ${code('always_off')}, ${code('traceidratio')}, each also as ${code('parentbased_...')}`,
    },
    default: 'parentbased_always_on',
    meaning: "which traces are kept; `parentbased_*` follow an incoming `traceparent`'s decision",
    details:
      'OpenTelemetry: which traces are recorded. The parentbased_ samplers follow the decision of an incoming traceparent and decide themselves only for traces that begin here; traceidratio keeps a share of trace ids (OTEL_TRACES_SAMPLER_ARG).',
  }),
  otelTracesSamplerArg: setting({
    opentelemetry: true,
    variable: 'OTEL_TRACES_SAMPLER_ARG',
    kind: probability,
    default: null,
    defaultNote: () => '(1)',
    meaning: 'the share of traces the ratio samplers keep',
    details:
      'OpenTelemetry: for traceidratio and parentbased_traceidratio, the share of traces kept (0.1: one in ten). Ignored by the other samplers.',
  }),
  otelBspScheduleDelay: setting({
    opentelemetry: true,
    variable: 'OTEL_BSP_SCHEDULE_DELAY',
    kind: integer(0, 600_000),
    default: 5000,
    meaning: 'most time (ms) a finished span waits before it is sent',
    details:
      'OpenTelemetry: the longest a finished span waits before its batch is sent (ms); a full batch (512 spans) leaves at once.',
  }),
  otelBspMaxQueueSize: setting({
    opentelemetry: true,
    variable: 'OTEL_BSP_MAX_QUEUE_SIZE',
    kind: integer(1, 1_000_000),
    default: 2048,
    meaning: 'finished spans held for sending; past it new ones are dropped',
    details:
      'OpenTelemetry: finished spans held while they wait to be sent; past it, new ones are dropped (a collector that is down costs traces, never memory without bound).',
  }),
}

type ValueOf<S> = S extends Setting<infer T> ? T : never
type Settings = typeof SETTINGS
type Values = { readonly [K in keyof Settings]: ValueOf<Settings[K]> }

/** One serving process's settings, one field per entry of SETTINGS but WORKERS. */
export type Config = Omit<Values, 'workers'>

/** A setting of any kind; Kind's methods compare bivariantly, so every Setting<T> is one. */
type AnySetting = Setting<unknown>

function earlierNumber(variable: string, read: ReadonlyMap<string, unknown>): number {
  const value = read.get(variable)
  // A mistake in SETTINGS itself, met by the first loadConfig (DEFAULTS, at import).
  if (typeof value !== 'number') throw new Error(`SETTINGS: ${variable} is not a whole number read earlier`)
  return value
}

/** One setting's value from its flag, else the environment, else its default. */
function readSetting(setting: AnySetting, env: Env, flags: ConfigFlags, read: ReadonlyMap<string, unknown>) {
  const given = setting.flag === undefined ? undefined : flags[setting.flag.option]
  const raw =
    given === undefined ? env[setting.variable] : typeof given === 'boolean' ? onOff.show(given) : given
  const name =
    given === undefined || setting.flag === undefined || setting.flag.blamesVariable === true
      ? setting.variable
      : setting.flag.name
  const fallback =
    setting.default instanceof Derived
      ? (setting.default as Derived<unknown>).compute(earlierNumber(setting.default.from, read))
      : setting.default
  const value = setting.kind.read(raw, name, fallback)
  if (setting.limit !== undefined) {
    const { rule, of } = setting.limit
    const limit = earlierNumber(of, read)
    if (LIMITS[rule].exceeds(value as number, limit)) {
      throw new ConfigError(name, `${LIMITS[rule].error} ${of} (${limit}), got '${String(value)}'`)
    }
  }
  return value
}

function readAll(env: Env, flags: ConfigFlags): Values {
  const read = new Map<string, unknown>()
  const values: Record<string, unknown> = {}
  for (const [key, declared] of Object.entries(SETTINGS) as [string, AnySetting][]) {
    const value = readSetting(declared, env, flags, read)
    read.set(declared.variable, value)
    values[key] = value
  }
  // Each field was read by its own entry's kind, so it has that entry's type.
  return values as Values
}

/** Config from every value read: WORKERS is validated with the rest but belongs to `serve`. */
function servingProcess({ workers: _workers, ...config }: Values): Config {
  return config
}

export function loadConfig(env: Env = process.env, flags: ConfigFlags = {}): Readonly<Config> {
  return Object.freeze(servingProcess(readAll(env, flags)))
}

/** Every variable a setting is read from. */
export const SETTING_VARIABLES: readonly string[] = Object.values(SETTINGS).map(
  (declared) => declared.variable,
)

/** Every setting at its default (nothing set); what a partial configuration is completed with. */
export const DEFAULTS: Readonly<Config> = loadConfig({})

/**
 * WORKERS (or `serve --workers`, which wins): how many processes serve the port (node:cluster),
 * each a whole service with its own cache and database connections; `auto`: one per core this
 * process may use. Read by `serve` alone, apart from Config, which describes one serving process.
 */
export function loadWorkers(env: Env = process.env, flag?: string): number {
  return readSetting(SETTINGS.workers, env, { workers: flag }, new Map()) as number
}

/** One setting as docs/configuration.md and .env.example describe it. */
export interface SettingDoc {
  variable: string
  flag: string | undefined
  /** the default as written in the environment; '' when it is unset */
  default: string
  /** said after the default, when it needs saying */
  defaultNote: Note | undefined
  /** what it accepts, its bounds and relation to others */
  accepts: Note
  meaning: string
  details: string
  /** one of OpenTelemetry's own variables (their own table) */
  opentelemetry: boolean
}

/** The documentation of every setting, in SETTINGS' order, defaults as the loader resolves them. */
export function settingDocs(): SettingDoc[] {
  const defaults = new Map<string, unknown>()
  return (Object.values(SETTINGS) as AnySetting[]).map((declared) => {
    const value = readSetting(declared, {}, {}, defaults)
    defaults.set(declared.variable, value)
    return {
      variable: declared.variable,
      flag: declared.flag?.name,
      default: declared.kind.show(value),
      defaultNote: declared.default instanceof Derived ? declared.default.note : declared.defaultNote,
      accepts: (code) => {
        const { limit } = declared
        const accepts = declared.kind.accepts(code)
        return limit === undefined ? accepts : `${accepts}; ${LIMITS[limit.rule].says} ${code(limit.of)}`
      },
      meaning: declared.meaning,
      details: declared.details,
      opentelemetry: declared.opentelemetry === true,
    }
  })
}
