import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { ServingStore } from '../store/store.js'
import { FolderChanges, type FolderChangesBody } from '../schemas/changes.js'
import { CHANGES_PARAMETER_RULES, ChangesQuery } from '../schemas/changes-query.js'
import { Problem } from '../schemas/problem.js'
import { refTo } from '../schemas/ref.js'
import { authenticate, sessionOf } from '../http/auth.js'
import { feedProblem } from '../http/feed-problems.js'
import { JSON_CONTENT_TYPE, serializedText } from '../http/serialized.js'
import { parameterProblems, problems } from '../http/problems.js'
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

/** Every answer is a fresh read of a moving feed: nothing may store or reuse it. */
export const CHANGES_CACHE_CONTROL = 'no-store'

export const changesSchema = {
  summary: 'Changes to the direct sub-folders of a folder (or of the root) since a cursor',
  description:
    'upsert, remove and owner entries in commit order, each folder at most once; with `wait`, held until a change commits. A client that applies them to a listing read from the same point holds the listing.',
  operationId: 'listFolderChanges',
  tags: ['folders'],
  security: [{ sessionCookie: [] }],
  querystring: ChangesQuery,
  response: {
    200: refTo(FolderChanges),
    400: refTo(Problem),
    401: refTo(Problem),
    403: refTo(Problem),
    404: refTo(Problem),
    410: refTo(Problem),
    429: refTo(Problem),
    500: refTo(Problem),
    503: refTo(Problem),
  },
}

export const changesRoutes: FastifyPluginCallbackTypebox<ChangesRouteOptions> = (
  app,
  { store, feed },
  done,
) => {
  // Requests woken by one commit share one answer body (see ChangesFeed): serialised once,
  // by the 200 schema, for all of them.
  const serialized = new WeakMap<FolderChangesBody, string>()

  const routeOptions = {
    schema: changesSchema,
    schemaErrorFormatter: parameterProblems(CHANGES_PARAMETER_RULES),
    onRequest: authenticate(store),
  }
  app.get(CHANGES_PATH, routeOptions, async (request, reply) => {
    // A client that goes away frees its slot at once, not when its wait would have ended.
    const gone = new AbortController()
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort()
    }
    reply.raw.once('close', onClose)
    try {
      // An answer now would be empty and invite an instant retry: 503 with Retry-After.
      if (app.drainState.draining) throw problems.shuttingDown()
      const result = await feed.follow(request.sessionUser, changesRequest(request.query), {
        signal: gone.signal,
        session: sessionOf(store, request),
      })
      switch (result.outcome) {
        case 'parent-not-found':
        case 'cursor-invalid':
        case 'expired':
        case 'busy':
        case 'session-ended':
        case 'frozen':
          throw feedProblem(result, CHANGES_PARAMETER_RULES)
        case 'answer': {
          let text = serialized.get(result.body)
          if (text === undefined) {
            text = serializedText(reply, result.body)
            serialized.set(result.body, text)
          }
          return reply.header('cache-control', CHANGES_CACHE_CONTROL).type(JSON_CONTENT_TYPE).send(text)
        }
      }
    } finally {
      reply.raw.off('close', onClose)
    }
  })

  refuseOtherMethods(app, CHANGES_PATH, CHANGES_METHODS)
  done()
}
