import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ConfigError, loadConfig, type Env } from '../../src/config.js'
import { assertOneLineError } from '../helpers/processes/cli-asserts.js'
import { runCli, ensureBuilt } from '../helpers/processes/cli.js'
import { openStore } from '../../src/store/open-store.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { appOver } from '../helpers/apps/test-app.js'
import { openSeeded, type Seeded } from '../helpers/apps/operability-db.js'
import { replicaSkip } from '../helpers/databases/replica.js'

/** docs/configuration.md: every setting from the environment, validated once, bad values named. */

describe('configuration', () => {
  it('has the documented defaults and is frozen', () => {
    const config = loadConfig({})
    assert.deepEqual(config, {
      databaseUrl: 'sqlite:./data/folder-service.db',
      host: '127.0.0.1',
      port: 3000,
      logLevel: 'info',
      rateLimitPerMinute: 6000,
      authFailuresPerMinute: 60,
      corsOrigins: [],
      trustProxy: false,
      databaseReadUrls: [],
      databasePooler: 'none',
      databaseDirectUrl: null,
      dbPoolSize: 10,
      dbReplicaPoolSize: 5,
      dbReplicaTimeoutMs: 1000,
      dbConnectTimeoutMs: 3000,
      dbStatementTimeoutMs: 5000,
      failoverWaitMs: 10_000,
      sqliteBusyTimeoutMs: 5000,
      keepAliveTimeoutMs: 72_000,
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 20_000,
      maxConnections: 10_000,
      shutdownTimeoutMs: 10_000,
      shutdownDelayMs: 0,
      metricsPort: null,
      metricsHost: '127.0.0.1',
      listingCacheMb: 64,
      folderBrowser: true,
      changeRetentionDays: 30,
      longPollMaxWaiters: 2500,
      longPollMaxPerSession: 4,
      longPollIntervalMs: 250,
      sessionRecheckMs: 5000,
      feedNotify: true,
      otelSdkDisabled: false,
      otelTracesExporter: 'none',
      otelExporterOtlpEndpoint: 'http://localhost:4318',
      otelExporterOtlpTracesEndpoint: '',
      otelExporterOtlpProtocol: 'http/protobuf',
      otelExporterOtlpTracesProtocol: '',
      otelServiceName: '',
      otelResourceAttributes: {},
      otelTracesSampler: 'parentbased_always_on',
      otelTracesSamplerArg: null,
      otelBspScheduleDelay: 5000,
      otelBspMaxQueueSize: 2048,
    })
    assert.ok(Object.isFrozen(config))
    assert.ok(Object.isFrozen(config.corsOrigins))
  })

  it('reads every setting from the environment; flags win over it', () => {
    const env: Env = {
      DATABASE_URL: 'sqlite:/tmp/x.db',
      HOST: '0.0.0.0',
      PORT: '8080',
      LOG_LEVEL: 'debug',
      RATE_LIMIT_PER_MINUTE: '0',
      AUTH_FAILURES_PER_MINUTE: '5',
      CORS_ORIGINS: 'https://a.example,http://localhost:5173',
      TRUST_PROXY: '10.0.0.0/8, ::1',
      DATABASE_READ_URLS: 'postgres://r1.example/app, postgresql://u:p@r2.example:6432/app',
      DATABASE_POOLER: 'transaction',
      DATABASE_DIRECT_URL:
        'postgres://u:p@db1.internal:5432,db2.internal:5432/app?target_session_attrs=read-write',
      DB_POOL_SIZE: '4',
      DB_REPLICA_POOL_SIZE: '2',
      DB_REPLICA_TIMEOUT_MS: '250',
      DB_CONNECT_TIMEOUT_MS: '1000',
      DB_STATEMENT_TIMEOUT_MS: '2000',
      FAILOVER_WAIT_MS: '2500',
      SQLITE_BUSY_TIMEOUT_MS: '0',
      KEEP_ALIVE_TIMEOUT_MS: '65000',
      REQUEST_TIMEOUT_MS: '10000',
      HEADERS_TIMEOUT_MS: '5000',
      MAX_CONNECTIONS: '500',
      SHUTDOWN_TIMEOUT_MS: '3000',
      SHUTDOWN_DELAY_MS: '5000',
      METRICS_HOST: '0.0.0.0',
      METRICS_PORT: '9464',
      LISTING_CACHE_MB: '0',
      FOLDER_BROWSER: 'off',
      CHANGE_RETENTION_DAYS: '7',
      LONG_POLL_MAX_WAITERS: '50',
      LONG_POLL_PER_SESSION: '2',
      LONG_POLL_INTERVAL_MS: '100',
      SESSION_RECHECK_MS: '2000',
      FEED_NOTIFY: 'off',
      OTEL_SDK_DISABLED: 'TRUE',
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.internal:4318/otlp',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://localhost:4318/v1/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'folders',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=prod,team=drive%20core',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_SCHEDULE_DELAY: '1000',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
    }
    assert.deepEqual(loadConfig(env), {
      databaseUrl: 'sqlite:/tmp/x.db',
      host: '0.0.0.0',
      port: 8080,
      logLevel: 'debug',
      rateLimitPerMinute: 0,
      authFailuresPerMinute: 5,
      corsOrigins: ['https://a.example', 'http://localhost:5173'],
      trustProxy: ['10.0.0.0/8', '::1'],
      databaseReadUrls: ['postgres://r1.example/app', 'postgresql://u:p@r2.example:6432/app'],
      databasePooler: 'transaction',
      databaseDirectUrl:
        'postgres://u:p@db1.internal:5432,db2.internal:5432/app?target_session_attrs=read-write',
      dbPoolSize: 4,
      dbReplicaPoolSize: 2,
      dbReplicaTimeoutMs: 250,
      dbConnectTimeoutMs: 1000,
      dbStatementTimeoutMs: 2000,
      failoverWaitMs: 2500,
      sqliteBusyTimeoutMs: 0,
      keepAliveTimeoutMs: 65_000,
      requestTimeoutMs: 10_000,
      headersTimeoutMs: 5000,
      maxConnections: 500,
      shutdownTimeoutMs: 3000,
      shutdownDelayMs: 5000,
      metricsPort: 9464,
      metricsHost: '0.0.0.0',
      listingCacheMb: 0,
      folderBrowser: false,
      changeRetentionDays: 7,
      longPollMaxWaiters: 50,
      longPollMaxPerSession: 2,
      longPollIntervalMs: 100,
      sessionRecheckMs: 2000,
      feedNotify: false,
      otelSdkDisabled: true,
      otelTracesExporter: 'otlp',
      otelExporterOtlpEndpoint: 'https://collector.internal:4318/otlp',
      otelExporterOtlpTracesEndpoint: 'http://localhost:4318/v1/traces',
      otelExporterOtlpProtocol: 'http/json',
      otelExporterOtlpTracesProtocol: 'http/protobuf',
      otelServiceName: 'folders',
      otelResourceAttributes: { 'deployment.environment.name': 'prod', team: 'drive core' },
      otelTracesSampler: 'parentbased_traceidratio',
      otelTracesSamplerArg: 0.25,
      otelBspScheduleDelay: 1000,
      otelBspMaxQueueSize: 100,
    })
    const flagged = loadConfig(env, { db: 'sqlite:/tmp/y.db', host: '::1', port: '0', logLevel: 'warn' })
    assert.equal(flagged.databaseUrl, 'sqlite:/tmp/y.db')
    assert.equal(flagged.host, '::1')
    assert.equal(flagged.port, 0)
    assert.equal(flagged.logLevel, 'warn')
    assert.equal(
      loadConfig({ MAX_CONNECTIONS: '40' }).longPollMaxWaiters,
      10,
      'held requests default to a quarter of the connections',
    )
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
    assert.equal(loadConfig({ FOLDER_BROWSER: 'on' }).folderBrowser, true)
    assert.equal(loadConfig({ FOLDER_BROWSER: 'on' }, { folderBrowser: false }).folderBrowser, false)
    assert.equal(
      loadConfig({ REQUEST_TIMEOUT_MS: '8000' }).headersTimeoutMs,
      8000,
      'headers timeout ≤ request timeout',
    )
  })

  const BAD: [Env, string][] = [
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '65536' }, 'PORT'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ RATE_LIMIT_PER_MINUTE: '-1' }, 'RATE_LIMIT_PER_MINUTE'],
    [{ RATE_LIMIT_PER_MINUTE: '1.5' }, 'RATE_LIMIT_PER_MINUTE'],
    [{ AUTH_FAILURES_PER_MINUTE: '-1' }, 'AUTH_FAILURES_PER_MINUTE'],
    [{ SHUTDOWN_DELAY_MS: '1s' }, 'SHUTDOWN_DELAY_MS'],
    [{ CHANGE_RETENTION_DAYS: '0' }, 'CHANGE_RETENTION_DAYS'],
    [{ CHANGE_RETENTION_DAYS: '30d' }, 'CHANGE_RETENTION_DAYS'],
    [{ LONG_POLL_MAX_WAITERS: '10000' }, 'LONG_POLL_MAX_WAITERS'],
    [{ MAX_CONNECTIONS: '40', LONG_POLL_MAX_WAITERS: '40' }, 'LONG_POLL_MAX_WAITERS'],
    [{ LONG_POLL_MAX_WAITERS: '-1' }, 'LONG_POLL_MAX_WAITERS'],
    [{ LONG_POLL_PER_SESSION: '0' }, 'LONG_POLL_PER_SESSION'],
    [{ LONG_POLL_INTERVAL_MS: '5' }, 'LONG_POLL_INTERVAL_MS'],
    [{ LONG_POLL_INTERVAL_MS: '2000' }, 'LONG_POLL_INTERVAL_MS'],
    [{ SESSION_RECHECK_MS: '50' }, 'SESSION_RECHECK_MS'],
    [{ FEED_NOTIFY: 'maybe' }, 'FEED_NOTIFY'],
    [{ FEED_NOTIFY: 'postgres://listen@db.internal/app' }, 'FEED_NOTIFY'],
    [{ DATABASE_POOLER: 'session' }, 'DATABASE_POOLER'],
    [{ DATABASE_DIRECT_URL: 'mysql://db/app' }, 'DATABASE_DIRECT_URL'],
    [{ DATABASE_DIRECT_URL: 'postgres://u:p@a:1,,b/app' }, 'DATABASE_DIRECT_URL'],
    [{ METRICS_PORT: '65536' }, 'METRICS_PORT'],
    [{ CORS_ORIGINS: 'not-a-url' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://a.example/path' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://a.example,ftp://b.example' }, 'CORS_ORIGINS'],
    [{ TRUST_PROXY: 'yes please' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '2' }, 'TRUST_PROXY'],
    [{ DB_POOL_SIZE: '0' }, 'DB_POOL_SIZE'],
    [{ DATABASE_READ_URLS: 'sqlite:./replica.db' }, 'DATABASE_READ_URLS'],
    [{ DATABASE_READ_URLS: 'postgres://a.example/app,mysql://b.example/app' }, 'DATABASE_READ_URLS'],
    [{ DB_REPLICA_POOL_SIZE: '0' }, 'DB_REPLICA_POOL_SIZE'],
    [{ DB_REPLICA_TIMEOUT_MS: 'fast' }, 'DB_REPLICA_TIMEOUT_MS'],
    [{ KEEP_ALIVE_TIMEOUT_MS: 'soon' }, 'KEEP_ALIVE_TIMEOUT_MS'],
    [{ HEADERS_TIMEOUT_MS: '40000' }, 'HEADERS_TIMEOUT_MS'],
    [{ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS'],
    [{ SHUTDOWN_TIMEOUT_MS: '0' }, 'SHUTDOWN_TIMEOUT_MS'],
    [{ LISTING_CACHE_MB: 'lots' }, 'LISTING_CACHE_MB'],
    [{ FOLDER_BROWSER: 'maybe' }, 'FOLDER_BROWSER'],
  ]

  it('refuses a bad value with an error naming the setting', () => {
    for (const [env, setting] of BAD) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.setting === setting &&
          error.message.startsWith(`${setting}: `),
        JSON.stringify(env),
      )
    }
  })

  it('refuses a read URL pg could not use, or an empty entry, naming the entry without its password', () => {
    for (const value of [
      'postgres://app:s3cret@127.0.0.1:notaport/folders',
      'postgres://app:s3cret@127.0.0.1:99999/folders',
      'postgres://app:s3cret@127.0.0.1:0/folders',
      'postgres://app:s3cret@[::1/folders',
      'postgres://app:s3cret%zz@127.0.0.1/folders',
      'postgres://',
      'postgres://app:s3cret@a.example/app,,',
      'postgres://app:s3cret@a.example/app,',
      ',postgres://app:s3cret@a.example/app',
      ' , ',
    ]) {
      assert.throws(
        () => loadConfig({ DATABASE_READ_URLS: value }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.setting === 'DATABASE_READ_URLS' &&
          !error.message.includes('s3cret') &&
          !error.message.includes('\n'),
        value,
      )
    }
    // and what pg accepts still passes: a socket directory instead of a host, escapes
    assert.deepEqual(
      loadConfig({ DATABASE_READ_URLS: 'postgres:///app?host=/run/postgresql,postgres://u:p%40ss@h:1/app' })
        .databaseReadUrls,
      ['postgres:///app?host=/run/postgresql', 'postgres://u:p%40ss@h:1/app'],
    )
  })

  it('never repeats a read URL (it may hold a password) when refusing one', () => {
    assert.throws(
      () => loadConfig({ DATABASE_READ_URLS: 'postgres://a.example/app,http://user:s3cret@b.example' }),
      (error: unknown) => error instanceof ConfigError && !error.message.includes('s3cret'),
    )
  })

  it('refuses read replicas without a PostgreSQL primary', async () => {
    await assert.rejects(
      openStore({
        ...TEST_SETTINGS,
        databaseUrl: 'sqlite::memory:',
        databaseReadUrls: ['postgres://127.0.0.1:1/none'],
      }),
      (error: unknown) => error instanceof ConfigError && error.setting === 'DATABASE_READ_URLS',
    )
  })

  it('refuses a pooler or a direct URL without a PostgreSQL DATABASE_URL', async () => {
    for (const [settings, setting] of [
      [{ databasePooler: 'transaction' as const }, 'DATABASE_POOLER'],
      [{ databaseDirectUrl: 'postgres://127.0.0.1:1/none' }, 'DATABASE_DIRECT_URL'],
    ] as const) {
      await assert.rejects(
        openStore({ ...TEST_SETTINGS, databaseUrl: 'sqlite::memory:', ...settings }),
        (error: unknown) => error instanceof ConfigError && error.setting === setting,
      )
    }
  })

  describe('through the CLI', () => {
    before(() => ensureBuilt())

    it('a bad value stops `serve` with one line naming the setting and a non-zero exit', async () => {
      // [environment, extra flags, the setting the message must name]; a flag would win over
      // PORT, so that case has none (were validation to let a value through, the server would
      // start on a free port and the run would time out).
      const cases: [Env, string[], string][] = [
        [{ PORT: 'abc' }, [], 'PORT'],
        [{}, ['--port', 'abc'], '--port'],
        [{ LOG_LEVEL: 'loud' }, ['--port', '0'], 'LOG_LEVEL'],
        [{ RATE_LIMIT_PER_MINUTE: '-1' }, ['--port', '0'], 'RATE_LIMIT_PER_MINUTE'],
        [{ CORS_ORIGINS: 'not-a-url' }, ['--port', '0'], 'CORS_ORIGINS'],
        [{ TRUST_PROXY: 'bogus' }, ['--port', '0'], 'TRUST_PROXY'],
        [{ HEADERS_TIMEOUT_MS: '40000' }, ['--port', '0'], 'HEADERS_TIMEOUT_MS'],
      ]
      for (const [env, flags, setting] of cases) {
        const args = ['serve', '--db', 'sqlite::memory:', ...flags]
        const result = await runCli(args, { env, timeoutMs: 15_000 })
        const line = assertOneLineError(result, undefined, [...args, JSON.stringify(env)])
        assert.ok(line.includes(`${setting}:`), `'${line}' names ${setting}`)
      }
    })

    it(
      'beside a real replica, an empty or malformed DATABASE_READ_URLS entry stops `serve` without its password',
      { skip: replicaSkip },
      async () => {
        const primary = process.env.TEST_DATABASE_URL ?? ''
        const replica = process.env.TEST_DATABASE_READ_URL ?? ''
        const password = decodeURIComponent(new URL(replica).password)
        assert.ok(password.length > 0, 'the CI role has a password to hide')
        const badPort = replica.replace(/:[0-9]+\//, ':notaport/')
        for (const readUrls of [`${replica},,`, `,${replica}`, `${replica},${badPort}`]) {
          // the URLs go by environment, so a failure's report does not print them either
          const args = ['serve', '--port', '0']
          const env = { DATABASE_URL: primary, DATABASE_READ_URLS: readUrls }
          const result = await runCli(args, { env, timeoutMs: 15_000 })
          const line = assertOneLineError(result, /: DATABASE_READ_URLS: /, args)
          assert.ok(!`${result.stdout}${result.stderr}`.includes(password), `no password in '${line}'`)
        }
      },
    )
  })
})

describe('server timeouts', () => {
  let seeded: Seeded
  before(async () => {
    seeded = await openSeeded()
  })
  after(() => seeded.cleanup())

  it('keep-alive outlives load balancer idle timeouts; headers and request timeouts are set and consistent', async () => {
    const config = loadConfig({})
    const app = await appOver(seeded.store, config)
    try {
      assert.equal(app.server.keepAliveTimeout, 72_000)
      assert.ok(app.server.keepAliveTimeout > 60_000, 'longer than the usual 60 s LB idle timeout')
      assert.equal(app.server.requestTimeout, 30_000)
      assert.equal(app.server.headersTimeout, 20_000)
      assert.ok(
        app.server.headersTimeout <= app.server.requestTimeout,
        'Node requires headers ≤ request timeout',
      )
    } finally {
      await app.close()
    }
  })
})
