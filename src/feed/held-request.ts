import type { SessionUser } from '../store/store.js'
import {
  sessionVerdict,
  sessionVerdictNow,
  type FeedSession,
  type SessionRefusal,
} from './session-recheck.js'
import type { ChangeWatcher, HeldClient, Hold } from './watcher.js'
import { activeTracing } from '../tracing/tracing.js'

/** The span of an answer a held request sends after a wake says how it was delivered. */
const DELIVERED_HELD = { 'folder_service.feed.delivery': 'long-poll' }

/**
 * The long-poll loop shared by the feeds (docs/api.md "Wait"): read; while a read finds
 * nothing, park on the process's watcher until the owner's generation moves or the wait
 * ends; then read again at least as new as the generation that woke it. Whatever follows a
 * wait passes the session checks again before it is sent: a session revoked or expired, or
 * a user frozen or deleted meanwhile, ends the request with the problem it would get on
 * arrival, and the answer read before that check is dropped. While it waits, the watcher's
 * sweep of held sessions ends the wait early when the session no longer passes.
 */

export interface HoldOptions {
  /**
   * the request's client (its socket): a held request whose client left ends without an
   * answer. Checked by the watcher, not listened to (watcher.ts {@link Hold.until}).
   */
  client: HeldClient
  /** checked again after a wait (session-recheck.ts) */
  session: FeedSession
  /** the caller's own slot (an event stream holds one for its whole life): used, not released */
  hold?: Hold
}

/** How a request ends when the session check made after a wait fails, or when it may not be held. */
export type HoldRefusal =
  | SessionRefusal
  /** the process, or this session, holds as many requests as it may: refuse, do not spin */
  | { outcome: 'busy' }

/** What one read found: something to send, or nothing after the cursor at `generation`. */
type Polled<T> = { send: T } | { nothing: number }

export interface HeldRead<T> {
  user: SessionUser
  /**
   * One read, answered even when it finds nothing (a request without a cursor or with
   * `wait=0`, a stream's last read before it closes); otherwise a read that finds nothing
   * says so, and the caller holds or parks.
   */
  readOnce: boolean
  /**
   * The owner's generation when it is known, without reading, that nothing follows the
   * cursor at it (the cursor is at the session's own present): park at once.
   */
  parkedAt: number | null
  /**
   * One read, at least as new as `minGeneration`. `woken`: after a wake, when a read in
   * flight for the same query may be joined.
   */
  read(minGeneration: number, woken: boolean): Promise<Polled<T>>
  /** the answer when the wait ends with nothing found */
  unchanged: T
}

/** `request` held up to `wait` seconds while nothing is found. */
export async function holdUntilChanged<T extends object>(
  watcher: ChangeWatcher,
  request: HeldRead<T>,
  wait: number,
  options: HoldOptions,
): Promise<T | HoldRefusal> {
  const { user } = request
  if (request.readOnce || !watcher.open) {
    const found = await request.read(user.generation, false)
    return 'send' in found ? found.send : request.unchanged
  }
  const deadline = Date.now() + wait * 1000
  let hold: Hold | null = null
  try {
    let parkedAt = request.parkedAt
    let minGeneration = user.generation
    let woken = false
    for (;;) {
      if (parkedAt === null) {
        const found = await request.read(minGeneration, woken)
        if ('send' in found) {
          if (!woken) return found.send
          const answer = await checked(found.send, options.session)
          // Traced (src/tracing/): the answer's span, from the wake that caused it.
          if (answer === found.send && hold !== null) activeTracing()?.delivered(hold, DELIVERED_HELD)
          return answer
        }
        parkedAt = found.nothing
      }
      hold ??= options.hold ?? watcher.hold(options.session.id)
      if (hold === null) return { outcome: 'busy' }
      const end = await hold.until(user.id, parkedAt, deadline, options.client)
      // Nobody is left to answer: no check to make.
      if (end === 'gone') return request.unchanged
      if (end === 'session') {
        // The watcher's sweep found the session refused: its problem, unless it passes again.
        const verdict = await sessionVerdictNow(options.session)
        if (verdict.outcome !== 'valid') return verdict
        continue
      }
      if (end !== 'changed') return checked(request.unchanged, options.session)
      minGeneration = Math.max(minGeneration, hold.wokenAt ?? minGeneration)
      parkedAt = null
      woken = true
    }
  } finally {
    if (hold !== options.hold) hold?.release()
  }
}

/** Nothing follows the cursor at the owner's `generation`: the caller parks there itself. */
export interface Idle {
  outcome: 'idle'
  generation: number
}

/**
 * One read for a caller that parks on the watcher itself rather than being held here (an
 * event stream, http/feeds/feed-stream.ts): what it found, or the generation to park at.
 * `wokenAt`: the generation whose wake started this read (null: not woken); the read is at
 * least that new. The caller checks the session after the read (sessionVerdict, as above).
 */
export async function readStep<T extends object>(
  request: HeldRead<T>,
  wokenAt: number | null,
): Promise<T | Idle> {
  const { user, readOnce, parkedAt } = request
  if (!readOnce && wokenAt === null && parkedAt !== null) return { outcome: 'idle', generation: parkedAt }
  const found = await request.read(Math.max(user.generation, wokenAt ?? user.generation), wokenAt !== null)
  if ('send' in found) return found.send
  return readOnce ? request.unchanged : { outcome: 'idle', generation: found.nothing }
}

/**
 * `answer`, when the session still passes the arrival checks. The answer was read before
 * this check, so nothing committed after a revoke or a freeze can reach the client.
 */
async function checked<T extends object>(answer: T, session: FeedSession): Promise<T | SessionRefusal> {
  const verdict = await sessionVerdict(answer, session)
  return verdict.outcome === 'valid' ? answer : verdict
}
