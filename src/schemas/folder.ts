import { Type, type Static } from '@sinclair/typebox'
import { refTo } from './ref.js'
import { Text, Timestamp, Uuid } from './bounded.js'

/**
 * Response shapes of GET /v1/folders (docs/api.md, "200 body" and "Headers of a 200").
 * Responses are serialised through these schemas, so a field they lack can never leak.
 */

/** A page holds at most this many folders (the largest `limit`). */
const MAX_PAGE_SIZE = 100
/** The largest count or page number the document promises: the int32 range of page. */
const MAX_INT32 = 2147483647

export const OwnerInfo = Type.Object(
  {
    id: Uuid(),
    username: Text(255, { minLength: 1, examples: ['demo'] }),
    // No `format`: the column holds whatever text other writers put there (at most 2,048
    // characters), and a format inside this union would make the serialiser refuse (500) an
    // answer whose owner has an avatar_url that is not a URI.
    avatar_url: Type.Union([Text(2048), Type.Null()], {
      description: 'URL of the avatar image, as stored',
    }),
  },
  { $id: 'OwnerInfo', additionalProperties: false, description: 'Public information about a user' },
)

export const Folder = Type.Object(
  {
    id: Uuid(),
    name: Text(255, { minLength: 1, examples: ['Documents'] }),
    folder_id: Type.Union([Uuid(), Type.Null()], { description: 'parent folder; null at the root' }),
    owner: refTo(OwnerInfo),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'Folder', additionalProperties: false },
)

export const FolderList = Type.Object(
  {
    folders: Type.Array(refTo(Folder), { maxItems: MAX_PAGE_SIZE }),
    total: Type.Integer({
      format: 'int64',
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'every matching folder, not only this page',
    }),
    page: Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_INT32 }),
    limit: Type.Integer({
      format: 'int32',
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      description: 'page size in effect',
    }),
  },
  { $id: 'FolderList', additionalProperties: false },
)

export type FolderListBody = Static<typeof FolderList>
