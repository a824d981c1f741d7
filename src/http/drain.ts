import type { FastifyInstance } from 'fastify'

/**
 * Graceful shutdown of keep-alive connections. app.close() stops listening and drops idle
 * connections, but a connection whose request is still in flight would stay open (idle,
 * keep-alive) after its response, holding the close until the keep-alive timeout. Once
 * draining has begun, every response says `Connection: close`, so the client and Node end
 * the connection right after it, and the client knows not to reuse it.
 *
 * Draining begins at app.close(), or earlier with {@link beginDraining}: the shutdown
 * delay (SHUTDOWN_DELAY_MS), during which the listener stays open and /readyz says 503 so
 * that load balancers stop routing here before connections would be refused.
 */

export interface DrainState {
  draining: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    /** shared by every context of the app (a root decoration) */
    drainState: DrainState
  }
}

export function closeConnectionsWhenDraining(app: FastifyInstance): void {
  const state: DrainState = { draining: false }
  app.decorate('drainState', state)
  app.addHook('preClose', (done) => {
    state.draining = true
    done()
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (state.draining) reply.header('connection', 'close')
    done(null, payload)
  })
}

/** Starts answering with `Connection: close` and 503 on /readyz, still listening. */
export function beginDraining(app: FastifyInstance): void {
  app.drainState.draining = true
}
