import type { Static } from '@sinclair/typebox'
import type { FolderChanges as FolderChangesSchema } from '../schemas/changes-body.js'
import type { Folder as FolderSchema, FolderList as FolderListSchema } from '../schemas/folder.js'
import type { FolderTreeBody as TreeBody } from '../schemas/tree-body.js'
import type { ListingOrder } from '../ordering/listing-orders.js'
import type { PageLinks } from './link-header.js'

/**
 * The client's types: the bodies as the service writes them, the parameters of its
 * requests, and a page as the client hands it over. Types only: the schema imports vanish
 * when compiled (packages/client/build.ts writes their structures out for the package).
 */

/** A folder as the service serialises it (the server's own TypeBox schema). */
export type Folder = Static<typeof FolderSchema>
/** The body of a listing page (the server's own TypeBox schema). */
export type FolderList = Static<typeof FolderListSchema>
/** The body of a changes answer (the server's own TypeBox schema). */
export type FolderChanges = Static<typeof FolderChangesSchema>
/** One entry of a changes answer: `upsert`, `remove` or `owner`. */
export type FolderChange = FolderChanges['changes'][number]
/** The body of a tree answer (the server's own TypeBox schema). */
export type FolderTreeBody = TreeBody
/** One entry of a tree answer: `upsert` (with `previous_folder_id` after a move), `remove` (with its subtree) or `owner`. */
export type TreeEntry = TreeBody['changes'][number]

export type { ListingOrder }

export interface ListFoldersParams {
  /** parent folder; absent or null: the root */
  folderId?: string | null
  page?: number
  limit?: number
  /** a continuation token, exactly as found in a `next` or `prev` link */
  cursor?: string
  /** absent: `name` (code point order); `name_natural`: a file manager's order */
  order?: ListingOrder
}

export interface ChangesParams {
  /** the folder whose direct sub-folders are followed; absent or null: the root */
  folderId?: string | null
  /** from a changes answer or a page's `changesCursor`; absent: start now (no changes, a fresh cursor) */
  cursor?: string
  /** most entries in one answer (the service's default 100 when absent; at most 1000) */
  limit?: number
  /** seconds (0 to 60) the service may hold the answer while nothing follows the cursor */
  wait?: number
}

export interface TreeParams {
  /** the folder whose subtree is followed; absent or null: the user's whole tree */
  root?: string | null
  /** from a tree answer; absent: start a new download */
  cursor?: string
  /** most entries in one answer (the service's default 100 when absent; at most 1000) */
  limit?: number
  /** seconds (0 to 60) the service may hold the answer while nothing is pending */
  wait?: number
}

export interface RequestOptions {
  signal?: AbortSignal
}

export interface WalkOptions extends RequestOptions {
  /** page size of the walk (the service's default when absent; at most 100) */
  limit?: number
  /** the order of the walk (absent: the service's default, `name`) */
  order?: ListingOrder
}

export interface FolderPage {
  body: FolderList
  /** the relations of the `Link` header as absolute URLs */
  links: PageLinks
  /**
   * The cursor of the page's `rel="changes"` link: `changes()` from it gives what changed in
   * the folder since this page was read. Null when the service sent no such link.
   */
  changesCursor: string | null
  /** the strong ETag of the body, or null when the service sent none */
  etag: string | null
  /** true when the service answered 304 and this is the page kept from before */
  notModified: boolean
  /** the URL that was requested */
  url: string
}
