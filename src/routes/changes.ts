import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ServingStore } from '../store/store.js'
import { FolderChanges, type FolderChangesBody } from '../schemas/changes.js'
import { CHANGES_PARAMETER_RULES, ChangesQuery, type ChangesQueryString } from '../schemas/changes-query.js'
import { refTo } from '../schemas/ref.js'
import { authenticate, sessionOf } from '../http/auth.js'
import { feedProblem } from '../http/feed-problems.js'
import { serializedText } from '../http/serialized.js'
import { feedResponses, sendFeedAnswer } from '../http/feed-answer.js'
import { parameterProblems, problems } from '../http/problems.js'
import { refuseOtherMethods } from '../http/method-not-allowed.js'
import { changesRequest, type ChangesFeed, type FeedOutcome } from '../feed/changes.js'
import { acceptsEventStream, type EventStreamOptions } from '../http/event-stream.js'
import { streamFeed } from '../http/feed-stream.js'
import type { HttpProblem } from '../http/problems.js'
import { MAX_WAIT_SECONDS } from '../schemas/changes-query.js'
import { TOKEN_PATTERN } from '../schemas/bounded.js'
import { LIST_PATH } from './folders.js'

/** GET /v1/folders/changes: what changed among the direct sub-folders of one parent. */

/** Where a listing's rel="changes" link points (see http/pagination-links.ts). */
export const CHANGES_PATH = `${LIST_PATH}/changes`

export interface ChangesRouteOptions {
  /** authenticates every request (the session lookup also reads the listing generation) */
  store: Pick<ServingStore, 'findSessionUser'>
  feed: ChangesFeed
  /** heartbeat, retry and lifetime of event streams (Accept: text/event-stream) */
  eventStream: EventStreamOptions
}

/** The problem a feed outcome other than an answer stands for. */
function outcomeProblem(outcome: Exclude<FeedOutcome, { outcome: 'answer' }>): HttpProblem {
  return feedProblem(outcome, CHANGES_PARAMETER_RULES)
}

const CURSOR_PATTERN = new RegExp(TOKEN_PATTERN)

/**
 * The cursor of a stream: Last-Event-ID (an EventSource's reconnect) wins over the query's
 * `cursor`, which a reconnect repeats from the original URL and is then older.
 */
function streamCursor(lastEventId: string | string[] | undefined, cursor: string | null): string | null {
  if (lastEventId === undefined || lastEventId === '') return cursor
  if (typeof lastEventId !== 'string' || !CURSOR_PATTERN.test(lastEventId)) {
    throw problems.invalidInput('Header Last-Event-ID is not a cursor of this feed.')
  }
  return lastEventId
}

const CHANGES_METHODS = ['GET', 'HEAD']

export const changesSchema = {
  summary: 'Changes to the direct sub-folders of a folder (or of the root) since a cursor',
  description:
    'upsert, remove and owner entries in commit order, each folder at most once; with `wait`, held until a change commits. A client that applies them to a listing read from the same point holds the listing.',
  operationId: 'listFolderChanges',
  tags: ['folders'],
  security: [{ sessionCookie: [] }],
  querystring: ChangesQuery,
  response: feedResponses(refTo(FolderChanges)),
}

export const changesRoutes: FastifyPluginCallbackTypebox<ChangesRouteOptions> = (
  app,
  { store, feed, eventStream },
  done,
) => {
  // Requests woken by one commit share one answer body (see ChangesFeed): serialised once,
  // by the 200 schema, for all of them.
  const serialized = new WeakMap<FolderChangesBody, string>()

  const serialize = (reply: FastifyReply, body: FolderChangesBody): string => {
    let text = serialized.get(body)
    if (text === undefined) {
      text = serializedText(reply, body)
      serialized.set(body, text)
    }
    return text
  }

  /** GET with Accept: text/event-stream: every answer of the feed as one event. */
  async function stream(request: FastifyRequest, reply: FastifyReply, query: ChangesQueryString) {
    const asked = changesRequest(query)
    const cursor = streamCursor(request.headers['last-event-id'], asked.cursor)
    // The stream checks the session after every read itself (streamFeed), so the feed does not.
    const session = { id: sessionOf(store, request).id }
    const hold = feed.hold(session.id)
    if (hold === null) throw problems.tooManyWaiters()
    try {
      const draining = () => app.drainState.draining
      const first = await feed.follow(
        request.sessionUser,
        { ...asked, cursor, wait: 0 },
        { signal: new AbortController().signal, session },
      )
      if (first.outcome !== 'answer') {
        if (first.outcome === 'cursor-invalid' && cursor !== asked.cursor) {
          throw problems.invalidInput('Header Last-Event-ID is not a cursor of this feed.')
        }
        throw outcomeProblem(first)
      }
      const held = hold
      await streamFeed<FolderChangesBody>(request, reply, {
        first: first.body,
        async answer(user, after, { deadline, signal, draining: last }) {
          const seconds = Math.ceil((deadline - Date.now()) / 1000)
          const wait = last ? 0 : Math.max(1, Math.min(MAX_WAIT_SECONDS, seconds))
          const result = await feed.follow(
            user,
            { ...asked, cursor: after, wait },
            { signal, session, hold: held },
          )
          return result.outcome === 'answer' ? { body: result.body } : { problem: outcomeProblem(result) }
        },
        serialize: (body) => serialize(reply, body),
        store,
        hold,
        draining,
        options: eventStream,
      })
    } catch (error) {
      hold.release()
      throw error
    }
  }

  const routeOptions = {
    schema: changesSchema,
    schemaErrorFormatter: parameterProblems(CHANGES_PARAMETER_RULES),
    onRequest: authenticate(store),
  }
  app.get(CHANGES_PATH, routeOptions, async (request, reply) => {
    // An answer now would be empty and invite an instant retry, and a stream would end at
    // once: 503 with Retry-After.
    if (app.drainState.draining) throw problems.shuttingDown()
    if (request.method === 'GET' && acceptsEventStream(request.headers.accept))
      return stream(request, reply, request.query)
    return sendFeedAnswer(app, reply, serialized, CHANGES_PARAMETER_RULES, (signal) =>
      feed.follow(request.sessionUser, changesRequest(request.query), {
        signal,
        session: sessionOf(store, request),
      }),
    )
  })

  refuseOtherMethods(app, CHANGES_PATH, CHANGES_METHODS)
  done()
}
