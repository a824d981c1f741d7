import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { ServingStore } from '../store/store.js'
import { FolderChanges } from '../schemas/changes-body.js'
import { ChangesQuery } from '../schemas/changes-query.js'
import { CHANGES_PARAMETER_RULES } from '../schemas/parameter-rules.js'
import { refTo } from '../schemas/ref.js'
import { authenticate } from '../http/auth.js'
import { feedAnswerer, feedResponses } from '../http/feeds/feed-answer.js'
import { parameterProblems } from '../http/problems.js'
import { refuseOtherMethods } from '../http/method-not-allowed.js'
import { changesRequest, type ChangesFeed } from '../feed/changes-feed.js'
import type { EventStreamOptions } from '../http/feeds/event-stream.js'
import { FOLDER_CHANGES_PATH } from '../api/paths.js'

/** GET /v1/folders/changes: what changed among the direct sub-folders of one parent. */

export interface ChangesRouteOptions {
  /** authenticates every request (the session lookup also reads the listing generation) */
  store: Pick<ServingStore, 'findSessionUser'>
  feed: ChangesFeed
  /** heartbeat, retry and lifetime of event streams (Accept: text/event-stream) */
  eventStream: EventStreamOptions
}

const CHANGES_METHODS = ['GET', 'HEAD']

const changesSchema = {
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
  const answer = feedAnswerer(app, { feed, store, rules: CHANGES_PARAMETER_RULES, eventStream })
  const routeOptions = {
    schema: changesSchema,
    schemaErrorFormatter: parameterProblems(CHANGES_PARAMETER_RULES),
    onRequest: authenticate(store),
  }
  app.get(FOLDER_CHANGES_PATH, routeOptions, (request, reply) =>
    answer(request, reply, changesRequest(request.query)),
  )

  refuseOtherMethods(app, FOLDER_CHANGES_PATH, CHANGES_METHODS)
  done()
}
