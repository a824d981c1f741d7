import { SESSION_BATCH, type ServingStore, type SessionUser } from '../../store/store.js'

/**
 * The session checks a feed makes after its reads, gathered per turn of the event loop: the
 * followers one commit wakes (a slice of them per turn, feed/watcher.ts) ask within one turn,
 * and their sessions are read in one statement per {@link SESSION_BATCH} rather than one
 * each. A lone check is the arrival's own statement. Each lookup is sent after it was asked,
 * so a check still begins after the read it follows (feed/session-recheck.ts), and nothing is
 * kept between turns.
 */

type SessionStore = Pick<ServingStore, 'findSessionUser' | 'findSessionUsers'>

interface Asked {
  sessionId: string
  resolve: (user: SessionUser | null) => void
  reject: (error: unknown) => void
}

export class SessionLookups {
  private asked: Asked[] = []

  constructor(private readonly store: SessionStore) {}

  /** The session `sessionId` read again, with the others asked in this turn. */
  find(sessionId: string): Promise<SessionUser | null> {
    return new Promise((resolve, reject) => {
      if (this.asked.push({ sessionId, resolve, reject }) === 1) setImmediate(() => this.send())
    })
  }

  private send(): void {
    const asked = this.asked
    this.asked = []
    const now = Date.now()
    for (let from = 0; from < asked.length; from += SESSION_BATCH) {
      const batch = asked.slice(from, from + SESSION_BATCH)
      const lone = batch.length === 1 ? batch[0] : undefined
      const users =
        lone === undefined
          ? this.store.findSessionUsers(
              batch.map((one) => one.sessionId),
              now,
            )
          : this.store.findSessionUser(lone.sessionId, now).then((user) => [user])
      users.then(
        (found) => batch.forEach((one, i) => one.resolve(found[i] ?? null)),
        (error: unknown) => batch.forEach((one) => one.reject(error)),
      )
    }
  }
}
