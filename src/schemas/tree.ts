import { Type, type Static } from '@sinclair/typebox'
import { Folder } from './folder.js'
import { OwnerChange } from './changes.js'
import { refTo } from './ref.js'

/**
 * The 200 body of GET /v1/folders/tree (docs/api.md "The folder tree"): the changes feed's
 * shape, where an upsert may say which parent the folder left and a remove takes the
 * folder's whole subtree with it. Serialised through this schema, so no field it lacks can
 * leak.
 */

export const TREE_PATH = '/v1/folders/tree'

const Uuid = Type.String({ format: 'uuid', description: 'lower-case UUID' })

export const TreeUpsert = Type.Object(
  {
    type: Type.Literal('upsert'),
    folder: refTo(Folder),
    previous_folder_id: Type.Optional(
      Type.Union([Uuid, Type.Null()], {
        description:
          "present when the folder's parent changed since the cursor's position: the parent it had then (null: the root)",
      }),
    ),
  },
  {
    $id: 'TreeUpsert',
    additionalProperties: false,
    description: "The folder is now in the tree, in this state, as its parent's listing shows it.",
  },
)

export const TreeRemove = Type.Object(
  {
    type: Type.Literal('remove'),
    id: Uuid,
    folder_id: Type.Union([Uuid, Type.Null()], { description: 'its parent when it left; null: the root' }),
  },
  {
    $id: 'TreeRemove',
    additionalProperties: false,
    description: 'The folder and everything below it left the tree.',
  },
)

export const FolderTree = Type.Object(
  {
    changes: Type.Array(Type.Union([refTo(TreeUpsert), refTo(TreeRemove), refTo(OwnerChange)]), {
      description: 'in commit order; a folder at most once; during a download, parents before children',
    }),
    cursor: Type.String({ description: 'where the next request starts; opaque, at most 256 characters' }),
    has_more: Type.Boolean({
      description: 'true: ask again at once with `cursor`; false: the answer reached the present',
    }),
  },
  { $id: 'FolderTree', additionalProperties: false },
)

export type FolderTreeBody = Static<typeof FolderTree>
export type TreeEntry = FolderTreeBody['changes'][number]
