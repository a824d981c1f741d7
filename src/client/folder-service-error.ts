import type { ProblemBody } from '../schemas/problem.js'
import { PROBLEM_CODES, type ProblemCode } from '../schemas/problem-codes.js'

/**
 * The one error the client throws for an answer that is not a listing: the service's
 * problem details (RFC 9457) when it sent them, or a client-side code when the answer
 * never reached us (NETWORK_ERROR, status 0), did not complete within the client's time
 * limit (TIMEOUT, status 0) or was not what the service sends (BAD_RESPONSE, e.g. an HTML
 * error page from a proxy, a body above the client's size bound, a `next` link that loops). An abort is not wrapped: the
 * signal's own reason (an AbortError by default) is rethrown, as fetch does.
 */

export type FolderServiceErrorCode = ProblemCode | 'NETWORK_ERROR' | 'TIMEOUT' | 'BAD_RESPONSE'

export class FolderServiceError extends Error {
  override readonly name = 'FolderServiceError'
  /** HTTP status, or 0 when no response arrived */
  readonly status: number
  readonly code: FolderServiceErrorCode
  /** the service's explanation, meant for people */
  readonly detail: string
  /** the service's id of the request (problem `request_id`, else the x-request-id header) */
  readonly requestId: string | null
  /** the Retry-After of a 429 or 503 that was not retried (or no longer), in milliseconds */
  readonly retryAfterMs: number | null
  readonly url: string

  constructor(init: {
    status: number
    code: FolderServiceErrorCode
    detail: string
    requestId: string | null
    url: string
    retryAfterMs?: number | null
    cause?: unknown
  }) {
    super(`${init.status} ${init.code}: ${init.detail}`, { cause: init.cause })
    this.status = init.status
    this.code = init.code
    this.detail = init.detail
    this.requestId = init.requestId
    this.retryAfterMs = init.retryAfterMs ?? null
    this.url = init.url
  }
}

const CODES: ReadonlySet<string> = new Set(PROBLEM_CODES)

/** The problem body when `value` has the documented shape, else null. */
export function asProblem(value: unknown): ProblemBody | null {
  if (typeof value !== 'object' || value === null) return null
  const p = value as Partial<Record<keyof ProblemBody, unknown>>
  return typeof p.code === 'string' &&
    CODES.has(p.code) &&
    typeof p.status === 'number' &&
    typeof p.detail === 'string'
    ? (value as ProblemBody)
    : null
}

/** BAD_RESPONSE for a 200 answer that makes no sense (e.g. a link that loops). */
export function nonsenseAnswer(detail: string, url: string): FolderServiceError {
  return new FolderServiceError({ status: 200, code: 'BAD_RESPONSE', detail, requestId: null, url })
}
