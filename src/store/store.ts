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

/** The public face of a user: exactly the OwnerInfo fields of the spec. */
export interface OwnerInfo {
  id: string
  username: string
  avatar_url: string | null
}

/** The user bound to a live session, with the one internal flag the HTTP layer needs. */
export interface SessionUser extends OwnerInfo {
  is_suspended: boolean
}

export interface FolderRow {
  id: string
  name: string
  /** parent folder id; null at the root */
  folder_id: string | null
  created_at: number
  updated_at: number
}

export interface ListFoldersQuery {
  ownerId: string
  /** null lists the root (folders whose folder_id is null) */
  parentId: string | null
  /** 1-based page number */
  page: number
  /** page size, already clamped to the maximum */
  limit: number
}

export interface FolderPage {
  folders: FolderRow[]
  /** every matching folder, not only those on the page */
  total: number
}

export interface UserRecord extends SessionUser {
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
 * A validated, normalised data set (see import/validate-import.ts): ids lower case, names
 * trimmed, in-file references checked, folders ordered parents first.
 */
export interface ImportData {
  users: ImportEntry<UserRecord>[]
  sessions: ImportEntry<SessionRecord>[]
  folders: ImportEntry<FolderRecord>[]
  files: ImportEntry<FileRecord>[]
}

export interface ImportCounts {
  users: number
  sessions: number
  folders: number
  files: number
}

export interface Store {
  /** 'sqlite' or 'postgres': for logs and metrics labels only, never for branching. */
  readonly kind: string

  /** Creates or upgrades the schema; safe to call on an up-to-date database. */
  migrate(): Promise<void>

  /**
   * The user of the session `sessionId` when the session exists, has not expired at `now`
   * (expires_at > now, or no expiry) and its user exists; otherwise null.
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
   * Writes a validated data set in one transaction. Checks against what the database
   * already holds (duplicate ids and usernames, parents and owners that must exist) and
   * throws ImportError naming the first record at fault; on any error nothing is written.
   */
  importData(data: ImportData): Promise<ImportCounts>

  /** A user by id, or by username when no user has that id; null when neither matches. */
  findUser(idOrUsername: string): Promise<UserRecord | null>
  /** Every user, ordered by username. */
  listUsers(): Promise<UserRecord[]>
  /** Sets the frozen flag; false when no such user. */
  setUserSuspended(userId: string, suspended: boolean, now: number): Promise<boolean>
  /** Ends a session; false when no such session. */
  deleteSession(sessionId: string): Promise<boolean>
  /** A folder by id (deleted or not), or null. */
  findFolder(folderId: string): Promise<FolderRecord | null>
  /** Marks a folder deleted; false when no such live folder. */
  markFolderDeleted(folderId: string, now: number): Promise<boolean>
  /** Every live folder of a user (any depth), ordered like listFolders within a parent. */
  listLiveFolders(ownerId: string): Promise<FolderRecord[]>
  /** How many users exist (start-up hint for an empty database). */
  countUsers(): Promise<number>

  /**
   * A value that changes whenever anything is committed to the database, by this store or
   * by any other connection or process; undefined when the backend cannot tell cheaply.
   * Answers derived from the database may be reused while it is unchanged.
   */
  dataVersion?(): string | undefined

  /** Resolves when the database answers a trivial query; throws StoreUnavailableError otherwise. */
  ping(): Promise<void>
  /** Releases connections; safe to call more than once. */
  close(): Promise<void>
}

/** The database cannot be reached or did not answer in time: HTTP 503, CLI one-line error. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
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

/** A write would break a rule of the data model (duplicate username, unknown parent...). */
export class ConflictError extends Error {
  override readonly name = 'ConflictError'
}
