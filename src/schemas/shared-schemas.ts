import { Folder, FolderList, OwnerInfo } from './folder.js'
import { Problem } from './problem.js'
import { FolderChanges, OwnerChange, RemoveChange, UpsertChange } from './changes-body.js'
import { FolderTree, TreeRemove, TreeUpsert } from './tree-body.js'

/**
 * The named response shapes, added to the app with `app.addSchema` before any route
 * refers to them (routes use `refTo`). The OpenAPI document lists them under
 * `#/components/schemas`, named by their `$id`; dependencies come first.
 */
export const SHARED_SCHEMAS = [
  OwnerInfo,
  Folder,
  FolderList,
  UpsertChange,
  RemoveChange,
  OwnerChange,
  FolderChanges,
  TreeUpsert,
  TreeRemove,
  FolderTree,
  Problem,
] as const
