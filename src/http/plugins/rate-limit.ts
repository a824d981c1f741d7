import type { FastifyInstance, FastifyRequest } from 'fastify'
import fastifyRateLimit, { normalizeIP } from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import { requestSessionCookie } from '../auth.js'
import { HttpProblem } from '../problems.js'

/**
 * Rate limiting of the routes of the context it is registered in: per session for the API,
 * per client address for the public routes (health, metrics, docs). Over the limit: 429 problem+json with
 * code RATE_LIMITED, Retry-After and the IETF draft RateLimit-* headers.
 *
 * Runs as a context-level onRequest hook, so it precedes authentication: unauthenticated
 * floods are limited too (by client address) before they reach the database.
 */

export const RATE_LIMIT_WINDOW_MS = 60_000
/** Sessions and addresses tracked at once (least recently seen forgotten first). */
const TRACKED_KEYS = 10_000

/**
 * The session id when the cookie holds a well-formed one (the same parse the auth hook
 * uses), otherwise the client address (IPv6 folded to its /64, as the plugin does).
 */
function rateLimitKey(request: FastifyRequest): string {
  const cookie = requestSessionCookie(request)
  if (typeof cookie === 'object') return `session:${cookie.id}`
  return addressKey(request)
}

/** The client address alone: the public routes' key, where a cookie proves nothing. */
function addressKey(request: FastifyRequest): string {
  return `address:${normalizeIP(request.ip)}`
}

/**
 * `by` 'session' for the API (see {@link rateLimitKey}), 'address' for the public routes
 * (health, docs, metrics), which no session unlocks and so must not be keyed by one.
 */
export const rateLimitPlugin = fp(
  async (api: FastifyInstance, { perMinute, by }: { perMinute: number; by: 'session' | 'address' }) => {
    await api.register(fastifyRateLimit, {
      global: false,
      max: perMinute,
      timeWindow: RATE_LIMIT_WINDOW_MS,
      cache: TRACKED_KEYS,
      enableDraftSpec: true,
      keyGenerator: by === 'session' ? rateLimitKey : addressKey,
      errorResponseBuilder: (_request, context) =>
        new HttpProblem(
          429,
          'RATE_LIMITED',
          `Too many requests: at most ${perMinute} a minute for this ${by === 'session' ? 'session' : 'address'}; retry in ${context.after}.`,
        ),
    })
    api.addHook('onRequest', api.rateLimit())
  },
  // Registered once per context (public routes, API); the session decorations come first.
  { name: 'rate-limit', dependencies: ['session'] },
)
