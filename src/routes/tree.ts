import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { ServingStore } from '../store/store.js'
import { FolderTree } from '../schemas/tree-body.js'
import { FOLDER_TREE_PATH } from '../api/paths.js'
import { TreeQuery } from '../schemas/tree-query.js'
import { TREE_PARAMETER_RULES } from '../schemas/parameter-rules.js'
import { parameterProblems } from '../http/problems.js'
import type { EventStreamOptions } from '../http/feeds/event-stream.js'
import { refTo } from '../schemas/ref.js'
import { authenticate } from '../http/auth.js'
import { feedAnswerer, feedResponses } from '../http/feeds/feed-answer.js'
import { refuseOtherMethods } from '../http/method-not-allowed.js'
import { treeRequest, type TreeFeed } from '../feed/tree-feed.js'
import { folderTreeJson } from '../http/folder-tree-json.js'

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
  const answer = feedAnswerer(app, {
    feed,
    store,
    rules: TREE_PARAMETER_RULES,
    eventStream,
    json: folderTreeJson,
  })
  const routeOptions = {
    schema: treeSchema,
    schemaErrorFormatter: parameterProblems(TREE_PARAMETER_RULES),
    onRequest: authenticate(store),
  }
  app.get(FOLDER_TREE_PATH, routeOptions, (request, reply) =>
    answer(request, reply, treeRequest(request.query)),
  )

  refuseOtherMethods(app, FOLDER_TREE_PATH, TREE_METHODS)
  done()
}
