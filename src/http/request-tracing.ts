import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import type { AppMetrics } from './metrics.js'
import { RequestCompletion } from './plugins/request-completion.js'
import { lazyRequestLogger } from './plugins/request-logger.js'
import type { Tracing } from '../tracing/tracing.js'

/**
 * The HTTP side of tracing, used by app.ts only when tracing is on: each request handled
 * inside its server span (the span starts before Fastify sees the request and continues an
 * incoming `traceparent`), ended where every request is recorded (the log controller), and
 * its trace and span ids in the request's log lines. Off, app.ts uses none of this and the
 * request path is the one it always was.
 */

/**
 * Runs every request of `server` inside its span: Fastify's request listener (the only one
 * `server` has when this is called, right after Fastify made it) is wrapped, so the async
 * context of everything the request does (hooks, handler, store calls) is the span's.
 */
export function traceRequests(server: Server, tracing: Tracing): void {
  const [fastify, ...others] = server.listeners('request') as RequestListener[]
  if (fastify === undefined || others.length > 0) {
    throw new Error(`tracing: expected Fastify's request listener alone, found ${others.length + 1}`)
  }
  server.removeListener('request', fastify)
  server.on('request', (request: IncomingMessage, response: ServerResponse) =>
    tracing.serve(request, response, () => fastify.call(server, request, response)),
  )
}

/** {@link RequestCompletion} that also ends the request's span with its route and status. */
export class TracedRequestCompletion extends RequestCompletion {
  constructor(
    metrics: AppMetrics,
    private readonly tracing: Tracing,
  ) {
    super(metrics)
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    super.requestCompleted(error, request, reply)
    this.tracing.answered(request.raw, {
      route: request.routeOptions.url ?? null,
      status: reply.statusCode,
      clientAddress: request.ip,
      requestId: request.id,
    })
  }
}

/** Request loggers whose lines carry `trace_id`, `span_id` and `trace_flags` beside `request_id`. */
export function tracedRequestLogger(
  tracing: Tracing,
): NonNullable<FastifyServerOptions['childLoggerFactory']> {
  return function (logger, bindings, options, raw) {
    const ids = tracing.logFields(raw)
    return lazyRequestLogger.call(
      this,
      logger,
      ids === null ? bindings : { ...bindings, ...ids },
      options,
      raw,
    )
  }
}
