import type { FastifyPluginCallback } from 'fastify'
import type { ServingStore } from '../store/store.js'
import { problems, sendProblem } from '../http/problems.js'

/**
 * Liveness and readiness, left out of the OpenAPI document and of rate limiting. /healthz
 * never touches the database (a database outage must not get healthy instances restarted);
 * /readyz does, so a load balancer stops sending traffic to an instance that cannot serve
 * it: 503 problem+json (UNAVAILABLE, Retry-After) while the database is unreachable, and
 * from the moment a shutdown begins (see http/drain.ts).
 */
export const healthRoutes: FastifyPluginCallback<{ store: ServingStore }> = (app, { store }, done) => {
  app.get('/healthz', { schema: { hide: true } }, () => ({ status: 'ok' }))
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    if (app.drainState.draining) return sendProblem(request, reply, problems.shuttingDown())
    try {
      await store.ping()
    } catch (error) {
      request.log.warn({ err: error }, 'not ready: the database is unreachable')
      return sendProblem(request, reply, problems.unavailable())
    }
    return { status: 'ready' }
  })
  done()
}
