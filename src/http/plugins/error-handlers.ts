import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { problems, sendProblem, toProblem } from '../problems.js'

/**
 * The app's error and not-found handlers: every thrown error and every unknown route leaves
 * as problem+json (docs/api.md "Errors"); a 5xx is logged with its cause, which its body hides.
 */
export const problemsPlugin = fp(
  (app: FastifyInstance) => {
    app.setErrorHandler((error, request, reply) => {
      const problem = toProblem(error)
      if (problem.status >= 500) {
        request.log.error({ err: error }, problem.status === 503 ? 'database unavailable' : 'unhandled error')
      }
      return sendProblem(request, reply, problem)
    })
    app.setNotFoundHandler((request, reply) => sendProblem(request, reply, problems.routeNotFound()))
  },
  { name: 'problems' },
)
