import type { FastifyInstance } from 'fastify'
import { METRICS_PATH, type AppMetrics } from '../http/metrics.js'

const metricsSchema = {
  tags: ['operations'],
  security: [],
  operationId: 'readMetrics',
  summary: 'Prometheus metrics (on METRICS_PORT instead when that is set)',
  response: {
    200: {
      description: 'The metrics in the Prometheus text format',
      content: { 'text/plain': { schema: { type: 'string' } } },
    },
  },
}

/** GET /metrics on the main listener (when METRICS_PORT does not move it elsewhere). */
export const metricsRoute = (
  app: FastifyInstance,
  { metrics }: { metrics: AppMetrics },
  done: (err?: Error) => void,
) => {
  app.get(METRICS_PATH, { schema: metricsSchema }, async (_request, reply) => {
    reply.type(metrics.contentType).header('cache-control', 'no-store')
    return metrics.render()
  })
  done()
}
