import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { ServingStore } from '../store/store.js'
import { FolderList, type FolderListBody } from '../schemas/folder.js'
import { Problem } from '../schemas/problem.js'
import { refTo } from '../schemas/ref.js'
import { ListFoldersQuery } from '../schemas/list-folders-query.js'
import { authenticate } from '../http/auth.js'
import { conditionalGet } from '../http/conditional-get.js'
import { JSON_CONTENT_TYPE, serializedText } from '../http/serialized.js'
import type { FastifyReply } from 'fastify'
import type { CachedListing } from '../listing/listing-cache.js'
import { LIST_PATH, listingQuery, type Listings } from '../listing/listing.js'
import { problems } from '../http/problems.js'
import { refuseOtherMethods } from '../http/method-not-allowed.js'

/** GET /v1/folders: the direct sub-folders of one parent, for the session's user. */

export interface FoldersRouteOptions {
  /** authenticates every request (the session lookup also reads the listing generation) */
  store: Pick<ServingStore, 'findSessionUser'>
  /** assembles and caches the answers (see listing/listing.ts) */
  listings: Listings
}

const LISTING_METHODS = ['GET', 'HEAD']

/** Sends finished bytes; the ETag is preset, so the conditional-GET hook does not hash again. */
function sendListing(reply: FastifyReply, listing: CachedListing): FastifyReply {
  return reply
    .header('link', listing.link)
    .header('etag', listing.etag)
    .type(JSON_CONTENT_TYPE)
    .send(listing.body)
}

export const listFoldersSchema = {
  summary: 'List the direct sub-folders of a folder (or of the root)',
  description:
    'Owner-scoped, not-deleted folders only, ordered by name (Unicode code point), then created_at, then id.',
  operationId: 'listFolders',
  tags: ['folders'],
  security: [{ sessionCookie: [] }],
  querystring: ListFoldersQuery,
  response: {
    200: refTo(FolderList),
    400: refTo(Problem),
    401: refTo(Problem),
    403: refTo(Problem),
    404: refTo(Problem),
    429: refTo(Problem),
    500: refTo(Problem),
    503: refTo(Problem),
  },
}

export const foldersRoutes: FastifyPluginCallbackTypebox<FoldersRouteOptions> = (
  app,
  { store, listings },
  done,
) => {
  app.addHook('onSend', conditionalGet)

  app.get(
    LIST_PATH,
    { schema: listFoldersSchema, onRequest: authenticate(store) },
    async (request, reply) => {
      const serialize = (body: FolderListBody) => serializedText(reply, body)
      const listing = await listings.answer(request.sessionUser, listingQuery(request.query), serialize)
      if (listing === null) throw problems.folderNotFound()
      return sendListing(reply, listing)
    },
  )

  refuseOtherMethods(app, LIST_PATH, LISTING_METHODS)
  done()
}
