import type Database from 'better-sqlite3'
import type { ChangeSignals } from '../store.js'

/**
 * SQLite's commit hints (Store.changeSignals), naming the owners a commit moved, as
 * PostgreSQL's NOTIFY does. While someone waits, `PRAGMA data_version` of the service's
 * connection is read every {@link DATA_VERSION_CHECK_MS}: it changes when another
 * connection (another instance, a console, another service) commits, and reading it
 * touches no table. After a change, the owners whose listing generation moved are read in
 * generation order (index users_by_generation, migration 016), and each is named to the
 * watcher, which then reads those owners' generations alone. A hint that named no owner made
 * the watcher read every owner held: at 5,000 owners and a commit every few milliseconds
 * that read took the whole core (docs/performance.md "Fan-out").
 *
 * Why a read from the highest generation seen finds every commit made since: a generation
 * is at least the clock of its commit's statement (change-log-sql.ts NEXT_GENERATION), and
 * SQLite commits one writer at a time, so a commit not yet seen took its generation after
 * every commit seen was made, at a clock no earlier than theirs. Two commits in one
 * millisecond of SQLite's clock may share the value, and an owner written many times in
 * one millisecond runs a few microseconds ahead of it: the read goes back
 * {@link BACK_MICROS} below the highest generation seen, and owners named already with the
 * same generation are not named again. A generation ahead of the clock (a clock set back,
 * a restored backup) does not move the mark. Only a hint: a user deleted moves no
 * generation, and a clock stepped back could hide a commit; the watcher reads every owner
 * once an interval all the same, so either costs latency, never a missed change.
 */

/**
 * Between two reads of data_version while someone waits. Each read is a prepared statement
 * of about 2 us (its timer included, well under 0.1% of a core at this rate), and what it
 * adds to a commit's latency is up to this much: 25 ms was a tenth of a 10,000-follower
 * wake's p99 (docs/performance.md "Fan-out").
 */
const DATA_VERSION_CHECK_MS = 5

/** How far below the highest generation seen the next read begins (µs, see above). */
const BACK_MICROS = 20_000

/** A generation above the clock by more than this (µs) does not move the mark. */
const AHEAD_MICROS = 1_000_000

const MOVED_OWNERS = `SELECT id, listing_generation FROM users WHERE listing_generation >= ?`

/** The owners whose generation moved since the last read, each named once per generation. */
class MovedOwners {
  /** the next read begins here, less BACK_MICROS */
  private mark: number
  /** the owners the last read returned, with their generations */
  private named = new Map<string, number>()
  private readonly statement: Database.Statement

  constructor(db: Database.Database, now: number) {
    this.statement = db.prepare(MOVED_OWNERS).raw()
    this.mark = now * 1000
    // What moved just before is not news: the owners the first read goes back to, as named.
    this.named = new Map(this.rows())
  }

  private rows(): [id: string, generation: number][] {
    return this.statement.all(this.mark - BACK_MICROS) as [id: string, generation: number][]
  }

  /** The owners moved since the last call (or since the clock at construction). */
  read(now: number): string[] {
    const rows = this.rows()
    const moved: string[] = []
    const ceiling = now * 1000 + AHEAD_MICROS
    for (const [id, generation] of rows) {
      if (this.named.get(id) !== generation) moved.push(id)
      if (generation > this.mark && generation <= ceiling) this.mark = generation
    }
    this.named = new Map(rows)
    return moved
  }
}

/** The commit hints of `db` (see above), each moved owner given to `onCommit`. */
export function commitHints(
  db: Database.Database,
  isClosed: () => boolean,
  onCommit: (ownerId: string | null) => void,
): ChangeSignals {
  let timer: NodeJS.Timeout | null = null
  let seen = 0
  const dataVersion = db.prepare('PRAGMA data_version').pluck()
  const version = () => dataVersion.get() as number
  const pause = () => {
    if (timer !== null) clearInterval(timer)
    timer = null
  }
  return {
    resume: () => {
      if (timer !== null || isClosed()) return
      seen = version()
      const owners = new MovedOwners(db, Date.now())
      timer = setInterval(() => {
        if (isClosed()) return pause()
        let moved: string[]
        try {
          const now = version()
          if (now === seen) return
          seen = now
          moved = owners.read(Date.now())
        } catch {
          // Unreadable now (busy, closing): a hint that names no owner; the watcher reads them all.
          return onCommit(null)
        }
        for (const ownerId of moved) onCommit(ownerId)
      }, DATA_VERSION_CHECK_MS)
      // A check never keeps the process alive on its own.
      timer.unref()
    },
    pause,
  }
}
