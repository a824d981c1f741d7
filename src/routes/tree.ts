import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { ServingStore } from '../store/store.js'
import { FolderTree, TREE_PATH, type FolderTreeBody } from '../schemas/tree.js'
import { TREE_PARAMETER_RULES, TreeQuery } from '../schemas/tree-query.js'
import { parameterProblems, problems } from '../http/problems.js'
import type { FastifyReply } from 'fastify'
import { acceptsEventStream, type EventStreamOptions } from '../http/event-stream.js'
import { followAsStream } from '../http/feed-stream.js'
import { serializedText } from '../http/serialized.js'
import { refTo } from '../schemas/ref.js'
import { authenticate, sessionOf } from '../http/auth.js'
import { feedResponses, sendFeedAnswer } from '../http/feed-answer.js'
import { refuseOtherMethods } from '../http/method-not-allowed.js'
import { treeRequest, type TreeFeed } from '../feed/tree.js'

/** GET /v1/folders/tree: a user's folder tree below a root, downloaded then followed on one cursor. */

export interface TreeRouteOptions {
  /** authenticates every request (the session lookup also reads the listing generation) */
  store: Pick<ServingStore, 'findSessionUser'>
  feed: TreeFeed
  /** heartbeat, retry and lifetime of event streams (Accept: text/event-stream) */
  eventStream: EventStreamOptions
}

const TREE_METHODS = ['GET', 'HEAD']

export const treeSchema = {
  summary: 'The folder tree below a folder (or the root): downloaded, then followed',
  description:
    'Without a cursor, the tree as upsert entries (a folder never before its parent), then the changes since the download began: upsert (with previous_folder_id when moved), remove (the folder and its subtree left the tree) and owner entries. With `wait`, held until a change commits.',
  operationId: 'followFolderTree',
  tags: ['folders'],
  security: [{ sessionCookie: [] }],
  querystring: TreeQuery,
  response: feedResponses(refTo(FolderTree)),
}

export const treeRoutes: FastifyPluginCallbackTypebox<TreeRouteOptions> = (
  app,
  { store, feed, eventStream },
  done,
) => {
  const serialized = new WeakMap<FolderTreeBody, string>()
  const routeOptions = {
    schema: treeSchema,
    schemaErrorFormatter: parameterProblems(TREE_PARAMETER_RULES),
    onRequest: authenticate(store),
  }
  const serialize = (reply: FastifyReply, body: FolderTreeBody): string => {
    let text = serialized.get(body)
    if (text === undefined) {
      text = serializedText(reply, body)
      serialized.set(body, text)
    }
    return text
  }
  app.get(TREE_PATH, routeOptions, async (request, reply) => {
    // An answer now would invite an instant retry, and a stream would end at once.
    if (app.drainState.draining) throw problems.shuttingDown()
    if (request.method === 'GET' && acceptsEventStream(request.headers.accept))
      return followAsStream(request, reply, {
        feed,
        asked: treeRequest(request.query),
        sessionId: sessionOf(store, request).id,
        rules: TREE_PARAMETER_RULES,
        serialize: (body) => serialize(reply, body),
        store,
        draining: () => app.drainState.draining,
        options: eventStream,
      })
    return sendFeedAnswer(app, reply, serialized, TREE_PARAMETER_RULES, (signal) =>
      feed.follow(request.sessionUser, treeRequest(request.query), {
        signal,
        session: sessionOf(store, request),
      }),
    )
  })
  refuseOtherMethods(app, TREE_PATH, TREE_METHODS)
  done()
}
