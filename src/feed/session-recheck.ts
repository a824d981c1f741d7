import type { SessionUser } from '../store/store.js'

/**
 * The one rule for the session check made after a held read (a long-poll answer after its
 * wait, every event of a stream): the check must begin after the answer was read, so that
 * nothing committed after a revoke or a freeze is sent. Followers woken by one commit share
 * one answer object, so they share one lookup per session: any lookup begun once the answer
 * exists began after its read.
 */

const lookupsAfter = new WeakMap<object, Map<string, Promise<SessionUser | null>>>()

/** `lookup()` of `sessionId`, made once for all the checks of `answer`. */
export function sessionAfter(
  answer: object,
  sessionId: string,
  lookup: () => Promise<SessionUser | null>,
): Promise<SessionUser | null> {
  let lookups = lookupsAfter.get(answer)
  if (lookups === undefined) {
    lookups = new Map()
    lookupsAfter.set(answer, lookups)
  }
  let user = lookups.get(sessionId)
  if (user === undefined) {
    user = lookup()
    lookups.set(sessionId, user)
  }
  return user
}
