/** The package export `folder-service/client`: the typed client of GET /v1/folders, its change feed and the tree feed. */
export {
  FolderServiceClient,
  FOLDER_CHANGES_PATH,
  FOLDER_TREE_PATH,
  LIST_FOLDERS_PATH,
  MAX_WAIT_SECONDS,
  type ChangesParams,
  type Folder,
  type FolderChange,
  type FolderChanges,
  type FolderList,
  type FolderPage,
  type FolderServiceClientOptions,
  type FolderTreeBody,
  type ListFoldersParams,
  type ListingOrder,
  type RequestOptions,
  type TreeEntry,
  type TreeParams,
  type WalkOptions,
} from './folder-service-client.js'
export { FolderServiceError, type FolderServiceErrorCode } from './folder-service-error.js'
export { compareFolders, compareFoldersNaturally, folderComparator } from './listing-order.js'
export type { PageLinks } from './link-header.js'
export { FolderTree } from './folder-tree.js'
export type { TreeBatch, TreeOptions } from './tree.js'
export type { WatchBatch, WatchOptions } from './watch.js'
export type { ProblemCode } from '../schemas/problem-codes.js'
