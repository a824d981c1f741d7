import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox'
import { normaliseUuid } from '../ids.js'
import { formatTimestamp } from '../time.js'
import type { FolderRow, OwnerInfo, Store } from '../store/store.js'
import { FolderList, type FolderListBody } from '../schemas/folder.js'
import { Problem } from '../schemas/problem.js'
import { DEFAULT_LIMIT, ListFoldersQuery, MAX_LIMIT } from '../schemas/list-folders-query.js'
import { authenticate } from '../http/auth.js'
import { conditionalGet, strongEtag } from '../http/conditional-get.js'
import type { CachedListing, ListingCache } from '../http/listing-cache.js'
import type { FastifyReply } from 'fastify'
import { paginationLinks } from '../http/pagination-links.js'
import { problems } from '../http/problems.js'

/** GET /v1/folders: the direct sub-folders of one parent, for the session's user. */

export interface FoldersRouteOptions {
  store: Store
  /** finished responses reused while the database is unchanged (see http/listing-cache.ts) */
  cache: ListingCache
}

const LIST_PATH = '/v1/folders'
const LISTING_METHODS = ['GET', 'HEAD']

export const listFoldersSchema = {
  summary: 'List the direct sub-folders of a folder (or of the root)',
  description:
    'Owner-scoped, not-deleted folders only, ordered by name (Unicode code point), then created_at, then id.',
  operationId: 'listFolders',
  tags: ['folders'],
  security: [{ sessionCookie: [] }],
  querystring: ListFoldersQuery,
  response: {
    200: FolderList,
    400: Problem,
    401: Problem,
    403: Problem,
    404: Problem,
    429: Problem,
    500: Problem,
    503: Problem,
  },
}

function sendListing(reply: FastifyReply, listing: CachedListing): FastifyReply {
  return reply
    .header('link', listing.link)
    .header('etag', listing.etag)
    .type(JSON_CONTENT_TYPE)
    .send(listing.body)
}

function toFolderBody(row: FolderRow, owner: OwnerInfo) {
  return {
    id: row.id,
    name: row.name,
    folder_id: row.folder_id,
    owner,
    created_at: formatTimestamp(row.created_at),
    updated_at: formatTimestamp(row.updated_at),
  }
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

export const foldersRoutes: FastifyPluginCallbackTypebox<FoldersRouteOptions> = (
  app,
  { store, cache },
  done,
) => {
  app.decorateRequest('sessionUser', null as never)
  app.addHook('onSend', conditionalGet)

  app.get(
    LIST_PATH,
    { schema: listFoldersSchema, onRequest: authenticate(store) },
    async (request, reply) => {
      const { folder_id, page: pageText, limit: limitText } = request.query
      const page = pageText === undefined ? 1 : Number(pageText)
      const limit = limitText === undefined ? DEFAULT_LIMIT : Math.min(Number(limitText), MAX_LIMIT)
      const parentId = folder_id === undefined ? null : normaliseUuid(folder_id)
      const user = request.sessionUser
      // Read before the data, so a cached response is never older than this version.
      const version = cache.enabled ? store.dataVersion?.() : undefined
      // The owner fields come from this request's own session lookup (made before the version
      // was read), so they are part of the key: a body is reused only with the same owner.
      const key = `${user.id} ${parentId ?? ''} ${page} ${limit} ${user.username} ${user.avatar_url ?? ''}`
      const cached = version === undefined ? undefined : cache.get(version, key)
      if (cached !== undefined) return sendListing(reply, cached)

      const result = await store.listFolders({ ownerId: user.id, parentId, page, limit })
      if (result === null) throw problems.folderNotFound()
      // Every listed folder belongs to the session's user (spec rule 2), so one owner object serves all.
      const owner: OwnerInfo = { id: user.id, username: user.username, avatar_url: user.avatar_url }
      const listing: FolderListBody = {
        folders: result.folders.map((row) => toFolderBody(row, owner)),
        total: result.total,
        page,
        limit,
      }
      // Serialised here through the 200 schema (as Fastify would), so the bytes can be kept.
      const serialized = reply.serialize(listing)
      // The schema serialiser returns a string; the type also admits custom serialisers' buffers.
      const body = typeof serialized === 'string' ? serialized : new TextDecoder().decode(serialized)
      const entry = {
        body,
        etag: strongEtag(body),
        link: paginationLinks(LIST_PATH, parentId, page, limit, result.total),
      }
      if (version !== undefined) cache.set(version, key, entry)
      return sendListing(reply, entry)
    },
  )

  // Every other method: 405 with Allow, decided at onRequest so that no body is parsed (a
  // malformed or unsupported body must not turn it into 400 or 415). With CORS on, a
  // preflight OPTIONS from a listed origin is answered 204 by the CORS hook, which runs first.
  const methodNotAllowed = () => {
    throw problems.methodNotAllowed(LISTING_METHODS)
  }
  app.route({
    method: app.supportedMethods.filter((m) => !LISTING_METHODS.includes(m)),
    url: LIST_PATH,
    schema: { hide: true },
    onRequest: (_request, _reply, done) => done(problems.methodNotAllowed(LISTING_METHODS)),
    handler: methodNotAllowed,
  })
  done()
}
