import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import type { ServingStore, SessionUser } from '../store/store.js'
import { FolderList } from '../schemas/folder.js'
import { Problem } from '../schemas/problem.js'
import { refTo } from '../schemas/ref.js'
import { ListFoldersQuery } from '../schemas/list-folders-query.js'
import { authenticate } from '../http/auth.js'
import { conditionalGet, strongEtag } from '../http/conditional-get.js'
import { JSON_CONTENT_TYPE } from '../http/serialized.js'
import { folderListJson } from '../http/folder-list-json.js'
import type { FastifyReply } from 'fastify'
import type { CachedListing, ListingCache } from '../http/listing-cache.js'
import { paginationLinks } from '../http/pagination-links.js'
import {
  listingKey,
  listingQuery,
  type ListingPage,
  type ListingQuery,
  type Listings,
} from '../listing/listing.js'
import { problems, toProblem } from '../http/problems.js'
import { activeTracing } from '../tracing/tracing.js'
import { refuseOtherMethods } from '../http/method-not-allowed.js'
import { LIST_FOLDERS_PATH } from '../api/paths.js'

/** GET /v1/folders: the direct sub-folders of one parent, for the session's user. */

export interface FoldersRouteOptions {
  /** authenticates every request (the session lookup also reads the listing generation) */
  store: Pick<ServingStore, 'findSessionUser'>
  /** reads the pages (see listing/listing.ts) */
  listings: Listings
  /** the finished answers, under the listing's key */
  cache: ListingCache
}

const LISTING_METHODS = ['GET', 'HEAD']

/** The `listing` span's attribute: `hit`, `miss`, or `off` (LISTING_CACHE_MB=0). */
const LISTING_CACHE = 'folder_service.listing_cache'

/**
 * A page as it is sent and kept: the bytes the route's 200 schema would write (only the
 * fields of FolderList reach them; see http/folder-list-json.ts), its strong ETag and its
 * Link header.
 */
function finishedListing({ body, navigation }: ListingPage): CachedListing {
  const bytes = Buffer.from(folderListJson(body))
  return { body: bytes, etag: strongEtag(bytes), link: paginationLinks(LIST_FOLDERS_PATH, navigation) }
}

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
    'Owner-scoped, not-deleted folders only, ordered by name (Unicode code point), then created_at, then id; with `order=name_natural`, in natural order (case and accents set aside, numbers by value), then by the same tie-breaks.',
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
  { store, listings, cache },
  done,
) => {
  app.addHook('onSend', conditionalGet)

  /** The page's finished bytes, read and filed in the cache under `key` (`era`: see ListingCache). */
  const readPage = async (user: SessionUser, query: ListingQuery, key: string): Promise<CachedListing> => {
    const era = cache.era
    const read = await listings.read(user, query)
    switch (read.outcome) {
      case 'cursor-invalid':
        throw problems.invalidParameter('cursor')
      case 'parent-not-found':
        throw problems.folderNotFound()
      case 'page': {
        const listing = finishedListing(read.page)
        if (cache.enabled) cache.set(key, listing, era)
        return listing
      }
    }
  }

  // Traced (src/tracing/): the handler runs in a `listing` span that says what the cache did,
  // `hit` unless a read marks it `miss`; off, the handler below is all there is.
  const tracing = activeTracing()
  const read =
    tracing === null
      ? readPage
      : (user: SessionUser, query: ListingQuery, key: string) => {
          tracing.annotate(LISTING_CACHE, cache.enabled ? 'miss' : 'off')
          return readPage(user, query, key)
        }

  /** The handler as it is, or (traced) inside a `listing` span, `hit` unless a read said otherwise. */
  const listingSpan = <A extends unknown[], R>(handler: (...args: A) => Promise<R>) =>
    tracing === null
      ? handler
      : (...args: A) =>
          tracing.step('listing', () => handler(...args), {
            attributes: { [LISTING_CACHE]: 'hit' },
            failed: (error) => toProblem(error).status >= 500,
          })

  app.get(
    LIST_FOLDERS_PATH,
    { schema: listFoldersSchema, onRequest: authenticate(store) },
    listingSpan(async (request, reply) => {
      const user = request.sessionUser
      const query = listingQuery(request.query)
      // Off, the cache costs not even its key; a hit costs no read, serialisation or hash.
      const key = cache.enabled ? listingKey(user, query) : ''
      const cached = cache.enabled ? cache.get(key) : undefined
      if (cached !== undefined) return sendListing(reply, cached)
      return sendListing(reply, await read(user, query, key))
    }),
  )

  refuseOtherMethods(app, LIST_FOLDERS_PATH, LISTING_METHODS)
  done()
}
