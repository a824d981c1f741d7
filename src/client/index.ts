/** The package export `folder-service/client`: the typed client of GET /v1/folders and its change feed. */
export {
  FolderServiceClient,
  FOLDER_CHANGES_PATH,
  LIST_FOLDERS_PATH,
  MAX_WAIT_SECONDS,
  type ChangesParams,
  type Folder,
  type FolderChange,
  type FolderChanges,
  type FolderList,
  type FolderPage,
  type FolderServiceClientOptions,
  type ListFoldersParams,
  type ListingOrder,
  type RequestOptions,
  type WalkOptions,
} from './folder-service-client.js'
export { FolderServiceError, type FolderServiceErrorCode } from './folder-service-error.js'
export { compareFolders, compareFoldersNaturally, folderComparator } from './listing-order.js'
export type { PageLinks } from './link-header.js'
export type { WatchBatch, WatchOptions } from './watch.js'
export type { ProblemCode } from '../schemas/problem-codes.js'
