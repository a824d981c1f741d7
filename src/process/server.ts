import type { AddressInfo } from 'node:net'
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp, type AppOptions } from '../app.js'
import { inWorker, isFirstWorker, onPrimaryShutdown, tellPrimary } from './cluster.js'
import type { Config } from '../config.js'
import { boundConnections } from '../http/connection-limits.js'
import { beginDraining } from '../http/plugins/drain.js'
import { startPruning } from '../feed/change-pruning.js'
import { AppMetrics, metricsServer } from '../http/metrics.js'
import { openStore } from '../store/open-store.js'
import type { Store } from '../store/store.js'
import { announceListening } from '../service-url.js'
import { startTracing, stopTracing } from '../tracing/start-tracing.js'
import { tracingSettings } from '../tracing/tracing-settings.js'

/**
 * The process side of the service (app.ts is the rest): open the store, build the app, listen,
 * and on SIGTERM or SIGINT turn /readyz 503 and keep answering for shutdownDelayMs, then
 * stop accepting connections, let in-flight requests finish, close the database and exit 0;
 * past shutdownDelayMs + shutdownTimeoutMs the process exits 1 anyway.
 */

export interface ListenOptions {
  /** the open store the app serves; the app owns it from here (closing the app closes it) */
  store: Store
  logger?: AppOptions['logger']
  /** false: leave the "listening" line to the caller (the cluster's primary writes one for all) */
  announce?: boolean
}

/** Levels at which Fastify's own "listening" lines would be written. */
const VERBOSE_LEVELS = ['trace', 'debug', 'info']

/**
 * Builds the app and listens, without touching signals. The app owns the store: closing the
 * app closes it. Closing is also the graceful stop SIGTERM and SIGINT take: the listening
 * socket closes at once and idle keep-alive connections are dropped; requests in flight run
 * to completion (their responses carry `Connection: close`); then the database is closed.
 */
export async function listen(config: Readonly<Config>, options: ListenOptions): Promise<FastifyInstance> {
  const { store } = options
  const metrics = new AppMetrics()
  let app: FastifyInstance
  try {
    app = await buildApp({ store, config, logger: options.logger, metrics })
  } catch (error) {
    await store.close()
    throw error
  }
  const pruning = startPruning(store, {
    retentionDays: config.changeRetentionDays,
    onError: (err) => app.log.warn({ err }, 'pruning the change log failed; trying again later'),
  })
  // A pruning run in progress ends before the database closes.
  app.addHook('onClose', async () => {
    await pruning.stop()
    await store.close()
  })
  boundConnections(app.server, config.maxConnections, app.log)
  store.onReplicaRefused?.((replica, reason) =>
    app.log.warn(
      { replica, reason },
      `DATABASE_READ_URLS: ${replica} is not a streaming replica of DATABASE_URL's database (${reason}); it is not read`,
    ),
  )
  // One line per change of primary (host:port only, never the URL's password).
  store.onPrimaryChange?.(({ from, to, withoutPrimaryMs }) =>
    app.log.warn(
      { from, to, withoutPrimaryMs },
      `DATABASE_URL: the primary moved from ${from} to ${to} (${withoutPrimaryMs} ms without one)`,
    ),
  )
  if (config.metricsPort !== null) {
    try {
      await listenForMetrics(app, metrics, config.metricsHost, config.metricsPort)
    } catch (error) {
      await app.close()
      throw error
    }
  }
  // Fastify logs a "listening" line per interface (several for 0.0.0.0); README "Command line"
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
  if (options.announce !== false) {
    announceListening(config, address, (message) => app.log.info({ host: config.host }, message))
  }
  return app
}

/** The address as Fastify's own line shows it (the first listening address). */
function listeningAddress(app: FastifyInstance): string {
  const address = app.server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return `http://${host}:${address.port}`
}

/** /metrics alone on METRICS_HOST:METRICS_PORT, closed with the app. */
async function listenForMetrics(app: FastifyInstance, metrics: AppMetrics, host: string, port: number) {
  const server = metricsServer(metrics)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  app.log.info({ host }, `Metrics served at http://${shown}:${address.port}/metrics`)
  // server.close also drops idle keep-alive connections (Node 19+): a scraper's cannot hold the stop.
  app.addHook('onClose', () => new Promise<void>((resolve) => server.close(() => resolve())))
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
  // Signals are handled from the start, before the first log line can reach whoever reads
  // it: a SIGTERM that follows that line (a supervisor's, a test's) must find the handler.
  // Before the app exists there is nothing to drain, and the process simply exits.
  let app: FastifyInstance | null = null
  // A cluster worker: the primary relays SIGINT (which a terminal sends the whole process
  // group) as its shutdown order, so a worker drains once, not twice; SIGTERM still stops it.
  const worker = inWorker()
  if (worker) process.on('SIGINT', () => {})
  const grace = closeWithGrace(
    {
      delay: config.shutdownDelayMs + config.shutdownTimeoutMs,
      skip: worker ? ['SIGINT'] : [],
      logger: { error: (message: unknown) => (app === null ? undefined : app.log.error(message)) },
    },
    async ({ signal, err }) => {
      if (app === null) return
      if (err) app.log.error({ err }, 'stopping after an uncaught error')
      else if (config.shutdownDelayMs > 0) {
        // Still listening: connections a load balancer opens before it sees /readyz fail
        // are answered (with Connection: close), not refused or reset.
        beginDraining(app)
        app.log.info(
          { signal, delay_ms: config.shutdownDelayMs },
          'shutting down: not ready, still answering until the delay ends',
        )
        await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs))
      }
      if (!err) app.log.info({ signal }, 'shutting down: draining requests in flight')
      await app.close()
      // The last requests' spans leave before the process does (a bounded wait).
      await stopTracing()
      app.log.info('stopped')
      await new Promise((resolve) => setTimeout(resolve, LOG_SETTLE_MS))
    },
  )
  if (worker) {
    let ordered = false
    onPrimaryShutdown(() => {
      if (!ordered) void grace.close()
      ordered = true
    })
  }
  // Before the store and the app: both are built traced or not, once (src/tracing/).
  const tracing = await startTracing(config)
  const store = await openStore(config)
  const listening = await listen(config, { store, announce: !worker })
  app = listening
  if (tracing !== null) {
    tracing.reportTo(listening.log)
    const settings = tracingSettings(config)
    listening.log.info(
      { url: settings?.url.replace(/[?#].*$/, ''), protocol: settings?.protocol, sampler: settings?.sampler },
      'tracing on: spans are sent over OTLP/HTTP',
    )
  }
  if (worker) tellPrimary({ type: 'listening', address: listeningAddress(listening) })

  if ((!worker || isFirstWorker()) && (await store.countUsers()) === 0) {
    listening.log.info('the database has no users yet: run `npx folder-service seed --demo` to load a demo')
  }
  return listening
}
