import { createServer, STATUS_CODES, type Server } from 'node:http'
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client'
import { LabelledHistogram } from './labelled-histogram.js'
import { instrumented } from '../store/instrumented-store.js'
import { FALLBACK_REASONS, REPLICA_REFUSALS, type ReadRoutingStats } from '../store/replica-stats.js'
import type { ServingStore } from '../store/store.js'
import type { PrimaryStats } from '../store/failover-stats.js'
import { activeTracing } from '../tracing/tracing.js'

/**
 * Prometheus metrics at GET /metrics (text format 0.0.4), on the main listener or on its own
 * (METRICS_HOST, METRICS_PORT):
 * - http_requests_total and http_request_duration_seconds by method, route (the route
 *   pattern, never the raw URL: bounded label values) and status;
 * - db_operation_duration_seconds by operation, backend and outcome (a Store decorator);
 * - with PostgreSQL: db_reads_total (listing reads by target, primary or replica),
 *   db_replica_fallbacks_total (by replica and reason), db_replica_lag_seconds,
 *   db_replica_refused (by replica and reason: not a replica of the primary's database) and
 *   db_primary_statements_total (all the primary was asked), read from
 *   the store at each scrape;
 * - with a PostgreSQL host list: db_primary_changes_total, db_without_primary_seconds_total
 *   and db_primary (the host in use);
 * - the process and Node.js defaults of prom-client (CPU, memory, event loop lag, GC...).
 *
 * Each app gets its own Registry, so apps built side by side (tests) never share series.
 * The process defaults live in one registry per process: they describe the process, and
 * collecting them starts observers (GC, event loop) that should exist once.
 */

export const METRICS_PATH = '/metrics'
/** Label of requests that matched no route, so unknown URLs cannot grow the label set. */
export const UNMATCHED_ROUTE = 'unmatched'

/**
 * The event loop delay monitor's sampling interval (prom-client's default, set here so the
 * docs and the bench can rely on it): a timer every 10 ms records the time since the last,
 * so an idle loop reads 0.010 s in `nodejs_eventloop_lag_*`; the delay is what exceeds it.
 */
export const EVENT_LOOP_RESOLUTION_MS = 10

let processRegistry: Registry | undefined
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({
      register: processRegistry,
      eventLoopMonitoringPrecision: EVENT_LOOP_RESOLUTION_MS,
    })
  }
  return processRegistry
}

const EMPTY_ROUTING: ReadRoutingStats = { primaryReads: 0, primaryStatements: 0, replicas: [] }
const NO_FAILOVER: PrimaryStats = { primary: null, changes: 0, withoutPrimaryMs: 0 }

/** Label of requests refused before routing (HTTP parser errors, Expect, CONNECT). */
export const REJECTED_ROUTE = 'rejected'

export class AppMetrics {
  readonly registry = new Registry()
  private readonly requestSeconds = new LabelledHistogram(
    'http_request_duration_seconds',
    'Time from receiving a request to sending the response, by method, route pattern and status',
    ['method', 'route', 'status'] as const,
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  )
  /** Requests refused before routing, by method and status: counted, not timed. */
  private readonly rejections = new Map<string, { method: string; status: string; count: number }>()
  private readonly storeSeconds = new LabelledHistogram(
    'db_operation_duration_seconds',
    'Duration of Store (database) calls, by operation, backend and outcome',
    ['operation', 'backend', 'outcome'] as const,
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  )

  constructor() {
    // Started with the first app rather than at the first scrape, so lag and GC are observed from the start.
    processMetrics()
    // The registry renders any object of prom-client's metric shape; its type names its own classes only.
    this.registry.registerMetric(this.requestSeconds as unknown as Metric)
    this.registry.registerMetric(this.storeSeconds as unknown as Metric)
    const { requestSeconds, rejections } = this
    // Derived at each scrape from the histogram's counts (every answered request is timed
    // once) and the rejections: one count per request instead of a second series to update.
    new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        for (const { metricName, labels, value } of requestSeconds.get().values) {
          if (metricName === 'http_request_duration_seconds_count') this.inc(labels, value)
        }
        for (const { method, status, count } of rejections.values()) {
          this.inc({ method, route: REJECTED_ROUTE, status }, count)
        }
      },
    })
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requestSeconds.observe([method, route, String(status)], seconds)
  }

  /** A request Node's HTTP server refused before routing: counted, not timed. */
  countRejection(method: string, status: number): void {
    const key = `${method} ${status}`
    const seen = this.rejections.get(key)
    if (seen === undefined) this.rejections.set(key, { method, status: String(status), count: 1 })
    else seen.count++
  }

  /** The primary finder's counters of `store`, copied from it at every scrape. */
  private failoverOf(stats: () => PrimaryStats): void {
    new Counter({
      name: 'db_primary_changes_total',
      help: 'Changes of PostgreSQL primary host this process followed (a switchover or a failover)',
      registers: [this.registry],
      collect() {
        this.reset()
        this.inc(stats().changes)
      },
    })
    new Counter({
      name: 'db_without_primary_seconds_total',
      help: 'Time this process knew no PostgreSQL primary (lost one, searching the hosts), the ongoing stretch included',
      registers: [this.registry],
      collect() {
        this.reset()
        this.inc(stats().withoutPrimaryMs / 1000)
      },
    })
    new Gauge({
      name: 'db_primary',
      help: 'The PostgreSQL host this process uses as the primary (1), by host:port; absent while none is known',
      labelNames: ['host'] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        const { primary } = stats()
        if (primary !== null) this.set({ host: primary }, 1)
      },
    })
  }

  /** The read routing counters of `store`, copied from it at every scrape. */
  private routingOf(stats: () => ReadRoutingStats): void {
    new Counter({
      name: 'db_reads_total',
      help: 'Listing reads (pages, counts, checkpoints) by where they were served: the primary or a replica',
      labelNames: ['target', 'replica'] as const,
      registers: [this.registry],
      collect() {
        const { primaryReads, replicas } = stats()
        this.reset()
        this.inc({ target: 'primary', replica: '' }, primaryReads)
        for (const { name, reads } of replicas) this.inc({ target: 'replica', replica: name }, reads)
      },
    })
    new Counter({
      name: 'db_primary_statements_total',
      help: 'Statements (a transaction counts once) this process sent to the primary, for any purpose',
      registers: [this.registry],
      collect() {
        this.reset()
        this.inc(stats().primaryStatements)
      },
    })
    new Counter({
      name: 'db_replica_fallbacks_total',
      help: 'Listing reads a replica could not serve, answered by the primary, by replica and reason',
      labelNames: ['replica', 'reason'] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        for (const { name, fallbacks } of stats().replicas) {
          for (const reason of FALLBACK_REASONS) this.inc({ replica: name, reason }, fallbacks[reason])
        }
      },
    })
    new Gauge({
      name: 'db_replica_lag_seconds',
      help: 'Replay lag of each replica at its last probe (0: replayed all it received); absent while it is down',
      labelNames: ['replica'] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        for (const { name, lagSeconds } of stats().replicas) {
          if (lagSeconds !== null) this.set({ replica: name }, lagSeconds)
        }
      },
    })
    new Gauge({
      name: 'db_replica_refused',
      help: 'Read replica URLs not read because they are not a streaming replica of the primary database (1 while so), by reason',
      labelNames: ['replica', 'reason'] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        for (const { name, refused } of stats().replicas) {
          for (const reason of REPLICA_REFUSALS)
            this.set({ replica: name, reason }, refused === reason ? 1 : 0)
        }
      },
    })
  }

  /**
   * `store`, with every call timed into db_operation_duration_seconds, and in a span of its own
   * when tracing is on.
   */
  instrument<S extends ServingStore>(store: S): S {
    if (store.readRouting !== undefined) this.routingOf(() => store.readRouting?.() ?? EMPTY_ROUTING)
    // Only a store that follows a moving primary (a host list in DATABASE_URL) has these.
    if (store.primaryFailover?.() !== undefined)
      this.failoverOf(() => store.primaryFailover?.() ?? NO_FAILOVER)
    const backend = store.kind
    const tracing = activeTracing()
    return instrumented(
      store,
      (operation, outcome, seconds) => this.storeSeconds.observe([operation, backend, outcome], seconds),
      tracing === null ? undefined : (operation, run) => tracing.storeCall(backend, operation, run),
    )
  }

  async render(): Promise<string> {
    const own = await this.registry.metrics()
    return own + (await processMetrics().metrics())
  }

  get contentType(): string {
    return this.registry.contentType
  }
}

/**
 * GET /metrics alone on its own address (METRICS_HOST:METRICS_PORT), so a deployment can
 * keep it off the public listener. Nothing else is served there: 404, or 405 with Allow.
 */
export function metricsServer(metrics: AppMetrics): Server {
  return createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]
    const allowed = request.method === 'GET' || request.method === 'HEAD'
    if (path === METRICS_PATH && allowed) {
      metrics.render().then(
        (text) => {
          response.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' })
          response.end(request.method === 'HEAD' ? undefined : text)
        },
        () => {
          response.writeHead(500).end()
        },
      )
      return
    }
    const status = path === METRICS_PATH ? 405 : 404
    const body = JSON.stringify({
      type: 'about:blank',
      title: STATUS_CODES[status],
      status,
      code: status === 405 ? 'METHOD_NOT_ALLOWED' : 'NOT_FOUND',
      detail: status === 405 ? 'Allowed methods: GET, HEAD.' : 'Only /metrics is served here.',
    })
    response.writeHead(status, {
      'content-type': 'application/problem+json; charset=utf-8',
      ...(status === 405 ? { allow: 'GET, HEAD' } : {}),
    })
    response.end(body)
  })
}
