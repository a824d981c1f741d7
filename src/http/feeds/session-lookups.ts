import { findSessionsInBatches } from '../../store/session-batches.js'
import { SESSION_BATCH, type ServingStore, type SessionUser } from '../../store/store.js'
import { inTurnSlices } from '../../feed/turn-slices.js'

/**
 * The session checks a feed makes after its reads, gathered: the followers one commit wakes
 * (a slice of them per turn, feed/watcher.ts) ask turn after turn, and their sessions are
 * read in batches (store/session-batches.ts) rather than one each. At most
 * {@link MAX_IN_FLIGHT} lookups are out at once; what is asked meanwhile waits and leaves
 * together when one returns, up to {@link SESSION_BATCH} sessions a statement: a wake of
 * 10,000 followers is 40 statements, at most a few of them holding the database's
 * connections at once, where a statement per turn's slice (157) queued on PostgreSQL's pool
 * past its acquire timeout under load and ended streams with 503. A lone check is the
 * arrival's own statement. Each lookup is sent after it was asked, so a check still begins
 * after the read it follows (feed/session-recheck.ts), and nothing is kept between lookups.
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

/** Lookups out at once: each holds a database connection while it runs. */
const MAX_IN_FLIGHT = 4

export class SessionLookups {
  private asked: Asked[] = []
  private inFlight = 0
  private scheduled = false

  constructor(private readonly store: SessionStore) {}

  /** The session `sessionId` read again, with the others asked meanwhile. */
  find(sessionId: string): Promise<SessionUser | null> {
    return this.findAll([sessionId]).then((users) => users[0] ?? null)
  }

  /**
   * The sessions `sessionIds` read again, in order (a session revoked, expired or whose user
   * is gone: null), with the others asked meanwhile: one promise for a whole group.
   */
  findAll(sessionIds: readonly string[]): Promise<(SessionUser | null)[]> {
    return new Promise((resolve, reject) => {
      this.asked.push({ sessionIds, resolve, reject })
      this.schedule()
    })
  }

  /** The next lookup after this turn's asks, when one may go out. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_IN_FLIGHT || this.asked.length === 0) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.send()
    })
  }

  private send(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.asked.length > 0) {
      // Whole asks, up to SESSION_BATCH sessions (at least one ask, however large).
      let count = 0
      let taken = 0
      while (
        taken < this.asked.length &&
        (taken === 0 || count + (this.asked[taken] as Asked).sessionIds.length <= SESSION_BATCH)
      ) {
        count += (this.asked[taken] as Asked).sessionIds.length
        taken++
      }
      const asked = this.asked.splice(0, taken)
      this.inFlight++
      findSessionsInBatches(
        this.store,
        asked.flatMap((one) => one.sessionIds),
        Date.now(),
      ).then(
        (users) => {
          this.inFlight--
          this.schedule()
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
          this.inFlight--
          this.schedule()
          for (const one of asked) one.reject(error)
        },
      )
    }
  }
}
