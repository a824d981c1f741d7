import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { isUuid, normaliseUuid } from '../ids.js'
import type { SessionUser, Store } from '../store/store.js'
import { problems } from './problems.js'

/**
 * Session-cookie authentication (spec "Authentication", CONTRACT sections 1 and 3).
 * Runs at onRequest, before the query is validated, so 401 and 403 take precedence
 * over 400 and 404.
 */

export const SESSION_COOKIE = 'session_id'

declare module 'fastify' {
  interface FastifyRequest {
    /** The user bound to the request's session; set by the authenticate hook. */
    sessionUser: SessionUser
  }
}

const MISSING = 'No session: send the session_id cookie.'
const INVALID = 'The session is invalid or has expired.'

/** The session id of a Cookie header: the first `session_id`, lower-cased, if it is a UUID. */
export function sessionIdFrom(
  cookieHeader: string | undefined,
  parse: (header: string) => Record<string, string | undefined>,
): string | null | 'malformed' {
  if (cookieHeader === undefined) return null
  const value = parse(cookieHeader)[SESSION_COOKIE]
  if (value === undefined) return null
  return isUuid(value) ? normaliseUuid(value) : 'malformed'
}

export function authenticate(store: Store, now: () => number = Date.now): onRequestAsyncHookHandler {
  return async function authenticateSession(request: FastifyRequest, _reply: FastifyReply) {
    const sessionId = sessionIdFrom(request.headers.cookie, (h) => request.server.parseCookie(h))
    if (sessionId === null) throw problems.unauthorized(MISSING)
    if (sessionId === 'malformed') throw problems.unauthorized(INVALID)
    const user = await store.findSessionUser(sessionId, now())
    if (user === null) throw problems.unauthorized(INVALID)
    if (user.is_suspended) throw problems.frozen()
    request.sessionUser = user
  }
}
