import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  context,
  diag,
  DiagLogLevel,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from '@opentelemetry/sdk-trace'
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_DB_NAMESPACE,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_QUERY_SUMMARY,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PEER_ADDRESS,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
  DB_SYSTEM_NAME_VALUE_POSTGRESQL,
} from '@opentelemetry/semantic-conventions'
import { PACKAGE_VERSION } from '../package-version.js'
import type {
  DatabaseServer,
  SpanAttributes,
  SpanNotes,
  StepOptions,
  Tracing,
  WakeTracing,
} from './tracing.js'
import type { TracingSettings } from './tracing-settings.js'

/**
 * The service's tracing on the OpenTelemetry SDK for Node: the only module that imports it,
 * loaded by start-tracing.ts when OTEL_TRACES_EXPORTER asks for traces. Spans are named by
 * the semantic conventions where they have a name for the thing (HTTP server, database
 * client), by what the service does where they have none (a session check, a wake); the
 * attributes of the service's own are under `folder_service.`.
 *
 * What a span never holds: a header (so no cookie, no session id), a query string, a
 * statement's parameters, a database URL (only host:port and the database's name).
 */

/** Attributes the semantic conventions have not made stable yet, spelled here as their registry does. */
const ATTR_DB_SYSTEM = 'db.system'
const DB_SYSTEM_NAME_VALUE_SQLITE = 'sqlite'
const ATTR_SERVICE_INSTANCE_ID = 'service.instance.id'

/** The service's own attributes. */
const ATTR_REQUEST_ID = 'folder_service.request_id'
const ATTR_DB_ROLE = 'folder_service.db.role'
const ATTR_DB_HOSTS = 'folder_service.db.hosts'
const ATTR_DB_PRIMARY = 'folder_service.db.primary'
const ATTR_WOKEN = 'folder_service.feed.woken'

/** The span names the service gives what the conventions do not name. */
const SPAN_NAMES = {
  primaryWait: 'wait for primary',
  wake: 'feed wake',
  delivery: 'feed delivery',
}

/** HTTP methods the conventions name as they are; any other is `_OTHER`. */
const KNOWN_METHODS = new Set([
  'CONNECT',
  'DELETE',
  'GET',
  'HEAD',
  'OPTIONS',
  'PATCH',
  'POST',
  'PUT',
  'QUERY',
  'TRACE',
])

/** The longest the last spans may take to leave at shutdown: a collector that is down must not hold the stop. */
const FLUSH_AT_SHUTDOWN_MS = 3000

/** One warning line per this much at most about a failing export (a collector down for hours). */
const WARNING_EVERY_MS = 60_000

const NOTHING: SpanNotes = { set: () => undefined }

function sampler(settings: TracingSettings): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(settings.ratio)
  switch (settings.sampler) {
    case 'always_on':
      return new AlwaysOnSampler()
    case 'always_off':
      return new AlwaysOffSampler()
    case 'traceidratio':
      return ratio()
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() })
  }
}

/** The exporter reads its headers, timeout, compression and certificates from OTEL_EXPORTER_OTLP_* itself. */
function exporter(settings: TracingSettings) {
  return settings.protocol === 'http/json'
    ? new JsonExporter({ url: settings.url })
    : new ProtobufExporter({ url: settings.url })
}

function failed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR })
  span.setAttribute(ATTR_ERROR_TYPE, error instanceof Error ? error.name : 'Error')
}

/** Ends `span` when `result` settles (now, when it is no promise); `result` itself is left as it is. */
function endWith(span: Span, result: unknown, isFailure?: (error: unknown) => boolean): void {
  if (!(result instanceof Promise)) {
    span.end()
    return
  }
  result.then(
    () => span.end(),
    (error: unknown) => {
      if (isFailure?.(error) ?? true) failed(span, error)
      span.end()
    },
  )
}

const isRecorded = (parent: Context): boolean => trace.getSpan(parent)?.isRecording() === true

const traceFlags = (spanContext: SpanContext) => spanContext.traceFlags.toString(16).padStart(2, '0')

/** `host:port` as the conventions split it; a bracketed IPv6 address loses its brackets. */
function serverAttributes(target: string): SpanAttributes {
  const at = target.lastIndexOf(':')
  const host = at === -1 ? target : target.slice(0, at)
  const port = Number(at === -1 ? NaN : target.slice(at + 1))
  const attributes: SpanAttributes = { [ATTR_SERVER_ADDRESS]: host.replace(/^\[(.*)\]$/, '$1') }
  if (Number.isInteger(port)) attributes[ATTR_SERVER_PORT] = port
  return attributes
}

interface Wake {
  context: SpanContext
  /** performance.now() when the read that woke began */
  at: number
}

class OtelTracing implements Tracing {
  /** each request's server span, from serve to answered */
  private readonly requests = new WeakMap<IncomingMessage, Span>()
  /** each woken follower's wake, until its next delivered answer */
  private readonly wokenBy = new WeakMap<object, Wake>()
  private log: { warn(object: object, message: string): void } | null = null

  constructor(
    private readonly provider: TracerProvider,
    private readonly tracer: Tracer,
  ) {}

  serve(request: IncomingMessage, response: ServerResponse, handle: () => void): void {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers)
    const method = request.method ?? 'GET'
    const known = KNOWN_METHODS.has(method)
    const span = this.tracer.startSpan(known ? method : 'HTTP', { kind: SpanKind.SERVER }, parent)
    // An unsampled request costs its ids and this span object, no attributes.
    if (span.isRecording()) {
      const path = request.url ?? '/'
      const query = path.search(/[?#]/)
      span.setAttributes({
        [ATTR_HTTP_REQUEST_METHOD]: known ? method : '_OTHER',
        [ATTR_URL_PATH]: query === -1 ? path : path.slice(0, query),
        [ATTR_URL_SCHEME]: 'http',
        [ATTR_NETWORK_PROTOCOL_VERSION]: request.httpVersion,
      })
      if (!known) span.setAttribute(ATTR_HTTP_REQUEST_METHOD_ORIGINAL, method)
      const agent = request.headers['user-agent']
      if (agent !== undefined) span.setAttribute(ATTR_USER_AGENT_ORIGINAL, agent)
      const peer = request.socket.remoteAddress
      if (peer !== undefined) span.setAttribute(ATTR_NETWORK_PEER_ADDRESS, peer)
    }
    this.requests.set(request, span)
    // W3C Trace Context Level 2: the caller learns which span answered, and whether it was kept.
    const ids = span.spanContext()
    response.setHeader('traceresponse', `00-${ids.traceId}-${ids.spanId}-${traceFlags(ids)}`)
    // A client that leaves before its answer: the span still ends, after the listeners that
    // report the request with its route (an event stream's), which Fastify alone never does.
    response.once('close', () => setImmediate(() => this.left(request)))
    context.with(trace.setSpan(parent, span), handle)
  }

  answered(
    request: IncomingMessage,
    answer: { route: string | null; status: number; clientAddress: string; requestId: string },
  ): void {
    const span = this.requests.get(request)
    if (span === undefined) return
    this.requests.delete(request)
    if (span.isRecording()) {
      const method = request.method ?? 'GET'
      const name = KNOWN_METHODS.has(method) ? method : 'HTTP'
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, answer.status)
      span.setAttribute(ATTR_CLIENT_ADDRESS, answer.clientAddress)
      span.setAttribute(ATTR_REQUEST_ID, answer.requestId)
      if (answer.route !== null) {
        span.setAttribute(ATTR_HTTP_ROUTE, answer.route)
        span.updateName(`${name} ${answer.route}`)
      }
      // A server span fails with the server's errors only; a 4xx is the client's.
      if (answer.status >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR })
        span.setAttribute(ATTR_ERROR_TYPE, String(answer.status))
      }
    }
    span.end()
  }

  private left(request: IncomingMessage): void {
    const span = this.requests.get(request)
    if (span === undefined) return
    this.requests.delete(request)
    if (span.isRecording()) span.setAttribute(ATTR_ERROR_TYPE, 'client_left')
    span.end()
  }

  logFields(request: IncomingMessage): Record<string, string> | null {
    const span = this.requests.get(request)
    if (span === undefined) return null
    const ids = span.spanContext()
    return { trace_id: ids.traceId, span_id: ids.spanId, trace_flags: traceFlags(ids) }
  }

  step<T>(name: string, work: (span: SpanNotes) => Promise<T>, options?: StepOptions): Promise<T> {
    const parent = context.active()
    if (!isRecorded(parent)) return work(NOTHING)
    const span = this.tracer.startSpan(name, { attributes: options?.attributes }, parent)
    return this.within(span, parent, work, options?.failed)
  }

  annotate(key: string, value: string | number | boolean): void {
    const span = trace.getSpan(context.active())
    if (span?.isRecording() === true) span.setAttribute(key, value)
  }

  root<T>(
    name: string,
    work: (span: SpanNotes) => Promise<T>,
    carrier: { traceparent?: string | undefined; tracestate?: string | undefined } = {},
  ): Promise<T> {
    const parent = propagation.extract(ROOT_CONTEXT, carrier)
    const span = this.tracer.startSpan(name, {}, parent)
    return this.within(span, parent, work)
  }

  private within<T>(
    span: Span,
    parent: Context,
    work: (span: SpanNotes) => Promise<T>,
    isFailure?: (error: unknown) => boolean,
  ): Promise<T> {
    const notes: SpanNotes = { set: (key, value) => span.setAttribute(key, value) }
    let result: Promise<T>
    try {
      result = context.with(trace.setSpan(parent, span), () => work(notes))
    } catch (error) {
      if (isFailure?.(error) ?? true) failed(span, error)
      span.end()
      throw error
    }
    endWith(span, result, isFailure)
    return result
  }

  storeCall(backend: string, operation: string, run: () => unknown): unknown {
    const parent = context.active()
    if (!isRecorded(parent)) return run()
    const system = backend === 'postgres' ? DB_SYSTEM_NAME_VALUE_POSTGRESQL : DB_SYSTEM_NAME_VALUE_SQLITE
    // SQLite's statements run inside the call, synchronously: the call is the database client
    // span. PostgreSQL's call holds its statements' client spans (statement below).
    const span = this.tracer.startSpan(
      operation,
      {
        kind: backend === 'postgres' ? SpanKind.INTERNAL : SpanKind.CLIENT,
        attributes: {
          [ATTR_DB_SYSTEM_NAME]: system,
          [ATTR_DB_SYSTEM]: system,
          [ATTR_DB_OPERATION_NAME]: operation,
        },
      },
      parent,
    )
    let result: unknown
    try {
      result = context.with(trace.setSpan(parent, span), run)
    } catch (error) {
      failed(span, error)
      span.end()
      throw error
    }
    endWith(span, result)
    return result
  }

  statement<T>(name: string, server: DatabaseServer, run: () => Promise<T>): Promise<T> {
    const parent = context.active()
    if (!isRecorded(parent)) return run()
    const span = this.tracer.startSpan(
      name,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR_DB_SYSTEM_NAME]: DB_SYSTEM_NAME_VALUE_POSTGRESQL,
          [ATTR_DB_SYSTEM]: DB_SYSTEM_NAME_VALUE_POSTGRESQL,
          [ATTR_DB_QUERY_SUMMARY]: name,
          [ATTR_DB_NAMESPACE]: server.database,
          [ATTR_DB_ROLE]: server.role,
          ...serverAttributes(server.target),
        },
      },
      parent,
    )
    return this.within(span, parent, run)
  }

  primaryWait(targets: string): { end(found: string | null): void } {
    const parent = context.active()
    if (!isRecorded(parent)) return { end: () => undefined }
    const span = this.tracer.startSpan(
      SPAN_NAMES.primaryWait,
      { attributes: { [ATTR_DB_HOSTS]: targets } },
      parent,
    )
    return {
      end(found) {
        if (found === null) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: 'no primary found in time' })
          span.setAttribute(ATTR_ERROR_TYPE, 'no_primary')
        } else span.setAttribute(ATTR_DB_PRIMARY, found)
        span.end()
      },
    }
  }

  wakes(): WakeTracing {
    return {
      detached: <T>(work: () => T): T => context.with(ROOT_CONTEXT, work),
      woke: (targets, startedAt, deliver) => {
        const span = this.tracer.startSpan(SPAN_NAMES.wake, {
          root: true,
          startTime: startedAt,
          attributes: { [ATTR_WOKEN]: targets.length },
        })
        const wake: Wake = { context: span.spanContext(), at: startedAt }
        for (const target of targets) this.wokenBy.set(target, wake)
        try {
          context.with(trace.setSpan(ROOT_CONTEXT, span), deliver)
        } finally {
          span.end()
        }
      },
    }
  }

  delivered(follower: object, attributes: SpanAttributes, request?: IncomingMessage): void {
    const wake = this.wokenBy.get(follower)
    this.wokenBy.delete(follower)
    const served = request === undefined ? undefined : this.requests.get(request)
    const parent = served === undefined ? context.active() : trace.setSpan(ROOT_CONTEXT, served)
    if (!isRecorded(parent)) return
    this.tracer
      .startSpan(
        SPAN_NAMES.delivery,
        {
          attributes,
          ...(wake === undefined ? {} : { startTime: wake.at, links: [{ context: wake.context }] }),
        },
        parent,
      )
      .end()
  }

  reportTo(log: { warn(object: object, message: string): void }): void {
    this.log = log
  }

  /** The SDK's warnings and errors (an export that failed), at most one line a minute. */
  readonly diagnostics = (() => {
    let lastAt = -Infinity
    let held = 0
    const write = (message: string, ...args: unknown[]) => {
      const now = performance.now()
      if (now - lastAt < WARNING_EVERY_MS) {
        held++
        return
      }
      lastAt = now
      const detail = args.map((arg) => (arg instanceof Error ? arg.message : String(arg))).join(' ')
      this.log?.warn({ suppressed: held }, `tracing: ${message}${detail === '' ? '' : ` ${detail}`}`)
      held = 0
    }
    return {
      error: write,
      warn: write,
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    }
  })()

  async shutdown(): Promise<void> {
    await Promise.race([this.provider.shutdown(), sleep(FLUSH_AT_SHUTDOWN_MS, undefined, { ref: false })])
    trace.disable()
    context.disable()
    propagation.disable()
    diag.disable()
  }
}

/** The SDK set up as `settings` say, registered as the process's OpenTelemetry. */
export function openTelemetryTracing(settings: TracingSettings): Tracing {
  const resource = defaultResource().merge(
    resourceFromAttributes({
      [ATTR_SERVICE_VERSION]: PACKAGE_VERSION,
      [ATTR_SERVICE_INSTANCE_ID]: randomUUID(),
      ...settings.resource,
      [ATTR_SERVICE_NAME]: settings.resource[ATTR_SERVICE_NAME] ?? 'folder-service',
    }),
  )
  const provider = new TracerProvider({
    resource,
    sampler: sampler(settings),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: exporter(settings),
        scheduledDelayMillis: settings.scheduleDelayMs,
        maxQueueSize: settings.maxQueueSize,
        maxExportBatchSize: Math.min(512, settings.maxQueueSize),
      }),
    ],
  })
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  trace.setGlobalTracerProvider(provider)
  const tracing = new OtelTracing(provider, provider.getTracer('folder-service', PACKAGE_VERSION))
  diag.setLogger(tracing.diagnostics, DiagLogLevel.WARN)
  return tracing
}
