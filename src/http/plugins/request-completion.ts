import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { UNMATCHED_ROUTE, type AppMetrics } from '../metrics.js'

/**
 * Every finished request, recorded once: its metrics (http_request_duration_seconds, and
 * so http_requests_total) and one structured log line (method, route, status, duration;
 * the request id comes with the request's logger) instead of Fastify's two. Only these
 * fields are logged: never headers, so no cookie or session id can reach the log.
 *
 * Fastify's log controller rather than an onResponse hook: Fastify calls it at the end of
 * every request, hooks or not, while a hook would add a run of Fastify's hook runner to
 * every request for the same three facts.
 */

/** The levels at which a request line (info) is written. */
const REQUEST_LINE_LEVELS: ReadonlySet<string> = new Set(['info', 'debug', 'trace'])

export class RequestCompletion extends LogController {
  constructor(private readonly metrics: AppMetrics) {
    super({ requestIdLogLabel: 'request_id' })
  }

  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    // Fastify builds a new routeOptions object at each read: read it once.
    const url = request.routeOptions.url
    const elapsedMs = reply.elapsedTime
    this.metrics.observeRequest(request.method, url ?? UNMATCHED_ROUTE, reply.statusCode, elapsedMs / 1000)
    // At warn and above no line is written: nothing is built for it.
    if (!error && !REQUEST_LINE_LEVELS.has(reply.log.level)) return
    const line = {
      method: request.method,
      route: url ?? null,
      status: reply.statusCode,
      duration_ms: Math.round(elapsedMs * 100) / 100,
    }
    if (error) reply.log.error({ ...line, err: error }, 'request failed')
    else reply.log.info(line, 'request')
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the app's request recorder, for replies Fastify does not see finish (see below) */
    requestCompletion: RequestCompletion
  }
}

/** Makes `completion` reachable from every request (a root decoration). */
export function exposeRequestCompletion(app: FastifyInstance, completion: RequestCompletion): void {
  app.decorate('requestCompletion', completion)
}

/**
 * Records a hijacked reply (an event stream) that ended without finishing: Fastify records a
 * request when its response emits 'finish', which a stream the client closed never does.
 */
export function recordHijackedRequest(request: FastifyRequest, reply: FastifyReply): void {
  request.server.requestCompletion.requestCompleted(null, request, reply)
}
