import { findSessionsInBatches } from '../../store/session-batches.js'
import type { ServingStore, SessionUser } from '../../store/store.js'
import { inTurnSlices } from '../../feed/turn-slices.js'

/**
 * The session checks a feed makes after its reads, gathered per turn of the event loop: the
 * followers one commit wakes (a slice of them per turn, feed/watcher.ts) ask within one turn,
 * and their sessions are read in batches (store/session-batches.ts) rather than one
 * each. A lone check is the arrival's own statement. Each lookup is sent after it was asked,
 * so a check still begins after the read it follows (feed/session-recheck.ts), and nothing is
 * kept between turns.
 *
 * The answers are handed out a slice of sessions a turn (feed/turn-slices.ts), because
 * what follows a check is its follower's write: the followers of one commit whose reads were
 * shared all check in one turn, and answering them all at once would write to every one of
 * their sockets without letting the event loop turn (a stall of tens to hundreds of ms at
 * 10,000 followers), where the wake itself is sliced (feed/watcher.ts).
 */

type SessionStore = Pick<ServingStore, 'findSessionUser' | 'findSessionUsers'>

/** One ask: some sessions, answered together (a woken group's, or one request's). */
interface Asked {
  sessionIds: readonly string[]
  resolve: (users: (SessionUser | null)[]) => void
  reject: (error: unknown) => void
}

export class SessionLookups {
  private asked: Asked[] = []

  constructor(private readonly store: SessionStore) {}

  /** The session `sessionId` read again, with the others asked in this turn. */
  find(sessionId: string): Promise<SessionUser | null> {
    return this.findAll([sessionId]).then((users) => users[0] ?? null)
  }

  /**
   * The sessions `sessionIds` read again, in order (a session revoked, expired or whose user
   * is gone: null), with the others asked in this turn: one promise for a whole group.
   */
  findAll(sessionIds: readonly string[]): Promise<(SessionUser | null)[]> {
    return new Promise((resolve, reject) => {
      if (this.asked.push({ sessionIds, resolve, reject }) === 1) setImmediate(() => this.send())
    })
  }

  private send(): void {
    const asked = this.asked
    this.asked = []
    const ids = asked.flatMap((one) => one.sessionIds)
    // One answer for the turn's asks: each takes its own run of the ids, in order, a slice
    // of sessions a turn.
    findSessionsInBatches(this.store, ids, Date.now()).then(
      (users) => {
        let at = 0
        inTurnSlices(
          asked,
          (one) => {
            const from = at
            at += one.sessionIds.length
            one.resolve(users.slice(from, at))
          },
          (one) => one.sessionIds.length,
        )
      },
      (error: unknown) => {
        for (const one of asked) one.reject(error)
      },
    )
  }
}
