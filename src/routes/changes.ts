import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { ServingStore } from '../store/store.js'
import { FolderChanges, type FolderChangesBody } from '../schemas/changes.js'
import { ChangesQuery } from '../schemas/changes-query.js'
import { refTo } from '../schemas/ref.js'
import { authenticate, sessionOf } from '../http/auth.js'
import { feedResponses, sendFeedAnswer } from '../http/feed-answer.js'
import { refuseOtherMethods } from '../http/method-not-allowed.js'
import { changesRequest, type ChangesFeed } from '../feed/changes.js'
import { LIST_PATH } from './folders.js'

/** GET /v1/folders/changes: what changed among the direct sub-folders of one parent. */

/** Where a listing's rel="changes" link points (see http/pagination-links.ts). */
export const CHANGES_PATH = `${LIST_PATH}/changes`

export interface ChangesRouteOptions {
  /** authenticates every request (the session lookup also reads the listing generation) */
  store: Pick<ServingStore, 'findSessionUser'>
  feed: ChangesFeed
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
  { store, feed },
  done,
) => {
  // Requests woken by one commit share one answer body (see ChangesFeed): serialised once,
  // by the 200 schema, for all of them.
  const serialized = new WeakMap<FolderChangesBody, string>()

  app.get(CHANGES_PATH, { schema: changesSchema, onRequest: authenticate(store) }, (request, reply) =>
    sendFeedAnswer(app, reply, serialized, (signal) =>
      feed.follow(request.sessionUser, changesRequest(request.query), {
        signal,
        session: sessionOf(store, request),
      }),
    ),
  )

  refuseOtherMethods(app, CHANGES_PATH, CHANGES_METHODS)
  done()
}
