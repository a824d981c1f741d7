/** The package export `folder-service/client`: the typed client of GET /v1/folders, its change feed and the tree feed. */
export { FolderServiceClient, type FolderServiceClientOptions } from './folder-service-client.js'
export { FOLDER_CHANGES_PATH, FOLDER_TREE_PATH, LIST_FOLDERS_PATH } from '../api/paths.js'
export { MAX_WAIT_SECONDS } from '../api/limits.js'
export type {
  ChangesParams,
  Folder,
  FolderChange,
  FolderChanges,
  FolderList,
  FolderPage,
  FolderTreeBody,
  ListFoldersParams,
  ListingOrder,
  RequestOptions,
  TreeEntry,
  TreeParams,
  WalkOptions,
} from './types.js'
export { FolderServiceError, type FolderServiceErrorCode } from './folder-service-error.js'
export { compareFolders, compareFoldersNaturally, folderComparator } from './listing-order.js'
export type { PageLinks } from './link-header.js'
export { FolderTree } from './folder-tree.js'
export type { TreeBatch, TreeOptions } from './follow-tree.js'
export type { WatchBatch, WatchOptions } from './watch.js'
export type { ProblemCode } from '../schemas/problem-codes.js'
