import type { FastifyInstance } from 'fastify'

/**
 * Graceful shutdown of keep-alive connections. app.close() stops listening and drops idle
 * connections, but a connection whose request is still in flight would stay open (idle,
 * keep-alive) after its response, holding the close until the keep-alive timeout. Once
 * closing has begun, every response says `Connection: close`, so the client and Node end
 * the connection right after it, and the client knows not to reuse it.
 */
export function closeConnectionsWhenDraining(app: FastifyInstance): void {
  let draining = false
  app.addHook('preClose', (done) => {
    draining = true
    done()
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close')
    done(null, payload)
  })
}
