import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SessionUser } from '../../store/store.js'
import {
  eventFrame,
  streamEvents,
  type EventStreamOptions,
  type FrameSource,
  type NextFrame,
  type StreamControl,
} from './event-stream.js'
import { problemBody, problems, toProblem, type HttpProblem } from '../problems.js'
import { feedProblem, sessionProblem } from './feed-problems.js'
import type { Feed, FeedBody, FeedRequest } from '../../feed/feed.js'
import { sessionVerdictNow, type FeedSession } from '../../feed/session-recheck.js'
import type { HeldClient, Hold, Parked, WaitEnd, Wakeable } from '../../feed/watcher.js'
import type { FeedStep, GroupReader, StreamReads } from './stream-reads.js'
import { TOKEN_PATTERN } from '../../schemas/bounded.js'
import { activeTracing } from '../../tracing/tracing.js'
import type { ParameterRules } from '../../schemas/parameter-rules.js'

/**
 * A feed followed over Server-Sent Events (docs/api.md "Push"): any feed whose answers are
 * `{changes, cursor, has_more}` bodies. Each answer is one `changes` event whose `id` is its
 * cursor and whose `data` is the body exactly as the 200 answer would be; a wait that ends
 * with nothing sends nothing (the heartbeat keeps the stream open). After every read and
 * before its event the session is checked again (after the read, so that nothing committed
 * after a revoke is ever sent); a failed check, a problem of the feed (404, 410) or an
 * outage ends the stream with one `error` event carrying the problem details.
 */

interface FeedStream<B extends FeedBody> {
  /** the request but its cursor, as text: streams with the same one read alike (stream-reads.ts) */
  key: string
  /**
   * One read after `cursor`; `draining`: the last read before the stream closes, which
   * answers even when nothing follows. `wokenAt`: as for {@link Wakeable.woken}'s generation.
   */
  step(user: SessionUser, cursor: string, draining: boolean, wokenAt: number | null): Promise<FeedStep<B>>
  /** the body as the route's 200 schema serialises it */
  serialize: (body: B) => string
  /** the request's session, checked before every event */
  session: FeedSession
  /** the stream's place among the process's held requests: it parks there, released when it ends */
  hold: Hold
  /** the route's grouped reads, which this stream's reads join */
  reads: StreamReads<B>
  /** whether the process is shutting down: send what is pending, then close */
  draining(): boolean
  options: EventStreamOptions
}

/**
 * One frame per answer body, and one step that sends it, shared by every stream that sends
 * it (one commit, many followers): nothing is made per stream. `more` while the answer says
 * has_more, so that a catch-up leaves in one write (event-stream.ts).
 */
const steps = new WeakMap<FeedBody, NextFrame>()

function changesStep<B extends FeedBody>(body: B, serialize: (body: B) => string): NextFrame {
  let step = steps.get(body)
  if (step === undefined) {
    step = { frame: eventFrame('changes', serialize(body), body.cursor), last: false, more: body.has_more }
    steps.set(body, step)
  }
  return step
}

const notStarted = (): void => undefined

/**
 * One stream of a feed until the client leaves, a problem ends it, or its time runs out: the
 * frames' source (event-stream.ts), the watcher's record target while nothing follows its
 * cursor (one record, this state: no promise, timer or listener of its own), and a reader of
 * its route's grouped reads (stream-reads.ts), which make each read and session check once
 * for all the streams woken together. Its state is fields, not closures, so a wake makes
 * nothing per stream.
 */
class FeedFollower<B extends FeedBody> implements FrameSource, Wakeable, GroupReader<B> {
  cursor: string
  /** the user as last checked: its listing generation tells the feed where the present is */
  user: SessionUser
  behind: boolean
  /**
   * The first answer, read before the stream started (its problems were ordinary answers),
   * until it is sent: then let go, with its text and frame (kept per body), since a catch-up's
   * first answer may be a page of up to `limit` changes and the stream lives for minutes.
   */
  private first: B | null
  private stopped = false
  /** the watcher's record while parked */
  private parked: Parked | null = null
  /** the generation it parked at last */
  private parkedAt = 0
  /** the watcher closed (shutdown): read once more, send what it finds, then end */
  private closed = false
  private control: StreamControl = { deadline: 0, gone: false, flush: notStarted }
  private deliver: (step: NextFrame) => void = notStarted

  constructor(
    private readonly request: FastifyRequest,
    first: B,
    private readonly feed: FeedStream<B>,
  ) {
    this.first = first
    this.cursor = first.cursor
    this.user = request.sessionUser
    this.behind = first.has_more
  }

  get queryKey(): string {
    return this.feed.key
  }

  get sessionId(): string {
    return this.feed.session.id
  }

  get ended(): boolean {
    return this.stopped || this.control.gone
  }

  next(control: StreamControl, deliver: (step: NextFrame) => void): void {
    this.control = control
    this.deliver = deliver
    const first = this.first
    if (first === null) return this.read(null)
    this.first = null
    deliver(changesStep(first, this.feed.serialize))
  }

  stop(): void {
    this.stopped = true
    if (this.parked !== null) this.feed.hold.unpark(this.parked)
    this.parked = null
    this.feed.hold.release()
  }

  woken(end: WaitEnd, generation: number | null): void {
    this.parked = null
    if (end === 'session') return this.recheck()
    if (end === 'closed') this.closed = true
    this.read(end === 'changed' ? generation : null)
  }

  step(user: SessionUser, cursor: string, draining: boolean, wokenAt: number | null): Promise<FeedStep<B>> {
    return this.feed.step(user, cursor, draining, wokenAt)
  }

  refused(problem: HttpProblem): void {
    this.deliver({
      frame: eventFrame('error', JSON.stringify(problemBody(problem, this.request.id))),
      last: true,
    })
  }

  failed(error: unknown): void {
    const problem = toProblem(error)
    if (problem.status >= 500) this.request.log.error({ err: error }, 'event stream failed')
    this.refused(problem)
  }

  idle(generation: number, draining: boolean): void {
    if (draining) return this.deliver(null)
    // A catch-up whose rest held nothing for this stream: what it corked leaves now.
    this.control.flush()
    this.parkedAt = generation
    this.parked = this.feed.hold.parkTarget(this.user.id, generation, this.control.deadline, this)
  }

  skip(body: B, draining: boolean): void {
    this.cursor = body.cursor
    if (draining) return this.deliver(null)
    this.read(null)
  }

  send(body: B, user: SessionUser): void {
    this.user = user
    this.cursor = body.cursor
    this.behind = body.has_more
    // Traced (src/tracing/): the event's span, below the stream's request, from the wake that caused it.
    activeTracing()?.delivered(
      this,
      { 'folder_service.feed.delivery': 'event-stream', 'folder_service.feed.changes': body.changes.length },
      this.request.raw,
    )
    // While draining, the pending answers are sent until the present, then the stream ends.
    this.deliver(changesStep(body, this.feed.serialize))
  }

  /** The watcher's sweep found the session refused while parked: its problem ends the stream. */
  private recheck(): void {
    const at = this.parkedAt
    sessionVerdictNow(this.feed.session).then(
      (verdict) => {
        if (this.ended) return this.deliver(null)
        if (verdict.outcome !== 'valid') return this.refused(sessionProblem(verdict))
        // It passes again: park on where it was.
        this.idle(at, false)
      },
      (error: unknown) => this.failed(error),
    )
  }

  /** One read after the cursor (`wokenAt`: the wake's generation), with its group. */
  private read(wokenAt: number | null): void {
    if (this.ended) return this.deliver(null)
    const draining = this.closed || this.feed.draining()
    if (!draining && Date.now() >= this.control.deadline) return this.deliver(null)
    this.feed.reads.join(this, wokenAt, draining)
  }
}

const CURSOR_PATTERN = new RegExp(TOKEN_PATTERN)
/** A stream's first read is never held (wait=0): its client is not watched. */
const STAYING: HeldClient = Object.freeze({ destroyed: false })
const NOT_A_CURSOR = 'Header Last-Event-ID is not a cursor of this feed.'

/**
 * The cursor of a stream: Last-Event-ID (an EventSource's reconnect) wins over the query's
 * `cursor`, which a reconnect repeats from the original URL and is then older.
 */
function streamCursor(lastEventId: string | string[] | undefined, cursor: string | null): string | null {
  if (lastEventId === undefined || lastEventId === '') return cursor
  if (typeof lastEventId !== 'string' || !CURSOR_PATTERN.test(lastEventId)) {
    throw problems.invalidInput(NOT_A_CURSOR)
  }
  return lastEventId
}

export interface FollowedStream<R extends FeedRequest, B extends FeedBody> {
  feed: Feed<R, B>
  /** the request as validated (its cursor is replaced by Last-Event-ID when one is sent) */
  asked: R
  /** the request's session: a stream holds one of its places, and checks it before every event */
  session: FeedSession
  /** the feed's parameter texts for its 400s */
  rules: ParameterRules
  serialize: (body: B) => string
  /** the route's grouped reads (stream-reads.ts) */
  reads: StreamReads<B>
  /** a function of its own (it is handed on, not called on this object) */
  draining: () => boolean
  options: EventStreamOptions
}

/** The request but its cursor and wait (which a stream's reads do not use), as a group's key. */
function queryKey(asked: FeedRequest): string {
  const rest: Record<string, unknown> = { ...asked }
  delete rest.cursor
  delete rest.wait
  return JSON.stringify(rest)
}

/**
 * GET with `Accept: text/event-stream` on a feed (changes, tree): the first answer as an
 * ordinary request would get it (its problems are ordinary answers), then every later one
 * as an event. The stream checks the session after every read itself (FeedFollower), in one
 * statement for the streams a commit wakes.
 */
export async function followAsStream<R extends FeedRequest, B extends FeedBody>(
  request: FastifyRequest,
  reply: FastifyReply,
  stream: FollowedStream<R, B>,
): Promise<void> {
  const { feed, asked, rules, session } = stream
  const cursor = streamCursor(request.headers['last-event-id'], asked.cursor)
  const hold = feed.hold(session.id)
  if (hold === null) throw problems.tooManyWaiters()
  try {
    const first = await feed.follow(
      request.sessionUser,
      { ...asked, cursor, wait: 0 },
      { client: STAYING, session },
    )
    if (first.outcome !== 'answer') {
      if (first.outcome === 'cursor-invalid' && cursor !== asked.cursor) {
        throw problems.invalidInput(NOT_A_CURSOR)
      }
      throw feedProblem(first, rules)
    }
    const follower = new FeedFollower<B>(request, first.body, {
      key: queryKey(asked),
      // Not async: a stream reads through here at every wake.
      step(user, after, last, wokenAt) {
        // Only the last read answers when nothing follows; any other says so (the stream parks).
        return feed.step(user, { ...asked, cursor: after }, wokenAt, last).then((result) => {
          if (result.outcome === 'answer') return { body: result.body }
          if (result.outcome === 'idle') return result
          return { problem: feedProblem(result, rules) }
        })
      },
      serialize: stream.serialize,
      session,
      hold,
      reads: stream.reads,
      draining: stream.draining,
      options: stream.options,
    })
    streamEvents(request, reply, follower, stream.options)
  } catch (error) {
    hold.release()
    throw error
  }
}
