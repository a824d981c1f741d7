/**
 * The Store: everything folder-service asks of a database. Two adapters implement it
 * (store/sqlite, store/postgres) and one contract suite (test/contract) holds both to it.
 *
 * Conventions shared by every method:
 * - ids are lower-case UUID strings in and out; the caller normalises input case.
 * - timestamps are epoch milliseconds (numbers) in and out, so both backends round-trip
 *   to the millisecond identically.
 * - expected absence is `null`, never an exception; a database that cannot be reached
 *   raises {@link StoreUnavailableError}.
 * - adapters receive ready connections and never read the environment.
 */

/** The public face of a user: exactly the `owner` fields of a listing (docs/api.md "200 body"). */
export interface OwnerInfo {
  id: string
  username: string
  avatar_url: string | null
}

/** The user bound to a live session, with what the HTTP layer needs beyond OwnerInfo. */
export interface SessionUser extends OwnerInfo {
  is_suspended: boolean
  /**
   * The owner's listing generation: changed by the database, in the writing transaction,
   * whenever anything a listing of this owner shows changes (a folder of theirs inserted,
   * deleted, (un)deleted, renamed, moved or re-timed; their username or avatar). Read in the
   * same statement as the user, so it is at least as new as the owner fields beside it.
   * Never reused: equal generations mean equal listings.
   */
  generation: number
}

export interface FolderRow {
  id: string
  name: string
  /** parent folder id; null at the root */
  folder_id: string | null
  created_at: number
  updated_at: number
}

/** A folder's place in the listing order: name (code points), then created_at, then id. */
export interface FolderKey {
  name: string
  created_at: number
  id: string
}

export interface ListFoldersQuery {
  ownerId: string
  /** null lists the root (folders whose folder_id is null) */
  parentId: string | null
  /** 1-based page number; ignored when `seek` is given */
  page: number
  /** page size, already clamped to the maximum */
  limit: number
  /**
   * Read the `limit` folders strictly after (or before) `key` in the listing order instead
   * of the offset page, by seeking the listing index: as cheap deep in a folder as at its
   * start. `key` need not be a folder that still exists. `skip` rows past the key are
   * stepped over first (with a checkpoint key, it reaches any offset in a few steps).
   */
  seek?: { direction: 'after' | 'before'; key: FolderKey; skip?: number }
}

export interface CheckpointsQuery {
  ownerId: string
  parentId: string | null
  /** the distance between two checkpoints, in rows */
  every: number
}

export interface FolderPage {
  folders: FolderRow[]
  /** every matching folder, not only those on the page */
  total: number
  /** with `seek` only: whether folders lie beyond the page in the seek direction */
  more?: boolean
}

export interface UserRecord extends OwnerInfo {
  is_suspended: boolean
  email: string | null
  password_hash: string | null
  created_at: number
  updated_at: number
}

export interface SessionRecord {
  id: string
  user_id: string
  created_at: number
  /** null: the session never expires */
  expires_at: number | null
}

export interface FolderRecord extends FolderRow {
  owner_id: string
  is_deleted: boolean
}

export interface FileRecord {
  id: string
  name: string
  folder_id: string | null
  owner_id: string
  size: number
  is_deleted: boolean
  created_at: number
  updated_at: number
}

/** A record to write, with `at` naming where it came from (`folders[3]`) for error messages. */
export interface ImportEntry<T> {
  at: string
  row: T
}

/**
 * A validated, normalised data set held in memory (see import/validate-import.ts): ids
 * lower case, names trimmed. Entries are in file order: an entry's position in its array is
 * its index in the file. Checks that span records are the database's (Store.importStream).
 */
export interface ImportData {
  users: ImportEntry<UserRecord>[]
  sessions: ImportEntry<SessionRecord>[]
  folders: ImportEntry<FolderRecord>[]
  files: ImportEntry<FileRecord>[]
}

export type ImportKind = 'users' | 'sessions' | 'folders' | 'files'

/** One validated record and its place in the file: `folders[index]`. */
export type ImportItem =
  | { kind: 'users'; index: number; row: UserRecord }
  | { kind: 'sessions'; index: number; row: SessionRecord }
  | { kind: 'folders'; index: number; row: FolderRecord }
  | { kind: 'files'; index: number; row: FileRecord }

/**
 * Validated records in the order they were read, a batch at a time. Records of one kind
 * come in increasing index order; kinds may come in any order and interleave.
 */
export type ImportSource = AsyncIterable<readonly ImportItem[]> | Iterable<readonly ImportItem[]>

export interface ImportCounts {
  users: number
  sessions: number
  folders: number
  files: number
}

/**
 * What serving GET /v1/folders needs: the only part of the Store the HTTP app sees. Every
 * method is on the hot path of some request; keep it narrow.
 */
export interface ServingStore {
  /** 'sqlite' or 'postgres': for logs and metrics labels only, never for branching. */
  readonly kind: string

  /**
   * The user of the session `sessionId`, with the user's listing generation, when the
   * session exists, has not expired at `now` (expires_at > now, or no expiry) and its user
   * exists; otherwise null. One statement (one round trip): the whole cost of a request
   * whose listing is cached.
   */
  findSessionUser(sessionId: string, now: number): Promise<SessionUser | null>

  /**
   * The live (not deleted) direct children of `parentId` owned by `ownerId`, ordered by
   * name in code point order, then created_at, then id (a total order), sliced to the page.
   * null when `parentId` is not a live folder of `ownerId` (missing, foreign or deleted:
   * one answer for all three, so existence never leaks).
   */
  listFolders(query: ListFoldersQuery): Promise<FolderPage | null>

  /**
   * The keys of the live children at positions `every`, 2 x `every`, ... (1-based) in the
   * listing order: checkpoints from which a deep offset page is a seek and a short skip.
   * One scan of the folder's index entries; null when the parent is not a live folder of
   * the owner, as for listFolders.
   */
  listingCheckpoints(query: CheckpointsQuery): Promise<FolderKey[] | null>

  /**
   * The deployment's 32-byte key for sealing continuation tokens: generated once by the
   * migration and kept in the database, so every instance on it shares it unconfigured.
   * Rejects with MissingCursorKeyError when its row has been deleted.
   */
  cursorKey(): Promise<Uint8Array>

  /** A folder by id (deleted or not), or null. */
  findFolder(folderId: string): Promise<FolderRecord | null>

  /** Resolves when the database answers a trivial query; throws StoreUnavailableError otherwise. */
  ping(): Promise<void>
  /** Releases connections; safe to call more than once. */
  close(): Promise<void>
}

/** What the command line needs besides serving: the schema, the import and the admin commands. */
export interface AdminStore {
  /** Creates or upgrades the schema; safe to call on an up-to-date database. */
  migrate(): Promise<void>

  /**
   * Writes a stream of validated records in one transaction, all or nothing, with memory
   * bounded whatever their number: the records are loaded into staging tables and checked
   * there by set-based queries (duplicate ids and usernames in the file or already stored,
   * owners, users and parents that must exist with the same owner, parent cycles). Throws
   * ImportError naming the first record at fault (lowest index; users, sessions, folders,
   * files in that order); on any error, the source's included, nothing is written.
   * Folders may come before their parents. Derived data (child counts, listing generations)
   * is right when the transaction commits.
   */
  importStream(source: ImportSource): Promise<ImportCounts>

  /** importStream of a data set held in memory. */
  importData(data: ImportData): Promise<ImportCounts>

  /** A user by id, or by username when no user has that id; null when neither matches. */
  findUser(idOrUsername: string): Promise<UserRecord | null>
  /** Every user, ordered by username. */
  listUsers(): Promise<UserRecord[]>
  /** Sets the frozen flag; false when no such user. */
  setUserSuspended(userId: string, suspended: boolean, now: number): Promise<boolean>
  /** Ends a session; false when no such session. */
  deleteSession(sessionId: string): Promise<boolean>
  /** Marks a folder deleted; false when no such live folder. */
  markFolderDeleted(folderId: string, now: number): Promise<boolean>
  /** Every live folder of a user (any depth), ordered like listFolders within a parent. */
  listLiveFolders(ownerId: string): Promise<FolderRecord[]>
  /** How many users exist (start-up hint for an empty database). */
  countUsers(): Promise<number>
}

/** A whole adapter: what the server and the command line open. */
export interface Store extends ServingStore, AdminStore {}

/** The database cannot be reached or did not answer in time: HTTP 503, CLI one-line error. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}

/**
 * The key that seals continuation tokens is gone from the database (its row deleted by hand):
 * every listing with a next or prev link needs it, so requests fail until it is back.
 */
export class MissingCursorKeyError extends Error {
  override readonly name = 'MissingCursorKeyError'
  constructor() {
    super(
      "the cursor key is missing: service_keys has no row named 'cursor'. Restore it from a backup, " +
        'or insert 32 random bytes under that name (continuation tokens given out before are then refused)',
    )
  }
}

/** An import record is at fault; `record` names it as `array[index]`. */
export class ImportError extends Error {
  override readonly name = 'ImportError'
  constructor(
    readonly record: string,
    reason: string,
  ) {
    super(`${record}: ${reason}`)
  }
}
