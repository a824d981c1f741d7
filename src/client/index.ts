/** The package export `folder-service/client`: the typed client of GET /v1/folders. */
export {
  FolderServiceClient,
  LIST_FOLDERS_PATH,
  type Folder,
  type FolderList,
  type FolderPage,
  type FolderServiceClientOptions,
  type ListFoldersParams,
  type RequestOptions,
  type WalkOptions,
} from './folder-service-client.js'
export { FolderServiceError, type FolderServiceErrorCode } from './folder-service-error.js'
export type { PageLinks } from './link-header.js'
export type { ProblemCode } from '../schemas/problem-codes.js'
