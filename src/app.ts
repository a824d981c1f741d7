import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from './config.js'
import type { ServingStore } from './store/store.js'
import { corsPlugin } from './http/plugins/cors.js'
import { drainPlugin } from './http/plugins/drain.js'
import { ParserRejections, frameworkError } from './http/plugins/early-errors.js'
import { AppMetrics } from './http/metrics.js'
import { SHARED_SCHEMAS } from './schemas/shared-schemas.js'
import { openapiPlugin } from './http/plugins/openapi.js'
import { problemsPlugin } from './http/plugins/error-handlers.js'
import { rateLimitPlugin } from './http/plugins/rate-limit.js'
import { authFailureBudget, authFailureLimitPlugin } from './http/plugins/auth-failures.js'
import { sessionPlugin } from './http/plugins/session.js'
import { requestIdFor } from './http/plugins/request-id.js'
import { requestBasicsPlugin } from './http/plugins/request-basics.js'
import { RequestCompletion, exposeRequestCompletion } from './http/plugins/request-completion.js'
import { lazyRequestLogger } from './http/plugins/request-logger.js'
import { TracedRequestCompletion, traceRequests, tracedRequestLogger } from './http/request-tracing.js'
import { activeTracing } from './tracing/tracing.js'
import { browserRoutes } from './routes/browser.js'
import { docsRoutes } from './routes/docs.js'
import { foldersRoutes } from './routes/folders.js'
import { healthRoutes } from './routes/health.js'
import { metricsRoute } from './routes/metrics.js'
import { ListingCache } from './http/listing-cache.js'
import { Listings } from './listing/listing.js'
import { DeploymentSealers } from './tokens/token-sealers.js'
import { ChangesFeed } from './feed/changes-feed.js'
import { ChangeWatcher } from './feed/watcher.js'
import { refusedSessions } from './feed/session-recheck.js'
import { changesRoutes } from './routes/changes.js'
import { DEFAULT_EVENT_STREAM_OPTIONS, type EventStreamOptions } from './http/feeds/event-stream.js'
import { TreeFeed } from './feed/tree-feed.js'
import { treeRoutes } from './routes/tree.js'

/**
 * The whole HTTP application, built without listening: process/server.ts gives it
 * a socket, tests drive it with app.inject.
 */

export interface AppOptions {
  store: ServingStore
  /** resolved, every setting present (loadConfig, or DEFAULTS completed by the caller) */
  config: Readonly<Config>
  /** event streams' heartbeat, retry and lifetime, when not the defaults (tests shorten them) */
  eventStream?: Partial<EventStreamOptions>
  /**
   * pino options (e.g. `{ level: 'info', stream }` to capture the log), or false for
   * silence; defaults to JSON logs on stdout at config.logLevel. Options given here are
   * merged over the defaults, so redaction stays on.
   */
  logger?: FastifyServerOptions['logger']
  /** the app's metrics; given by a caller that serves them elsewhere (METRICS_PORT) */
  metrics?: AppMetrics
}

/** Nothing that authenticates a caller may reach a log line (standards: no secrets in logs). */
const REDACTED_LOG_PATHS = [
  'req.headers.cookie',
  'req.headers.authorization',
  'res.headers["set-cookie"]',
  'headers.cookie',
  'headers.authorization',
]

function loggerOptions(logger: AppOptions['logger'], level: string): FastifyServerOptions['logger'] {
  // Silence is a silent logger, not none: Fastify ends a request through the log
  // controller, which records its metrics (http/plugins/request-completion.ts), only when it has one.
  if (logger === false) return { level: 'silent' }
  const defaults = { level, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } }
  return typeof logger === 'object' ? { ...defaults, ...logger } : defaults
}

export async function buildApp({
  store,
  config,
  eventStream: eventStreamOptions,
  logger,
  metrics = new AppMetrics(),
}: AppOptions): Promise<FastifyInstance> {
  const rejections = new ParserRejections(metrics)
  // Tracing on (src/tracing/): requests run in their spans; off, not one step of the path changes.
  const tracing = activeTracing()
  const completion =
    tracing === null ? new RequestCompletion(metrics) : new TracedRequestCompletion(metrics, tracing)
  const app = Fastify({
    logger: loggerOptions(logger, config.logLevel),
    genReqId: requestIdFor,
    logController: completion,
    childLoggerFactory: tracing === null ? lazyRequestLogger : tracedRequestLogger(tracing),
    trustProxy: typeof config.trustProxy === 'object' ? [...config.trustProxy] : config.trustProxy,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    // While draining at shutdown, serve requests that still arrive on open connections (with
    // Connection: close) rather than answer a 503 that is not problem+json.
    return503OnClosing: false,
    // Errors before routing are problem+json too (see http/plugins/early-errors.ts); Node's own
    // Host check is replaced by one that answers in that format.
    frameworkErrors: frameworkError,
    clientErrorHandler: rejections.clientError,
    http: { requireHostHeader: false },
  }).withTypeProvider<TypeBoxTypeProvider>()
  // Fastify's own request listener, alone on the server until the next line adds another.
  if (tracing !== null) traceRequests(app.server, tracing)
  rejections.attach(app)
  exposeRequestCompletion(app, completion)
  // The named response shapes the routes refer to by $ref (and the OpenAPI document names).
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
  // Never above requestTimeoutMs: the configuration holds it there (Node requires it).
  app.server.headersTimeout = config.headersTimeoutMs

  // Everything that changes the app is a plugin, registered in the order its hooks run.
  await app.register(sessionPlugin)
  await app.register(requestBasicsPlugin)
  await app.register(drainPlugin)
  await app.register(corsPlugin, { origins: config.corsOrigins })

  await app.register(problemsPlugin)

  const timedStore = metrics.instrument(store)

  // Before the routes: the document is built from the routes registered after it.
  await app.register(openapiPlugin)

  // Public routes, limited per client address: a fresh cookie must not buy a fresh budget.
  const { rateLimitPerMinute } = config
  await app.register(async (open) => {
    if (rateLimitPerMinute > 0)
      await open.register(rateLimitPlugin, { perMinute: rateLimitPerMinute, by: 'address' })
    await open.register(healthRoutes, { store: timedStore })
    await open.register(docsRoutes)
    if (config.folderBrowser) await open.register(browserRoutes)
    // With METRICS_PORT set, /metrics is served on its own listener instead (process/server.ts).
    if (config.metricsPort === null) {
      await open.register(metricsRoute, { metrics })
    }
  })

  // The API proper, limited per session (per address without a well-formed session cookie).
  await app.register(async (api) => {
    if (rateLimitPerMinute > 0)
      await api.register(rateLimitPlugin, { perMinute: rateLimitPerMinute, by: 'session' })
    const authFailures = authFailureBudget(config.authFailuresPerMinute, rateLimitPerMinute)
    if (authFailures > 0) await api.register(authFailureLimitPlugin, { perMinute: authFailures })
    const cache = new ListingCache(config.listingCacheMb * 1024 * 1024)
    // Answers filed under the old primary's generations: the new one may not hold the same
    // data under the same generation (a commit lost in an asynchronous failover).
    store.onPrimaryChange?.(() => cache.clear())
    const sealers = new DeploymentSealers(timedStore)
    await api.register(foldersRoutes, {
      store: timedStore,
      listings: new Listings(timedStore, sealers),
      cache,
    })
    const watcher = new ChangeWatcher(timedStore, {
      intervalMs: config.longPollIntervalMs,
      maxWaiters: config.longPollMaxWaiters,
      maxPerHolder: config.longPollMaxPerSession,
      onError: (err) => api.log.warn({ err }, 'reading generations for held requests failed'),
      signals: config.feedNotify ? (nudge) => store.changeSignals?.(nudge) ?? null : undefined,
      sessions: {
        everyMs: config.sessionRecheckMs,
        refused: (holders) => refusedSessions(timedStore, holders, Date.now()),
      },
    })
    // Held requests are answered (no changes, the same cursor) before the app stops.
    app.addHook('preClose', (next) => {
      watcher.close()
      next()
    })
    const eventStream = { ...DEFAULT_EVENT_STREAM_OPTIONS, ...eventStreamOptions }
    await api.register(changesRoutes, {
      store: timedStore,
      feed: new ChangesFeed(timedStore, sealers, watcher),
      eventStream,
    })
    await api.register(treeRoutes, {
      store: timedStore,
      feed: new TreeFeed(timedStore, sealers, watcher),
      eventStream,
    })
  })
  return app
}
