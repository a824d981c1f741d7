import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'
import { InstrumentedStore } from '../store/instrumented-store.js'
import type { Store } from '../store/store.js'

/**
 * Prometheus metrics at GET /metrics (text format 0.0.4):
 * - http_requests_total and http_request_duration_seconds by method, route (the route
 *   pattern, never the raw URL: bounded label values) and status;
 * - db_operation_duration_seconds by operation, backend and outcome (a Store decorator);
 * - the process and Node.js defaults of prom-client (CPU, memory, event loop lag, GC...).
 *
 * Each app gets its own Registry, so apps built side by side (tests) never share series.
 * The process defaults live in one registry per process: they describe the process, and
 * collecting them starts observers (GC, event loop) that should exist once.
 */

export const METRICS_PATH = '/metrics'
/** Label of requests that matched no route, so unknown URLs cannot grow the label set. */
export const UNMATCHED_ROUTE = 'unmatched'

let processRegistry: Registry | undefined
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

export class AppMetrics {
  readonly registry = new Registry()
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  })
  private readonly requestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to sending the response, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  })
  private readonly storeSeconds = new Histogram({
    name: 'db_operation_duration_seconds',
    help: 'Duration of Store (database) calls, by operation, backend and outcome',
    labelNames: ['operation', 'backend', 'outcome'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  })

  constructor(private readonly includeProcessMetrics = true) {
    // Started with the first app rather than at the first scrape, so lag and GC are observed from the start.
    if (includeProcessMetrics) processMetrics()
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) }
    this.requests.inc(labels)
    this.requestSeconds.observe(labels, seconds)
  }

  /** `store`, with every call timed into db_operation_duration_seconds. */
  instrument(store: Store): Store {
    const backend = store.kind
    return new InstrumentedStore(store, (operation, outcome, seconds) =>
      this.storeSeconds.observe({ operation, backend, outcome }, seconds),
    )
  }

  async render(): Promise<string> {
    const own = await this.registry.metrics()
    return this.includeProcessMetrics ? own + (await processMetrics().metrics()) : own
  }

  get contentType(): string {
    return this.registry.contentType
  }
}

export const metricsPlugin = fp(
  (app: FastifyInstance, { metrics }: { metrics: AppMetrics }, done: (err?: Error) => void) => {
    app.addHook('onResponse', (request, reply, next) => {
      metrics.observeRequest(
        request.method,
        request.routeOptions.url ?? UNMATCHED_ROUTE,
        reply.statusCode,
        reply.elapsedTime / 1000,
      )
      next()
    })
    app.get(METRICS_PATH, { schema: { hide: true } }, async (_request, reply) => {
      reply.type(metrics.contentType).header('cache-control', 'no-store')
      return metrics.render()
    })
    done()
  },
  { name: 'metrics' },
)
