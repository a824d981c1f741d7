import type { SessionUser } from '../store/store.js'
import type { ChangeWatcher, Hold } from './watcher.js'

/**
 * The long-poll loop shared by the feeds (docs/api.md "Wait"): read; while a read finds
 * nothing, park on the process's watcher until the owner's generation moves or the wait
 * ends; then read again at least as new as the generation that woke it. Whatever follows a
 * wait passes the session checks again before it is sent: a session revoked or expired, or
 * a user frozen or deleted meanwhile, ends the request with the problem it would get on
 * arrival, and the answer read before that check is dropped.
 */

/** The request's session, as the feeds see it. */
export interface FeedSession {
  /** the session id: held requests are bounded per session */
  id: string
  /**
   * The session read again, as on arrival (null: revoked, expired, or its user gone), for
   * `answer`: shared by the requests sent that one answer (session-recheck.ts). Absent
   * where the caller checks after every read itself (an event stream, http/feeds/feed-stream.ts,
   * by the same rule).
   */
  recheck?(answer: object): Promise<SessionUser | null>
}

export interface HoldOptions {
  /** aborts a held request (the client went away) */
  signal: AbortSignal
  session: FeedSession
  /** the caller's own slot (an event stream holds one for its whole life): used, not released */
  hold?: Hold
}

/** How a request ends when a check made after a wait fails, or when it may not be held. */
export type HoldRefusal =
  /** the session was revoked or expired, or its user deleted, during the wait: 401 */
  | { outcome: 'session-ended' }
  /** the user was frozen during the wait: 403 */
  | { outcome: 'frozen' }
  /** the process, or this session, holds as many requests as it may: refuse, do not spin */
  | { outcome: 'busy' }

/** What one read found: something to send, or nothing after the cursor at `generation`. */
type Polled<T> = { send: T } | { nothing: number }

export interface HeldRead<T> {
  user: SessionUser
  /** seconds to hold while nothing is found; 0: read once */
  wait: number
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

export async function holdUntilChanged<T extends object>(
  watcher: ChangeWatcher,
  request: HeldRead<T>,
  options: HoldOptions,
): Promise<T | HoldRefusal> {
  const { user, wait } = request
  if (wait === 0 || !watcher.open) {
    const found = await request.read(user.generation, false)
    return 'send' in found ? found.send : request.unchanged
  }
  const deadline = Date.now() + wait * 1000
  let hold: Hold | null = null
  try {
    let parkedAt = request.parkedAt
    let minGeneration = user.generation
    for (let woken = false; ; woken = true) {
      if (parkedAt === null) {
        const found = await request.read(minGeneration, woken)
        if ('send' in found) return woken ? await checked(found.send, options.session) : found.send
        parkedAt = found.nothing
      }
      hold ??= options.hold ?? watcher.hold(options.session.id)
      if (hold === null) return { outcome: 'busy' }
      const end = await hold.until(user.id, parkedAt, deadline, options.signal)
      // Nobody is left to answer: no check to make.
      if (end === 'gone') return request.unchanged
      if (end !== 'changed') return checked(request.unchanged, options.session)
      minGeneration = Math.max(minGeneration, hold.wokenAt ?? minGeneration)
      parkedAt = null
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
 * least that new. The caller checks the session after the read (the same rule as above).
 */
export async function readOnce<T extends object>(
  request: HeldRead<T>,
  wokenAt: number | null,
): Promise<T | Idle> {
  const { user, wait, parkedAt } = request
  if (wait > 0 && wokenAt === null && parkedAt !== null) return { outcome: 'idle', generation: parkedAt }
  const found = await request.read(Math.max(user.generation, wokenAt ?? user.generation), wokenAt !== null)
  if ('send' in found) return found.send
  return wait === 0 ? request.unchanged : { outcome: 'idle', generation: found.nothing }
}

/**
 * `answer`, when the session still passes the arrival checks. The answer was read before
 * this check, so nothing committed after a revoke or a freeze can reach the client.
 */
async function checked<T extends object>(answer: T, session: FeedSession): Promise<T | HoldRefusal> {
  if (session.recheck === undefined) return answer
  const now = await session.recheck(answer)
  if (now === null) return { outcome: 'session-ended' }
  if (now.is_suspended) return { outcome: 'frozen' }
  return answer
}
