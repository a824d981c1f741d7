import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { missingHost } from './early-errors.js'
import { REQUEST_ID_HEADER } from './request-id.js'
import { SECURITY_HEADERS } from './security-headers.js'

/**
 * What every request gets before anything else runs: the security headers and its
 * X-Request-Id on the answer (errors included), then the HTTP/1.1 Host check. One hook
 * rather than one per concern: each hook Fastify runs costs a call through its hook runner
 * on every request, and these three never differ by route.
 */
export const requestBasicsPlugin = fp(
  (app: FastifyInstance, _options: object, done: (err?: Error) => void) => {
    app.addHook('onRequest', (request, reply, next) => {
      reply.headers(SECURITY_HEADERS).header(REQUEST_ID_HEADER, request.id)
      next(missingHost(request))
    })
    done()
  },
  { name: 'request-basics' },
)
