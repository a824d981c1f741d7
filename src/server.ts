import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp, type AppOptions } from './app.js'
import type { Config } from './config.js'
import { openStore } from './store/open-store.js'
import type { Store } from './store/store.js'

/**
 * The process side of the service (DESIGN habit 1): open the store, build the app, listen,
 * and on SIGTERM or SIGINT stop accepting connections, let in-flight requests finish, close
 * the database and exit 0; past shutdownTimeoutMs the process exits 1 anyway.
 */

export interface ListenOptions {
  /** an already open store (tests); by default the one config.databaseUrl names */
  store?: Store
  logger?: AppOptions['logger']
}

/** Levels at which Fastify's own "listening" lines would be written. */
const VERBOSE_LEVELS = ['trace', 'debug', 'info']

/**
 * Builds the app and listens, without touching signals. The app owns the store: closing the
 * app (see {@link stopServer}) closes it.
 */
export async function listen(
  config: Readonly<Config>,
  options: ListenOptions = {},
): Promise<FastifyInstance> {
  const store = options.store ?? (await openStore(config))
  let app: FastifyInstance
  try {
    app = await buildApp({ store, config, logger: options.logger })
  } catch (error) {
    await store.close()
    throw error
  }
  app.addHook('onClose', () => store.close())
  // Fastify logs a "listening" line per interface (several for 0.0.0.0); CONTRACT section 8
  // asks for one line with the address, so its lines are muted and ours is written instead.
  const level = app.log.level
  if (VERBOSE_LEVELS.includes(level)) app.log.level = 'warn'
  let address: string
  try {
    address = await app.listen({ host: config.host, port: config.port })
  } catch (error) {
    await app.close()
    throw error
  } finally {
    app.log.level = level
  }
  app.log.info({ host: config.host }, `Server listening at ${address}`)
  return app
}

/**
 * Graceful stop, the path SIGTERM and SIGINT take: the listening socket closes at once and
 * idle keep-alive connections are dropped; requests in flight run to completion (their
 * responses carry `Connection: close`); then the database is closed.
 */
export async function stopServer(app: FastifyInstance): Promise<void> {
  await app.close()
}

/**
 * pino writes to stdout asynchronously and flushes synchronously at exit. When the reader of
 * stdout is gone, the pending write fails with EPIPE and pino stops logging, but only once
 * that failure is reported; if the process exits first, the exit-time flush retries the
 * write forever (sonic-boom 4) and the process never ends. A short pause before exiting
 * lets the failure surface.
 */
const LOG_SETTLE_MS = 50

/** The `serve` command: listen, then stop gracefully on a signal and exit. */
export async function startServer(config: Readonly<Config>): Promise<FastifyInstance> {
  const store = await openStore(config)
  const app = await listen(config, { store })

  closeWithGrace(
    {
      delay: config.shutdownTimeoutMs,
      logger: { error: (message: unknown) => app.log.error(message) },
    },
    async ({ signal, err }) => {
      if (err) app.log.error({ err }, 'stopping after an uncaught error')
      else app.log.info({ signal }, 'shutting down: draining requests in flight')
      await stopServer(app)
      app.log.info('stopped')
      await new Promise((resolve) => setTimeout(resolve, LOG_SETTLE_MS))
    },
  )

  if ((await store.countUsers()) === 0) {
    app.log.info('the database has no users yet: run `npx folder-service seed --demo` to load a demo')
  }
  return app
}
