import { Type, type Static } from '@sinclair/typebox'
import { refTo } from './ref.js'

/**
 * Response shapes of GET /v1/folders (docs/api.md, "200 body" and "Headers of a 200").
 * Responses are serialised through these schemas, so a field they lack can never leak.
 */

const Uuid = Type.String({ format: 'uuid', description: 'lower-case UUID' })
const Timestamp = Type.String({
  format: 'date-time',
  description: 'UTC, millisecond precision, `Z` designator',
  examples: ['2026-01-31T09:15:00.000Z'],
})

export const OwnerInfo = Type.Object(
  {
    id: Uuid,
    username: Type.String(),
    avatar_url: Type.Union([Type.String(), Type.Null()], { description: 'URL of the avatar image' }),
  },
  { $id: 'OwnerInfo', additionalProperties: false, description: 'Public information about a user' },
)

export const Folder = Type.Object(
  {
    id: Uuid,
    name: Type.String({ minLength: 1, maxLength: 255 }),
    folder_id: Type.Union([Uuid, Type.Null()], { description: 'parent folder; null at the root' }),
    owner: refTo(OwnerInfo),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Folder', additionalProperties: false },
)

export const FolderList = Type.Object(
  {
    folders: Type.Array(refTo(Folder)),
    total: Type.Integer({ minimum: 0, description: 'every matching folder, not only this page' }),
    page: Type.Integer({ minimum: 1 }),
    limit: Type.Integer({ minimum: 1, maximum: 100, description: 'page size in effect' }),
  },
  { $id: 'FolderList', additionalProperties: false },
)

export type FolderListBody = Static<typeof FolderList>
