import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * Request ids: an incoming X-Request-Id is kept when it is well formed (so a trace spans
 * the load balancer and this service), otherwise a UUID is made. Well formed means short
 * and free of anything that could forge a log line or a header.
 */

export const REQUEST_ID_HEADER = 'x-request-id'
const WELL_FORMED = /^[A-Za-z0-9._:@/+=-]{1,128}$/

export function requestIdFor(raw: IncomingMessage): string {
  const incoming = raw.headers[REQUEST_ID_HEADER]
  return typeof incoming === 'string' && WELL_FORMED.test(incoming) ? incoming : randomUUID()
}

/** Every answer carries its request id (Fastify's genReqId is {@link requestIdFor}). */
export const requestIdPlugin = fp(
  (app: FastifyInstance, _options: object, done: (err?: Error) => void) => {
    app.addHook('onRequest', (request, reply, next) => {
      reply.header(REQUEST_ID_HEADER, request.id)
      next()
    })
    done()
  },
  { name: 'request-id' },
)
