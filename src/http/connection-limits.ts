import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'

/**
 * Bounds on connections, which Node's HTTP server leaves open: its headers timeout starts
 * with the first byte of a request, so a connection that never sends one stayed open for
 * ever (about 20,000 of them exhausted the process's file handles and new clients were
 * refused). A connection that has sent nothing when the headers timeout has passed is
 * closed without an answer; one that has begun a request is Node's to time out (408).
 * Past `maxConnections` open at once, Node closes each new connection as soon as it is
 * accepted, so the process keeps handles, memory and time for the clients it has.
 */
export function boundConnections(server: Server, maxConnections: number, log: FastifyBaseLogger): void {
  server.maxConnections = maxConnections
  const silentMs = server.headersTimeout
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy()
    }, silentMs)
    timer.unref()
    socket.once('close', () => clearTimeout(timer))
  })
  // The first refusal is logged at once, then at most one line per DROP_REPORT_MS with the
  // number refused since: a flood must not flood the log too.
  let dropped = 0
  let quietUntil = 0
  server.on('drop', () => {
    dropped++
    const now = Date.now()
    if (now < quietUntil) return
    log.warn({ dropped, max_connections: maxConnections }, 'connections closed: MAX_CONNECTIONS open')
    dropped = 0
    quietUntil = now + DROP_REPORT_MS
  })
}

const DROP_REPORT_MS = 10_000
