import type { FastifyInstance } from 'fastify'
import { METRICS_PATH, type AppMetrics } from '../http/metrics.js'

/** GET /metrics on the main listener (when METRICS_PORT does not move it elsewhere). */
export const metricsRoute = (
  app: FastifyInstance,
  { metrics }: { metrics: AppMetrics },
  done: (err?: Error) => void,
) => {
  app.get(METRICS_PATH, { schema: { hide: true } }, async (_request, reply) => {
    reply.type(metrics.contentType).header('cache-control', 'no-store')
    return metrics.render()
  })
  done()
}
