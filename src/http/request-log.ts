import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

/**
 * One structured line per request (method, route, status, duration; the request id comes
 * with the request's child logger) instead of Fastify's two. Only these fields are logged:
 * never headers, so no cookie or session id can reach the log.
 */
export class RequestLog extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'request_id' })
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 100) / 100,
    }
    if (error) reply.log.error({ ...line, err: error }, 'request failed')
    else reply.log.info(line, 'request')
  }
}
