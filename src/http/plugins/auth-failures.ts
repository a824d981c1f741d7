import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { normalizeIP } from '@fastify/rate-limit'
import { requestSessionCookie } from '../auth.js'
import { HttpProblem } from '../problems.js'
import { RATE_LIMIT_WINDOW_MS } from './rate-limit.js'
import { RecencyMap } from '../../recency-map.js'

/**
 * The failed-authentication budget of a client address (OWASP API4). The rate limiter
 * counts a well-formed session cookie against that session's own budget, so a client that
 * sends a fresh random UUID each time would never be limited, while every such request
 * costs a session lookup. Here each request whose session turns out unknown or expired
 * (a 401 with a well-formed cookie) is charged to its client address; once the address
 * has spent its budget for the minute, its requests carrying a session cookie get 429
 * before the lookup, until the minute ends. Valid sessions from that address are refused
 * too: which ones are valid is exactly what the spared lookup would have told.
 */

/** Addresses tracked at once (least recently charged forgotten first), as the rate limiter. */
const TRACKED_ADDRESSES = 10_000

interface Window {
  failures: number
  endsAt: number
}

/** Failures per key in fixed windows, bounded in memory. */
export class FailureCounter {
  /** key -> its window, least recently charged first */
  private readonly windows: RecencyMap<string, Window>

  constructor(
    readonly max: number,
    private readonly windowMs: number = RATE_LIMIT_WINDOW_MS,
    capacity: number = TRACKED_ADDRESSES,
    private readonly now: () => number = Date.now,
  ) {
    this.windows = new RecencyMap(capacity)
  }

  /** Milliseconds until `key` may try again; 0 while it has budget left. */
  blockedForMs(key: string): number {
    const window = this.windows.peek(key)
    if (window === undefined) return 0
    const left = window.endsAt - this.now()
    if (left <= 0) {
      this.windows.delete(key)
      return 0
    }
    return window.failures >= this.max ? left : 0
  }

  charge(key: string): void {
    const now = this.now()
    let window = this.windows.peek(key)
    if (window === undefined || window.endsAt <= now) window = { failures: 0, endsAt: now + this.windowMs }
    window.failures++
    this.windows.set(key, window)
  }
}

/** AUTH_FAILURES_PER_MINUTE, capped by RATE_LIMIT_PER_MINUTE when that is on; 0: off. */
export function authFailureBudget(authFailuresPerMinute: number, rateLimitPerMinute: number): number {
  if (authFailuresPerMinute === 0) return 0
  return rateLimitPerMinute > 0 ? Math.min(authFailuresPerMinute, rateLimitPerMinute) : authFailuresPerMinute
}

const addressOf = (request: FastifyRequest) => normalizeIP(request.ip)

/**
 * Registers the budget in the API's context: a gate before authentication (an onRequest
 * hook of the context runs before the route's own) and the charge after the answer.
 */
export const authFailureLimitPlugin = fp(
  (api: FastifyInstance, { perMinute }: { perMinute: number }, ready: (err?: Error) => void) => {
    const failures = new FailureCounter(perMinute)
    api.addHook('onRequest', (request, _reply, done) => {
      if (typeof requestSessionCookie(request) !== 'object') {
        done()
        return
      }
      const waitMs = failures.blockedForMs(addressOf(request))
      if (waitMs === 0) {
        done()
        return
      }
      const seconds = Math.ceil(waitMs / 1000)
      done(
        new HttpProblem(
          429,
          'RATE_LIMITED',
          `Too many requests with an unknown or expired session from this address (at most ${perMinute} a minute); retry in ${seconds} s.`,
          { 'retry-after': String(seconds) },
        ),
      )
    })
    api.addHook('onResponse', (request, reply, done) => {
      if (reply.statusCode === 401 && typeof requestSessionCookie(request) === 'object') {
        failures.charge(addressOf(request))
      }
      done()
    })
    ready()
  },
  { name: 'auth-failure-limit', dependencies: ['session'] },
)
