import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { parseCookie } from 'cookie'
import { isUuid, normaliseUuid } from '../ids.js'
import type { ServingStore } from '../store/store.js'
import { activeTracing } from '../tracing/tracing.js'
import { problems, toProblem } from './problems.js'

/**
 * Session-cookie authentication (docs/api.md "Authentication" and "Checks, in this order").
 * Runs at onRequest, before the query is validated, so 401 and 403 take precedence
 * over 400 and 404.
 */

const SESSION_COOKIE = 'session_id'

/** The session cookie of a request: a lower-cased UUID, absent, or not a UUID. */
export type SessionCookie = { id: string } | 'missing' | 'malformed'

export const MISSING = 'No session: send the session_id cookie.'
const INVALID = 'The session is invalid or has expired.'

/** The session id of a Cookie header: the first `session_id`, lower-cased, if it is a UUID. */
function sessionIdFrom(
  cookieHeader: string | undefined,
  parse: (header: string) => Record<string, string | undefined>,
): SessionCookie {
  if (cookieHeader === undefined) return 'missing'
  const value = parse(cookieHeader)[SESSION_COOKIE]
  if (value === undefined) return 'missing'
  return isUuid(value) ? { id: normaliseUuid(value) } : 'malformed'
}

/**
 * Cookie values as sent: the parser's default percent-decoding would accept `%35a00...` as
 * the session it spells, and docs/api.md "Authentication" wants the value itself to be a UUID.
 */
const asSent = (value: string): string => value
const parseCookieAsSent = (header: string) => parseCookie(header, { decode: asSent })

/**
 * The request's session id, parsed from the Cookie header once and kept on the request, so
 * the rate limiter (which keys on it) and the authenticate hook share one parse.
 */
export function requestSessionCookie(request: FastifyRequest): SessionCookie {
  let cookie = request.sessionCookie
  if (cookie === undefined) {
    cookie = sessionIdFrom(request.headers.cookie, parseCookieAsSent)
    request.sessionCookie = cookie
  }
  return cookie
}

/** A refusal (401, 403) is the check's answer; only an outage (5xx) is its failure. */
const checkFailed = (error: unknown) => toProblem(error).status >= 500

export function authenticate(
  store: Pick<ServingStore, 'findSessionUser'>,
  now: () => number = Date.now,
): onRequestAsyncHookHandler {
  const check = sessionCheck(store, now)
  const tracing = activeTracing()
  if (tracing === null) return check
  return function tracedSessionCheck(request, reply) {
    return tracing.step('session check', () => check.call(this, request, reply), { failed: checkFailed })
  }
}

function sessionCheck(
  store: Pick<ServingStore, 'findSessionUser'>,
  now: () => number,
): onRequestAsyncHookHandler {
  return async function authenticateSession(request: FastifyRequest, _reply: FastifyReply) {
    const cookie = requestSessionCookie(request)
    if (cookie === 'missing') throw problems.unauthorized(MISSING)
    if (cookie === 'malformed') throw problems.unauthorized(INVALID)
    const user = await store.findSessionUser(cookie.id, now())
    if (user === null) throw sessionEnded()
    if (user.is_suspended) throw problems.frozen()
    request.sessionUser = user
  }
}

/** The 401 of a session that is unknown, expired or whose user is gone, on arrival or later. */
export const sessionEnded = () => problems.unauthorized(INVALID)

/**
 * The session id of a request that {@link authenticate} let through (its cookie holds a
 * well-formed session id).
 */
export function authenticatedSessionId(request: FastifyRequest): string {
  const cookie = requestSessionCookie(request)
  return typeof cookie === 'object' ? cookie.id : ''
}
