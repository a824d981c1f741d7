import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

/**
 * Request ids: an incoming X-Request-Id is kept when it is well formed (so a trace spans
 * the load balancer and this service), otherwise a UUID is made. Well formed means short
 * and free of anything that could forge a log line or a header. This is Fastify's genReqId;
 * every answer carries the id (request-basics.ts).
 */

export const REQUEST_ID_HEADER = 'x-request-id'
/** A request id a caller may choose (the OpenAPI document states it too). */
export const REQUEST_ID_PATTERN = '^[A-Za-z0-9._:@/+=-]{1,128}$'
const WELL_FORMED = new RegExp(REQUEST_ID_PATTERN)

export function requestIdFor(raw: IncomingMessage): string {
  const incoming = raw.headers[REQUEST_ID_HEADER]
  return typeof incoming === 'string' && WELL_FORMED.test(incoming) ? incoming : randomUUID()
}
