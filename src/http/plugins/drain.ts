import type { FastifyInstance, FastifyReply } from 'fastify'
import fp from 'fastify-plugin'

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

export const drainPlugin = fp(
  (app: FastifyInstance, _options: object, done: (err?: Error) => void) => {
    const state: DrainState = { draining: false }
    app.decorate('drainState', state)
    app.addHook('preClose', (next) => {
      state.draining = true
      next()
    })
    app.addHook('onSend', (_request, reply, payload, next) => {
      closeWhenDraining(state, reply)
      next(null, payload)
    })
    done()
  },
  { name: 'drain' },
)

/**
 * `Connection: close` on an answer written while draining: the hook above for every reply,
 * and the feeds' prepared answers written without Fastify's send (http/feeds/prepared-answer.ts).
 */
export function closeWhenDraining(state: DrainState, reply: Pick<FastifyReply, 'header'>): void {
  if (state.draining) reply.header('connection', 'close')
}

/** Starts answering with `Connection: close` and 503 on /readyz, still listening. */
export function beginDraining(app: FastifyInstance): void {
  app.drainState.draining = true
}
