import type { FastifyPluginAsync } from 'fastify'
import type { Store } from '../store/store.js'
import { problems } from '../http/problems.js'

/**
 * Liveness and readiness. /healthz never touches the database (a database outage must not
 * get healthy instances restarted); /readyz does, so a load balancer stops sending traffic
 * to an instance that cannot serve it.
 */
export const healthRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get('/healthz', () => ({ status: 'ok' }))
  app.get('/readyz', async () => {
    try {
      await store.ping()
    } catch {
      throw problems.unavailable()
    }
    return { status: 'ready' }
  })
}
