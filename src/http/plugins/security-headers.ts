/**
 * Security headers of a JSON API (OWASP REST Security cheat sheet, "Security headers"):
 * no MIME sniffing, a Content-Security-Policy that allows nothing and no framing (a JSON
 * body is never a page), no referrer, same-origin resource policy, HSTS (browsers ignore
 * it over plain HTTP). The /docs page replaces the CSP for its own routes (routes/docs.ts).
 *
 * A constant set, written by the request-basics hook (request-basics.ts), rather than
 * @fastify/helmet: that plugin builds a new helmet middleware on every request (measured
 * at several microseconds of CPU per request), while these values never change.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cross-origin-resource-policy': 'same-origin',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
})
