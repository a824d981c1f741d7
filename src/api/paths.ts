/**
 * The paths of the HTTP API (docs/api.md), once for the server's routes, the typed client
 * and the folder browser. Constants only, no imports: the client package and browsers load
 * this module as it is.
 */

/** GET: one page of a folder's sub-folders. */
export const LIST_FOLDERS_PATH = '/v1/folders'
/** GET: what changed among a folder's direct sub-folders after a cursor. */
export const FOLDER_CHANGES_PATH = `${LIST_FOLDERS_PATH}/changes`
/** GET: a user's folder tree (or a subtree), downloaded and then followed on one cursor. */
export const FOLDER_TREE_PATH = `${LIST_FOLDERS_PATH}/tree`
