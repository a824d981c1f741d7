import { findSessionsInBatches } from '../store/session-batches.js'
import type { ServingStore, SessionUser } from '../store/store.js'

/**
 * The one rule for the session check made after a held read (a long-poll answer after its
 * wait, every event of a stream): the check must begin after the answer was read, so that
 * nothing committed after a revoke or a freeze is sent, and it refuses what the arrival
 * check refuses (docs/api.md "Checks, in this order"). Followers woken by one commit share
 * one answer object, so they share one lookup per session: any lookup begun once the answer
 * exists began after its read.
 */

/** The request's session, as the feeds see it. */
export interface FeedSession {
  /** the session id: held requests are bounded per session */
  id: string
  /** the session read again, as on arrival (null: revoked, expired, or its user gone) */
  lookup(): Promise<SessionUser | null>
}

/** How a request ends when its session fails the check made after a read. */
export type SessionRefusal =
  /** the session was revoked or expired, or its user deleted: 401 */
  | { outcome: 'session-ended' }
  /** the user was frozen: 403 */
  | { outcome: 'frozen' }

/** The session's verdict after a read: its user as now stored, or the refusal. */
export type SessionVerdict = { outcome: 'valid'; user: SessionUser } | SessionRefusal

const lookupsAfter = new WeakMap<object, Map<string, Promise<SessionUser | null>>>()

/** `session` looked up once for all the checks of `answer`. */
function lookupAfter(answer: object, session: FeedSession): Promise<SessionUser | null> {
  let lookups = lookupsAfter.get(answer)
  if (lookups === undefined) {
    lookups = new Map()
    lookupsAfter.set(answer, lookups)
  }
  let user = lookups.get(session.id)
  if (user === undefined) {
    user = session.lookup()
    lookups.set(session.id, user)
  }
  return user
}

/** The verdict on a session read again as `user` (null: not found, expired, or its user gone). */
export function verdictOf(user: SessionUser | null): SessionVerdict {
  if (user === null) return { outcome: 'session-ended' }
  if (user.is_suspended) return { outcome: 'frozen' }
  return { outcome: 'valid', user }
}

/** The verdict on `session` once `answer` has been read; rejects only when the lookup does (an outage). */
export async function sessionVerdict(answer: object, session: FeedSession): Promise<SessionVerdict> {
  return verdictOf(await lookupAfter(answer, session))
}

/** The verdict on `session` now, read afresh (a wait the sweep below ended). */
export async function sessionVerdictNow(session: FeedSession): Promise<SessionVerdict> {
  return verdictOf(await session.lookup())
}

/**
 * Of `sessionIds` (the sessions holding requests), those a request would now be refused
 * for, read in batches (findSessionsInBatches): the watcher's sweep of held sessions.
 */
export async function refusedSessions(
  store: Pick<ServingStore, 'findSessionUser' | 'findSessionUsers'>,
  sessionIds: readonly string[],
  now: number,
): Promise<Set<string>> {
  const users = await findSessionsInBatches(store, sessionIds, now)
  return new Set(sessionIds.filter((_, i) => verdictOf(users[i] ?? null).outcome !== 'valid'))
}
