import { Type, type Static } from '@sinclair/typebox'
import { Uuid } from './bounded.js'
import { feedBody, OwnerChange } from './changes-body.js'
import { Folder } from './folder.js'
import { refTo } from './ref.js'

/**
 * GET /v1/folders/tree (docs/api.md "Folder tree"): one cursor for the first download of a
 * user's folder tree below `root` and every change after it. The 200 body has the shape of
 * the changes feed's, with a tree's entries; it is serialised through this schema, so no
 * field it lacks can leak.
 */

const parentId = (description: string) => Type.Union([Uuid(), Type.Null()], { description })

export const TreeUpsert = Type.Object(
  {
    type: Type.Literal('upsert'),
    folder: refTo(Folder),
    previous_folder_id: Type.Optional(
      parentId(
        "present when the folder's parent changed since the cursor's position: the parent it had then (null: the root)",
      ),
    ),
  },
  {
    $id: 'TreeUpsert',
    additionalProperties: false,
    description:
      'The folder is now in the tree, in this state, exactly as the listing of its parent shows it.',
  },
)

export const TreeRemove = Type.Object(
  {
    type: Type.Literal('remove'),
    id: Uuid(),
    folder_id: parentId('its parent when it left the tree (null: the root)'),
  },
  {
    $id: 'TreeRemove',
    additionalProperties: false,
    description: 'The folder and everything below it left the tree.',
  },
)

export const FolderTree = feedBody(
  'FolderTree',
  Type.Union([refTo(TreeUpsert), refTo(TreeRemove), refTo(OwnerChange)]),
  {
    changes:
      'the download first (a folder never before its parent), then the changes in commit order; a folder at most once',
    has_more: 'true: ask again at once with `cursor`; false: the client holds the present tree',
  },
)

export type FolderTreeBody = Static<typeof FolderTree>
/** One element of `changes`. */
export type TreeEntry = FolderTreeBody['changes'][number]
