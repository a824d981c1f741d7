import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SessionUser } from '../../store/store.js'
import {
  eventFrame,
  streamEvents,
  type EventStreamOptions,
  type NextFrame,
  type StreamControl,
} from './event-stream.js'
import { problemBody, problems, toProblem, type HttpProblem } from '../problems.js'
import { feedProblem, sessionProblem } from './feed-problems.js'
import type { Feed, FeedBody, FeedRequest } from '../../feed/feed.js'
import type { Idle } from '../../feed/held-request.js'
import { sessionVerdict, sessionVerdictNow, type FeedSession } from '../../feed/session-recheck.js'
import type { Hold } from '../../feed/watcher.js'
import { TOKEN_PATTERN } from '../../schemas/bounded.js'
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

/** One read of a feed: an answer, nothing yet (park at that generation), or the problem that ends the stream. */
type FeedStep<B extends FeedBody> = { body: B } | Idle | { problem: HttpProblem }

interface FeedStream<B extends FeedBody> {
  /** the first answer, read before the stream started (its problems were ordinary answers) */
  first: B
  /**
   * One read after `cursor`; `draining`: the last read before the stream closes, which
   * answers even when nothing follows. `wokenAt`: as for {@link Hold.park}'s wake.
   */
  step(user: SessionUser, cursor: string, draining: boolean, wokenAt: number | null): Promise<FeedStep<B>>
  /** the body as the route's 200 schema serialises it */
  serialize: (body: B) => string
  /** the request's session, checked before every event */
  session: FeedSession
  /** the stream's place among the process's held requests: it parks there, released when it ends */
  hold: Hold
  /** whether the process is shutting down: send what is pending, then close */
  draining(): boolean
  options: EventStreamOptions
}

/** One frame per answer body, shared by every stream that sends it (one commit, many followers). */
const frames = new WeakMap<FeedBody, Uint8Array>()

function changesFrame<B extends FeedBody>(body: B, serialize: (body: B) => string): Uint8Array {
  let frame = frames.get(body)
  if (frame === undefined) {
    frame = eventFrame('changes', serialize(body), body.cursor)
    frames.set(body, frame)
  }
  return frame
}

/**
 * Streams `feed` on `reply` until the client leaves, a problem ends it, or its time runs out.
 * While nothing follows its cursor, the stream is one record parked on the watcher (its hold)
 * and this state: no promise, timer or listener of its own.
 */
function streamFeed<B extends FeedBody>(
  request: FastifyRequest,
  reply: FastifyReply,
  feed: FeedStream<B>,
): void {
  const errorFrame = (problem: HttpProblem): NextFrame => ({
    frame: eventFrame('error', JSON.stringify(problemBody(problem, request.id))),
    last: true,
  })
  /** The session's user after `body` was read, or the problem that ends the stream (401, 403, 503). */
  const sessionUser = async (body: B): Promise<SessionUser | HttpProblem> => {
    try {
      const verdict = await sessionVerdict(body, feed.session)
      return verdict.outcome === 'valid' ? verdict.user : sessionProblem(verdict)
    } catch (error) {
      // An outage of the lookup: the stream ends with its problem, as an arrival would.
      return toProblem(error)
    }
  }
  const failed = (error: unknown): NextFrame => {
    const problem = toProblem(error)
    if (problem.status >= 500) request.log.error({ err: error }, 'event stream failed')
    return errorFrame(problem)
  }
  let cursor = feed.first.cursor
  // The user as last checked: its listing generation tells the feed where the present is.
  let user = request.sessionUser
  let started = false
  /** the last event said has_more: the answer that reaches the present is sent, even empty */
  let behind = feed.first.has_more
  let stopped = false
  /** takes the parked record back; null while not parked */
  let unpark: (() => void) | null = null
  /** the watcher closed (shutdown): read once more, send what it finds, then end */
  let closed = false
  let control: StreamControl
  let deliver: (step: NextFrame) => void

  /** One read after `cursor` (`wokenAt`: the wake's generation), then an event, or a park. */
  const read = (wokenAt: number | null): void => {
    if (stopped || control.gone) return deliver(null)
    const draining = closed || feed.draining()
    if (!draining && Date.now() >= control.deadline) return deliver(null)
    feed
      .step(user, cursor, draining, wokenAt)
      .then((step) => (stopped ? null : answered(step, draining)))
      .then(
        (next) => next !== undefined && deliver(next),
        (error: unknown) => deliver(failed(error)),
      )
  }
  /** What a read found: the frame to send, or undefined when the stream parked or reads on. */
  const answered = async (step: FeedStep<B>, draining: boolean): Promise<NextFrame | undefined> => {
    if ('problem' in step) return errorFrame(step.problem)
    if ('generation' in step) {
      if (draining) return null
      park(step.generation)
      return undefined
    }
    const { body } = step
    if (body.changes.length === 0 && !body.has_more && !behind) {
      // Nothing to tell (only other folders changed, or the last read found nothing): no
      // event, but the next read starts from the newer position.
      cursor = body.cursor
      if (draining) return null
      read(null)
      return undefined
    }
    // Checked again after the read: the answer may hold only what committed while the
    // session was still good.
    const checked = await sessionUser(body)
    if (!('id' in checked)) return errorFrame(checked)
    user = checked
    cursor = body.cursor
    behind = body.has_more
    // While draining, the pending answers are sent until the present, then the stream ends.
    return { frame: changesFrame(body, feed.serialize), last: false }
  }
  const park = (generation: number): void => {
    unpark = feed.hold.park(user.id, generation, control.deadline, (end) => {
      unpark = null
      if (end === 'session') return recheck(generation)
      if (end === 'closed') closed = true
      read(end === 'changed' ? feed.hold.wokenAt : null)
    })
  }
  /** The watcher's sweep found the session refused while parked: its problem ends the stream. */
  const recheck = (generation: number): void => {
    sessionVerdictNow(feed.session).then(
      (verdict) => {
        if (stopped || control.gone) return deliver(null)
        if (verdict.outcome !== 'valid') return deliver(errorFrame(sessionProblem(verdict)))
        park(generation)
      },
      (error: unknown) => deliver(failed(error)),
    )
  }
  streamEvents(
    request,
    reply,
    {
      next(streamControl, give) {
        control = streamControl
        deliver = give
        if (started) return read(null)
        started = true
        give({ frame: changesFrame(feed.first, feed.serialize), last: false })
      },
      stop() {
        stopped = true
        unpark?.()
        unpark = null
        feed.hold.release()
      },
    },
    feed.options,
  )
}

const CURSOR_PATTERN = new RegExp(TOKEN_PATTERN)
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
  draining(): boolean
  options: EventStreamOptions
}

/**
 * GET with `Accept: text/event-stream` on a feed (changes, tree): the first answer as an
 * ordinary request would get it (its problems are ordinary answers), then every later one
 * as an event. The stream checks the session after every read itself (streamFeed), with one
 * lookup shared by the streams a commit wakes.
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
      { signal: new AbortController().signal, session },
    )
    if (first.outcome !== 'answer') {
      if (first.outcome === 'cursor-invalid' && cursor !== asked.cursor) {
        throw problems.invalidInput(NOT_A_CURSOR)
      }
      throw feedProblem(first, rules)
    }
    streamFeed<B>(request, reply, {
      first: first.body,
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
      draining: () => stream.draining(),
      options: stream.options,
    })
  } catch (error) {
    hold.release()
    throw error
  }
}
