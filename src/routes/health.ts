import { Type } from '@sinclair/typebox'
import type { FastifyPluginCallback } from 'fastify'
import { Problem } from '../schemas/problem.js'
import { refTo } from '../schemas/ref.js'
import type { ServingStore } from '../store/store.js'
import { problems, sendProblem } from '../http/problems.js'

/**
 * Liveness and readiness, described in the OpenAPI document without authentication. /healthz
 * never touches the database (a database outage must not get healthy instances restarted);
 * /readyz does, so a load balancer stops sending traffic to an instance that cannot serve
 * it: 503 problem+json (UNAVAILABLE, Retry-After) while the database is unreachable, and
 * from the moment a shutdown begins (see http/plugins/drain.ts).
 */
const OPERATIONS = { tags: ['operations'], security: [] }

const healthSchema = {
  ...OPERATIONS,
  operationId: 'checkHealth',
  summary: 'Liveness: the process answers (never touches the database)',
  response: { 200: Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false }) },
}

const readinessSchema = {
  ...OPERATIONS,
  operationId: 'checkReadiness',
  summary: 'Readiness: the database answers and no shutdown has begun',
  response: {
    200: Type.Object({ status: Type.Literal('ready') }, { additionalProperties: false }),
    503: refTo(Problem),
  },
}

export const healthRoutes: FastifyPluginCallback<{ store: ServingStore }> = (app, { store }, done) => {
  app.get('/healthz', { schema: healthSchema }, () => ({ status: 'ok' }))
  app.get('/readyz', { schema: readinessSchema }, async (request, reply) => {
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
