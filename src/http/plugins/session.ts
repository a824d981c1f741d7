import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { SessionUser } from '../../store/store.js'
import type { SessionCookie } from '../auth.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The user bound to the request's session; set by the authenticate hook. */
    sessionUser: SessionUser
    /** The parsed session cookie (requestSessionCookie in http/auth.ts); undefined until first read. */
    sessionCookie: SessionCookie | undefined
  }
}

/**
 * Declares the two request decorations above on the whole app, so that every request has
 * the same shape: the rate limiter and the failed-authentication budget read the cookie in
 * their own contexts, the listing route reads the user.
 */
export const sessionPlugin = fp(
  (app: FastifyInstance, _options: object, done: (err?: Error) => void) => {
    app.decorateRequest('sessionCookie', undefined)
    // Set by `authenticate` before any handler that reads it runs; never read unset.
    app.decorateRequest('sessionUser', null as never)
    done()
  },
  { name: 'session' },
)
