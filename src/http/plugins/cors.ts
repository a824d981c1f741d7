import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import fastifyCors from '@fastify/cors'

/**
 * CORS for browser clients on other origins (README, "Configuration": CORS_ORIGINS). Off
 * unless origins are configured. A listed origin is echoed exactly, with credentials
 * (the session is a cookie); any other origin, and requests without Origin, get no CORS
 * header at all, only `Vary: Origin` so shared caches keep the answers apart.
 * Preflights from a listed origin are answered 204 by the plugin's onRequest hook before
 * any route handler runs.
 */

/** Response headers a browser script may read, beyond the CORS-safelisted ones. */
const EXPOSED_HEADERS = [
  'ETag',
  'Link',
  'X-Request-Id',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
]
/** Request headers a browser script may send, beyond the CORS-safelisted ones. */
const ALLOWED_HEADERS = ['If-None-Match', 'X-Request-Id']
const PREFLIGHT_MAX_AGE_SECONDS = 600

export const corsPlugin = fp(
  async (app: FastifyInstance, { origins }: { origins: readonly string[] }) => {
    if (origins.length === 0) return
    const allowed = new Set(origins)
    await app.register(fastifyCors, {
      origin: (origin, callback) =>
        callback(null, origin !== undefined && allowed.has(origin) ? origin : false),
      credentials: true,
      methods: ['GET', 'HEAD'],
      allowedHeaders: ALLOWED_HEADERS,
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: PREFLIGHT_MAX_AGE_SECONDS,
      // An OPTIONS without Access-Control-Request-Method from a listed origin gets 204 too,
      // rather than the plugin's text/plain 400 (every error here is problem+json).
      strictPreflight: false,
    })
  },
  { name: 'cors' },
)
