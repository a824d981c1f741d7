import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TSchema } from '@sinclair/typebox'
import { Problem } from '../../schemas/problem.js'
import { refTo } from '../../schemas/ref.js'
import type { ServingStore } from '../../store/store.js'
import type { Feed, FeedBody, FeedRequest } from '../../feed/feed.js'
import type { FeedSession as FeedSessionShape } from '../../feed/session-recheck.js'
import type { SessionUser } from '../../store/store.js'
import { authenticatedSessionId } from '../auth.js'
import { acceptsEventStream, type EventStreamOptions } from './event-stream.js'
import { feedProblem } from './feed-problems.js'
import { followAsStream } from './feed-stream.js'
import { prepareBody, sendPrepared, type PreparedBody } from './prepared-answer.js'
import { SessionLookups } from './session-lookups.js'
import { StreamReads } from './stream-reads.js'
import type { ParameterRules } from '../../schemas/parameter-rules.js'
import { problems } from '../problems.js'
import { JSON_CONTENT_TYPE, serializedText } from '../serialized.js'
import { FEED_CACHE_CONTROL } from '../../api/feed-headers.js'

/** The responses a feed route declares: its 200 body, and the problems of its refusals. */
export function feedResponses(ok: TSchema) {
  const problem = refTo(Problem)
  return {
    200: ok,
    400: problem,
    401: problem,
    403: problem,
    404: problem,
    410: problem,
    429: problem,
    500: problem,
    503: problem,
  }
}

/**
 * The session of an authenticated request as a feed checks it after a read: read again as on
 * arrival, with the other checks of the same turn in one statement (session-lookups.ts). Its
 * id and the route's lookups, nothing else of the request.
 */
class FeedSession implements FeedSessionShape {
  constructor(
    private readonly lookups: SessionLookups,
    readonly id: string,
  ) {}

  lookup(): Promise<SessionUser | null> {
    return this.lookups.find(this.id)
  }
}

/** What a feed route answers with: its feed, the session store, its 400 texts, its streams. */
export interface FeedRoute<R extends FeedRequest, B extends FeedBody> {
  feed: Feed<R, B>
  store: Pick<ServingStore, 'findSessionUser' | 'findSessionUsers'>
  /** the feed's parameter texts, so a bad cursor's 400 says where that feed's cursors come from */
  rules: ParameterRules
  eventStream: EventStreamOptions
  /** the body's JSON, byte for byte what the route's 200 schema serialiser writes; default: that serialiser */
  json?: (body: B) => string
}

/**
 * The handler body both feed routes (changes, tree) share: 503 while draining (an answer
 * now would invite an instant retry, and a stream would end at once), an event stream for
 * `Accept: text/event-stream`, otherwise one answer. A body is serialised once (by the
 * route's 200 schema, or its `json`, which writes the same bytes) for every request and
 * stream that shares it (one commit, many followers). A client that goes away aborts its
 * wait, which frees a held slot at once rather than when its wait would have ended.
 */
export function feedAnswerer<R extends FeedRequest, B extends FeedBody>(
  app: FastifyInstance,
  { feed, store, rules, eventStream, json }: FeedRoute<R, B>,
): (request: FastifyRequest, reply: FastifyReply, asked: R) => Promise<unknown> {
  const serialized = new WeakMap<B, PreparedBody>()
  const prepared = (reply: FastifyReply, body: B): PreparedBody => {
    let bytes = serialized.get(body)
    if (bytes === undefined) {
      bytes = prepareBody(json === undefined ? serializedText(reply, body) : json(body))
      serialized.set(body, bytes)
    }
    return bytes
  }
  const serialize = (reply: FastifyReply, body: B): string => prepared(reply, body).text
  const draining = () => app.drainState.draining
  const lookups = new SessionLookups(store)
  const reads = new StreamReads<B>(lookups)
  /** One answer, held while the feed waits (or the 503 while draining). */
  const answerOnce = async (request: FastifyRequest, reply: FastifyReply, asked: R): Promise<unknown> => {
    if (draining()) throw problems.shuttingDown()
    // The socket is all a held wait keeps of the client: the watcher sees it destroyed when
    // the client leaves (no listener, timer or AbortSignal per held request).
    const result = await feed.follow(request.sessionUser, asked, {
      client: request.raw.socket,
      session: new FeedSession(lookups, authenticatedSessionId(request)),
    })
    if (result.outcome !== 'answer') throw feedProblem(result, rules)
    // A request that may be held: one of many that one commit answers with the same body.
    if (asked.wait > 0 && request.method === 'GET')
      return sendPrepared(app, reply, prepared(reply, result.body))
    return reply
      .header('cache-control', FEED_CACHE_CONTROL)
      .type(JSON_CONTENT_TYPE)
      .send(serialize(reply, result.body))
  }
  // Not async itself: a stream is followAsStream's promise alone, without a suspended frame
  // above it for the stream's whole life. Nothing here throws; the refusals are rejections.
  return (request, reply, asked) =>
    !draining() && request.method === 'GET' && acceptsEventStream(request.headers.accept)
      ? followAsStream(request, reply, {
          feed,
          asked,
          session: new FeedSession(lookups, authenticatedSessionId(request)),
          rules,
          serialize: (body) => serialize(reply, body),
          reads,
          draining,
          options: eventStream,
        })
      : answerOnce(request, reply, asked)
}
