import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import fastifyCookie from '@fastify/cookie'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from './config.js'
import type { Store } from './store/store.js'
import { problemsPlugin } from './http/problems.js'
import { REQUEST_ID_HEADER, requestIdFor } from './http/request-id.js'
import { RequestLog } from './http/request-log.js'
import { foldersRoutes } from './routes/folders.js'
import { healthRoutes } from './routes/health.js'

/**
 * The whole HTTP application, built without listening (DESIGN habit 1): server.ts gives it
 * a socket, tests drive it with app.inject.
 */

export type AppConfig = Pick<Config, 'logLevel' | 'keepAliveTimeoutMs' | 'requestTimeoutMs'>

export interface AppOptions {
  store: Store
  config: Readonly<AppConfig>
  /** pino options, or false for silence (tests); defaults to JSON logs at config.logLevel */
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

export async function buildApp({ store, config, logger }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger ?? { level: config.logLevel, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } },
    genReqId: requestIdFor,
    logController: new RequestLog(),
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id)
    done()
  })

  // Parsed on demand by the auth hook only: no other route reads cookies.
  await app.register(fastifyCookie, { hook: false })
  await app.register(problemsPlugin)
  await app.register(healthRoutes, { store })
  await app.register(foldersRoutes, { store })
  return app
}
