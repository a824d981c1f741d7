import { hash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * Caching headers of the listing (CONTRACT section 5): the body depends on the cookie and
 * may change at any write, so caches must revalidate; a strong ETag over the exact bytes
 * lets them do it cheaply with If-None-Match.
 *
 * Written here rather than taken from @fastify/etag because that plugin compares
 * If-None-Match as one opaque string (a list such as `"a", "b"` never matches) and
 * answers 304 to error statuses too.
 */

export const CACHE_CONTROL = 'private, no-cache'

export function strongEtag(body: string): string {
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
  if (reply.statusCode !== 200 || typeof payload !== 'string') {
    done(null, payload)
    return
  }
  // A handler that already knows the body's ETag (a cached listing) has set it.
  const preset = reply.getHeader('etag')
  const etag = typeof preset === 'string' ? preset : strongEtag(payload)
  reply.header('etag', etag)
  if (ifNoneMatchMatches(request.headers['if-none-match'], etag)) {
    reply.code(304)
    done(null, '')
    return
  }
  done(null, payload)
}
