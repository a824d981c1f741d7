import type { FeedBody } from '../../feed/feed.js'
import type { Idle } from '../../feed/held-request.js'
import { verdictOf } from '../../feed/session-recheck.js'
import type { SessionUser } from '../../store/store.js'
import { toProblem, type HttpProblem } from '../problems.js'
import { sessionProblem } from './feed-problems.js'
import type { SessionLookups } from './session-lookups.js'

/**
 * The reads of a feed's event streams, made for groups of streams rather than one each: the
 * streams that ask in one run of the event loop (those one commit wakes in one slice,
 * feed/watcher.ts; those that delivered an event and read on) for the same query from the
 * same cursor, as the same user at the same generation, make one read between them, one
 * session statement for all their sessions after it (after the read: nothing committed
 * after a revoke or a freeze reaches a client, feed/session-recheck.ts), and then one loop
 * over the group hands each stream its outcome. Per stream, the wake is that loop's step and
 * its socket write: no promise or closure of its own.
 */

/** One read of a feed: an answer, nothing yet (park at that generation), or the problem that ends the stream. */
export type FeedStep<B extends FeedBody> = { body: B } | Idle | { problem: HttpProblem }

/** A stream as its group's read sees it (http/feeds/feed-stream.ts). */
export interface GroupReader<B extends FeedBody> {
  /** the stream's query but its cursor: streams with the same one (and cursor, user) read alike */
  readonly queryKey: string
  /** the user as last checked: its generation tells the feed where the present is */
  readonly user: SessionUser
  readonly cursor: string
  /** the last event said has_more: the answer that reaches the present is sent, even empty */
  readonly behind: boolean
  readonly sessionId: string
  /** the stream ended meanwhile (the client left): nothing more for it */
  readonly ended: boolean
  /** One read after `cursor`; `draining`: the last, which answers even when nothing follows. */
  step(user: SessionUser, cursor: string, draining: boolean, wokenAt: number | null): Promise<FeedStep<B>>
  /** The stream ends with `problem` as its error event. */
  refused(problem: HttpProblem): void
  /** The read failed (an outage, a bug): the stream ends with its problem. */
  failed(error: unknown): void
  /** Nothing follows the cursor at `generation`: park there, or end when draining. */
  idle(generation: number, draining: boolean): void
  /** An answer with nothing to tell: move to its cursor and read on, or end when draining. */
  skip(body: B, draining: boolean): void
  /** An answer whose session check passed as `user`: its event. */
  send(body: B, user: SessionUser): void
}

interface Group<B extends FeedBody> {
  readers: GroupReader<B>[]
  wokenAt: number | null
  draining: boolean
}

/** Whether `reader` asks for the read `group` makes (its first reader's, as asked). */
function sameRead<B extends FeedBody>(
  group: Group<B>,
  reader: GroupReader<B>,
  wokenAt: number | null,
  draining: boolean,
): boolean {
  const first = group.readers[0] as GroupReader<B>
  return (
    group.wokenAt === wokenAt &&
    group.draining === draining &&
    first.queryKey === reader.queryKey &&
    first.user.id === reader.user.id &&
    first.user.generation === reader.user.generation &&
    first.behind === reader.behind
  )
}

export class StreamReads<B extends FeedBody> {
  /**
   * the groups asked for in this run of the loop, by cursor (then compared field by field:
   * no key is built per stream)
   */
  private pending = new Map<string, Group<B>[]>()
  private scheduled = false
  /** made once: every run's groups are read from one microtask */
  private readonly flush = (): void => {
    this.scheduled = false
    const pending = this.pending
    this.pending = new Map()
    for (const groups of pending.values()) for (const group of groups) void this.read(group)
  }

  constructor(private readonly lookups: Pick<SessionLookups, 'findAll'>) {}

  /**
   * `reader` reads after its cursor (`wokenAt`: the generation whose wake this is), with the
   * others that ask for the same read before this run of the event loop ends.
   */
  join(reader: GroupReader<B>, wokenAt: number | null, draining: boolean): void {
    let groups = this.pending.get(reader.cursor)
    if (groups === undefined) {
      groups = []
      this.pending.set(reader.cursor, groups)
    }
    let joined = false
    for (const group of groups) {
      if (!sameRead(group, reader, wokenAt, draining)) continue
      group.readers.push(reader)
      joined = true
      break
    }
    if (!joined) groups.push({ readers: [reader], wokenAt, draining })
    if (this.scheduled) return
    this.scheduled = true
    queueMicrotask(this.flush)
  }
  private async read({ readers, wokenAt, draining }: Group<B>): Promise<void> {
    const leader = readers[0] as GroupReader<B>
    let step: FeedStep<B>
    try {
      step = await leader.step(leader.user, leader.cursor, draining, wokenAt)
    } catch (error) {
      for (const reader of readers) if (!reader.ended) reader.failed(error)
      return
    }
    if ('problem' in step) {
      for (const reader of readers) if (!reader.ended) reader.refused(step.problem)
      return
    }
    if ('generation' in step) {
      for (const reader of readers) if (!reader.ended) reader.idle(step.generation, draining)
      return
    }
    const { body } = step
    if (body.changes.length === 0 && !body.has_more && !leader.behind) {
      // Nothing to tell (only other folders changed, or the last read found nothing): no
      // event, but the next read starts from the newer position.
      for (const reader of readers) if (!reader.ended) reader.skip(body, draining)
      return
    }
    const live = readers.filter((reader) => !reader.ended)
    let users: (SessionUser | null)[]
    try {
      users = await this.lookups.findAll(live.map((reader) => reader.sessionId))
    } catch (error) {
      // An outage of the lookup: the streams end with its problem, as an arrival would.
      const problem = toProblem(error)
      for (const reader of live) if (!reader.ended) reader.refused(problem)
      return
    }
    for (let i = 0; i < live.length; i++) {
      const reader = live[i] as GroupReader<B>
      if (reader.ended) continue
      const verdict = verdictOf(users[i] ?? null)
      if (verdict.outcome === 'valid') reader.send(body, verdict.user)
      else reader.refused(sessionProblem(verdict))
    }
  }
}
