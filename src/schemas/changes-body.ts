import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Folder, OwnerInfo } from './folder.js'
import { refTo } from './ref.js'
import { Token, Uuid } from './bounded.js'

/**
 * The 200 body of GET /v1/folders/changes (docs/api.md "Changes"). Serialised through this
 * schema like the listing, so no field it lacks can leak.
 */

/** The most entries one answer holds (a larger `limit` is clamped to it). */
export const MAX_CHANGES_LIMIT = 1000

export const UpsertChange = Type.Object(
  {
    type: Type.Literal('upsert'),
    folder: refTo(Folder),
  },
  {
    $id: 'UpsertChange',
    additionalProperties: false,
    description: 'The folder is now a live direct sub-folder; its current state, as the listing shows it.',
  },
)

export const RemoveChange = Type.Object(
  {
    type: Type.Literal('remove'),
    id: Uuid(),
  },
  {
    $id: 'RemoveChange',
    additionalProperties: false,
    description: 'The folder no longer is a live direct sub-folder.',
  },
)

export const OwnerChange = Type.Object(
  {
    type: Type.Literal('owner'),
    owner: refTo(OwnerInfo),
  },
  {
    $id: 'OwnerChange',
    additionalProperties: false,
    description:
      "The owner's username or avatar changed: every folder of the listing now carries this owner.",
  },
)

/**
 * The body both feeds answer with: entries, where the next request starts, and whether to ask
 * again at once. `descriptions` says what the entries and `has_more: false` mean for a feed.
 */
export function feedBody<Entry extends TSchema>(
  $id: string,
  entry: Entry,
  descriptions: { changes: string; has_more: string },
) {
  return Type.Object(
    {
      changes: Type.Array(entry, { description: descriptions.changes, maxItems: MAX_CHANGES_LIMIT }),
      cursor: Token({ description: 'where the next request starts; opaque' }),
      has_more: Type.Boolean({ description: descriptions.has_more }),
    },
    { $id, additionalProperties: false },
  )
}

export const FolderChanges = feedBody(
  'FolderChanges',
  Type.Union([refTo(UpsertChange), refTo(RemoveChange), refTo(OwnerChange)]),
  {
    changes: 'in commit order; a folder at most once, with its latest state',
    has_more: 'true: ask again at once with `cursor`; false: the answer reached the present',
  },
)

export type FolderChangesBody = Static<typeof FolderChanges>
export type ChangeEntry = FolderChangesBody['changes'][number]
