import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import type { ServingStore } from '../store/store.js'
import { FolderChanges, type FolderChangesBody } from '../schemas/changes.js'
import { CHANGES_PARAMETER_RULES, ChangesQuery } from '../schemas/changes-query.js'
import { refTo } from '../schemas/ref.js'
import { authenticate, sessionOf } from '../http/auth.js'
import { serializedText } from '../http/serialized.js'
import { feedResponses, sendFeedAnswer } from '../http/feed-answer.js'
import { parameterProblems, problems } from '../http/problems.js'
import { refuseOtherMethods } from '../http/method-not-allowed.js'
import { changesRequest, type ChangesFeed } from '../feed/changes.js'
import { acceptsEventStream, type EventStreamOptions } from '../http/event-stream.js'
import { followAsStream } from '../http/feed-stream.js'
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
      return followAsStream(request, reply, {
        feed,
        asked: changesRequest(request.query),
        sessionId: sessionOf(store, request).id,
        rules: CHANGES_PARAMETER_RULES,
        serialize: (body) => serialize(reply, body),
        store,
        draining: () => app.drainState.draining,
        options: eventStream,
      })
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
