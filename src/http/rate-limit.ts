import type { FastifyInstance, FastifyRequest } from 'fastify'
import fastifyRateLimit, { normalizeIP } from '@fastify/rate-limit'
import { requestSessionCookie } from './auth.js'
import { HttpProblem } from './problems.js'

/**
 * Per-session rate limiting of the API routes of the context it is registered in (the
 * health, metrics and docs routes live outside it). Over the limit: 429 problem+json with
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
export function rateLimitKey(request: FastifyRequest): string {
  const cookie = requestSessionCookie(request)
  if (typeof cookie === 'object') return `session:${cookie.id}`
  return `address:${normalizeIP(request.ip)}`
}

export async function registerRateLimit(api: FastifyInstance, perMinute: number): Promise<void> {
  await api.register(fastifyRateLimit, {
    global: false,
    max: perMinute,
    timeWindow: RATE_LIMIT_WINDOW_MS,
    cache: TRACKED_KEYS,
    enableDraftSpec: true,
    keyGenerator: rateLimitKey,
    errorResponseBuilder: (_request, context) =>
      new HttpProblem(
        429,
        'RATE_LIMITED',
        `Too many requests: at most ${perMinute} a minute for this session; retry in ${context.after}.`,
      ),
  })
  api.addHook('onRequest', api.rateLimit())
}
