import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import fastifyCookie from '@fastify/cookie'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from './config.js'
import type { Store } from './store/store.js'
import { registerCors } from './http/cors.js'
import { closeConnectionsWhenDraining } from './http/drain.js'
import { clientError, frameworkError, missingHost } from './http/early-errors.js'
import { AppMetrics, metricsPlugin } from './http/metrics.js'
import { openapiPlugin } from './http/openapi.js'
import { problemsPlugin } from './http/problems.js'
import { registerRateLimit } from './http/rate-limit.js'
import { REQUEST_ID_HEADER, requestIdFor } from './http/request-id.js'
import { RequestLog } from './http/request-log.js'
import { addSecurityHeaders } from './http/security-headers.js'
import { docsRoutes } from './routes/docs.js'
import { foldersRoutes } from './routes/folders.js'
import { healthRoutes } from './routes/health.js'
import { ListingCache } from './http/listing-cache.js'

/**
 * The whole HTTP application, built without listening (DESIGN habit 1): server.ts gives it
 * a socket, tests drive it with app.inject.
 */

/**
 * The settings the app reads. The optional ones are off when absent (rate limiting, CORS,
 * proxy trust), so an embedding or a test states what it wants; the server passes the whole
 * validated Config.
 */
export type AppConfig = Pick<Config, 'logLevel' | 'keepAliveTimeoutMs' | 'requestTimeoutMs'> &
  Partial<
    Pick<Config, 'headersTimeoutMs' | 'rateLimitPerMinute' | 'corsOrigins' | 'trustProxy' | 'listingCacheMb'>
  >

export interface AppOptions {
  store: Store
  config: Readonly<AppConfig>
  /**
   * pino options (e.g. `{ level: 'info', stream }` to capture the log), or false for
   * silence; defaults to JSON logs on stdout at config.logLevel. Options given here are
   * merged over the defaults, so redaction stays on.
   */
  logger?: FastifyServerOptions['logger']
}

/** Nothing that authenticates a caller may reach a log line (standards: no secrets in logs). */
export const REDACTED_LOG_PATHS = [
  'req.headers.cookie',
  'req.headers.authorization',
  'res.headers["set-cookie"]',
  'headers.cookie',
  'headers.authorization',
]

function loggerOptions(logger: AppOptions['logger'], level: string): FastifyServerOptions['logger'] {
  if (logger === false) return false
  const defaults = { level, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } }
  return typeof logger === 'object' ? { ...defaults, ...logger } : defaults
}

export async function buildApp({ store, config, logger }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(logger, config.logLevel),
    genReqId: requestIdFor,
    logController: new RequestLog(),
    trustProxy: typeof config.trustProxy === 'object' ? [...config.trustProxy] : (config.trustProxy ?? false),
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    // While draining at shutdown, serve requests that still arrive on open connections (with
    // Connection: close) rather than answer a 503 that is not problem+json.
    return503OnClosing: false,
    // Errors before routing are problem+json too (see http/early-errors.ts); Node's own
    // Host check is replaced by one that answers in that format.
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    http: { requireHostHeader: false },
  }).withTypeProvider<TypeBoxTypeProvider>()
  app.server.headersTimeout = Math.min(config.headersTimeoutMs ?? 20_000, config.requestTimeoutMs)

  app.decorateRequest('sessionCookie', undefined)
  addSecurityHeaders(app)
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id)
    done(missingHost(request))
  })
  closeConnectionsWhenDraining(app)
  await registerCors(app, config.corsOrigins ?? [])

  // Parsed on demand by the auth hook only: no other route reads cookies.
  await app.register(fastifyCookie, { hook: false })
  await app.register(problemsPlugin)

  const metrics = new AppMetrics()
  await app.register(metricsPlugin, { metrics })
  const timedStore = metrics.instrument(store)

  // Before the routes: the document is built from the routes registered after it.
  await app.register(openapiPlugin)
  await app.register(healthRoutes, { store: timedStore })
  await app.register(docsRoutes)

  // The API proper: the only routes that are rate limited.
  const rateLimitPerMinute = config.rateLimitPerMinute ?? 0
  await app.register(async (api) => {
    if (rateLimitPerMinute > 0) await registerRateLimit(api, rateLimitPerMinute)
    const cache = new ListingCache((config.listingCacheMb ?? 0) * 1024 * 1024)
    await api.register(foldersRoutes, { store: timedStore, cache })
  })
  return app
}
