import { hash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * Caching headers of the listing (docs/api.md "200 body" and "Headers of a 200"): the body depends on the cookie and
 * may change at any write, so caches must revalidate; a strong ETag over the exact bytes
 * lets them do it cheaply with If-None-Match.
 *
 * Written here rather than taken from @fastify/etag because that plugin compares
 * If-None-Match as one opaque string (a list such as `"a", "b"` never matches) and
 * answers 304 to error statuses too.
 */

export const CACHE_CONTROL = 'private, no-cache'

export function strongEtag(body: string | Buffer): string {
  return `"${hash('sha1', body, 'base64url')}"`
}

/** RFC 9110 section 13.1.2: `*`, or a comma-separated list compared weakly. */
export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  for (const candidate of header.split(',')) {
    const tag = candidate.trim()
    if (tag === etag || tag === `W/${etag}`) return true
  }
  return false
}

export function conditionalGet(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (err: null, payload?: unknown) => void,
): void {
  reply.header('cache-control', CACHE_CONTROL)
  // Appended: CORS may already have said `Vary: Origin`.
  const vary = reply.getHeader('vary')
  reply.header('vary', vary === undefined ? 'Cookie' : `${String(vary)}, Cookie`)
  // Cached listings are sent as bytes (see listing-cache.ts), other answers as strings.
  if (reply.statusCode !== 200 || (typeof payload !== 'string' && !Buffer.isBuffer(payload))) {
    done(null, payload)
    return
  }
  // A handler that already knows the body's ETag (a cached listing) has set it.
  const preset = reply.getHeader('etag')
  const etag = typeof preset === 'string' ? preset : strongEtag(payload)
  reply.header('etag', etag)
  if (ifNoneMatchMatches(request.headers['if-none-match'], etag)) {
    // No body. RFC 9110 section 8.6 allows a 304 no Content-Length or the 200's, never the
    // `Content-Length: 0` Fastify writes for an empty payload; section 15.4.5 no
    // Content-Type. GET: a null payload, so Fastify writes neither (clients that read a
    // Content-Length on a 304 as a body to wait for, autocannon for one, would stall).
    // HEAD: Fastify's HEAD hook measures the payload it is given, so it gets the 200's.
    reply.code(304).removeHeader('content-type')
    done(null, request.method === 'HEAD' ? payload : null)
    return
  }
  done(null, payload)
}
