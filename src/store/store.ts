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
  /** frozen (403 FROZEN_ACCOUNT): named after its column, users.is_suspended, as in UserRecord */
  is_suspended: boolean
  /**
   * The owner's listing generation: changed by the database, in the writing transaction,
   * whenever anything a listing of this owner shows changes (a folder of theirs inserted,
   * deleted, (un)deleted, renamed, moved or re-timed; their username or avatar). Read in the
   * same statement as the user, so it is at least as new as the owner fields beside it.
   * Clock-based (microseconds since the epoch, or just above the previous value), so a value
   * never repeats for an owner, even after a restored backup: equal generations mean equal
   * listings. It is also the owner's position in the change log (ChangePosition).
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

/**
 * A folder's place in the listing order: name (code points), then created_at, then id; in
 * natural order, its sort key (src/ordering/natural-key.ts) first.
 */
export interface FolderKey {
  name: string
  created_at: number
  id: string
  /** natural order only: the stored sort key, or a bound of it (listing/natural-seek.ts) */
  naturalKey?: Uint8Array
}

/** `name_natural` sorts by the natural sort key, then as `name` does: name, created_at, id. */
export type { ListingOrder } from '../ordering/listing-orders.js'
import type { ListingOrder } from '../ordering/listing-orders.js'
import type { ReadRoutingStats, ReplicaRefusal } from './replica-stats.js'
import type { Expansion, TreeAnswer } from './tree-answer.js'
import type { PrimaryChange, PrimaryStats } from './failover-stats.js'

export interface ListFoldersQuery {
  ownerId: string
  /** null lists the root (folders whose folder_id is null) */
  parentId: string | null
  /** 1-based page number; ignored when `seek` is given */
  page: number
  /**
   * Absent: 'name'. In 'name_natural' the adapter first gives every listed row without a
   * sort key (written by another writer) its key, on the primary, without a new generation,
   * and serves no answer read while such a row was listed.
   */
  order?: ListingOrder
  /** page size, already clamped to the maximum */
  limit: number
  /**
   * Read the `limit` folders strictly after (or before) `key` in the listing order instead
   * of the offset page, by seeking the listing index: as cheap deep in a folder as at its
   * start. `key` need not be a folder that still exists. `skip` rows past the key are
   * stepped over first (with a checkpoint key, it reaches any offset in a few steps).
   */
  seek?: { direction: 'after' | 'before'; key: FolderKey; skip?: number }
  /**
   * The owner's listing generation read with the session: the answer must show at least
   * that generation's data. An adapter with read replicas may then read on a replica that
   * has replayed it (docs/scale-out.md); absent, it reads where it writes.
   */
  minGeneration?: number
}

export interface CheckpointsQuery {
  ownerId: string
  parentId: string | null
  /** the distance between two checkpoints, in rows */
  every: number
  /** as in ListFoldersQuery; in 'name_natural' each key holds its naturalKey */
  order?: ListingOrder
  /** as in ListFoldersQuery */
  minGeneration?: number
}

export interface FolderPage {
  folders: FolderRow[]
  /** every matching folder, not only those on the page */
  total: number
  /** with `seek` only: whether folders lie beyond the page in the seek direction */
  more?: boolean
}

export interface UserRecord extends OwnerInfo {
  /** frozen: the users column and the import file's field keep the product's name */
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
interface ImportEntry<T> {
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
 * A point in one owner's change history (the table folder_changes, docs/api.md "Change
 * log"): every log row of that owner up to (generation, row), in (generation, id) order, has
 * been consumed.
 */
export interface ChangePosition {
  /** an owner's listing generation (clock-based: microseconds since the epoch, or just above) */
  generation: number
  /** id of the last consumed log row within `generation`; ALL_ROWS: the whole generation */
  row: number
}

/** `row` of a position that has consumed every log row of its generation. */
export const ALL_ROWS = Number.MAX_SAFE_INTEGER

export interface ChangesQuery {
  ownerId: string
  /** null: the root */
  parentId: string | null
  /** the cursor's position; null: read no rows, only the present position (a fresh cursor) */
  after: ChangePosition | null
  /** most rows returned; the store reads one more to tell `more` exactly */
  limit: number
  /** as in ListFoldersQuery: the session's generation, which the answer must reflect at least */
  minGeneration?: number
}

/** One log row that concerns the followed parent, in the order it was committed. */
export type ChangeRow =
  | {
      kind: 'folder'
      position: ChangePosition
      /** the folder's id */
      id: string
      /**
       * its current state when it is now a live direct child of parentId owned by ownerId
       * (as listFolders returns it); null: it is not (a remove)
       */
      folder: FolderRow | null
    }
  | { kind: 'owner'; position: ChangePosition }

export type ChangesResult =
  /** parentId is not a live folder of ownerId, or (root) ownerId is no user: checked first */
  | { outcome: 'parent-not-found' }
  /**
   * `after` is not a valid position of this owner: no log row of the owner has exactly its
   * generation (pruned, restored away, or another owner's), or a 'reset' row of the owner
   * (an import, a TRUNCATE) is newer than it
   */
  | { outcome: 'expired' }
  | {
      outcome: 'changes'
      /** log rows after `after`, in (generation, id) order, at most `limit` */
      rows: ChangeRow[]
      /** whether more rows follow the last one returned */
      more: boolean
      /** the owner's current username and avatar (for 'owner' entries) */
      owner: OwnerInfo
      /** the owner's current generation as a position: (generation, ALL_ROWS) */
      present: ChangePosition
    }

/**
 * A folder's place in a tree download's pre-order walk (src/store/tree-walk.ts): the ids of
 * the folders from the subtree's top down to it. Bounded: a path of up to FULL_PATH_LEVELS
 * folders is kept whole; a deeper one keeps its first HEAD_LEVELS ids, its last id and a
 * digest of the whole path.
 */
export interface TreePath {
  /** levels below the subtree's top: 1 for a child of the top */
  depth: number
  /** the ids of the first levels, outermost first: every level, or HEAD_LEVELS of a deeper path */
  head: string[]
  /** a path deeper than FULL_PATH_LEVELS: its last folder and the digest of every id on it */
  tail: { id: string; digest: Buffer } | null
}

/** What the tree feed (GET /v1/folders/tree) calls the tree: every folder below `rootId`. */
interface TreeOf {
  ownerId: string
  /** the tree's root folder; null: the user's root */
  rootId: string | null
  /** as in ListFoldersQuery */
  minGeneration?: number
}

export interface TreeQuery extends TreeOf {
  /** the cursor's position and the subtree it is sending; null: a new download */
  from: { position: ChangePosition; expansion: Expansion | null } | null
  /** most entries */
  limit: number
}

export type TreeResult =
  /** rootId is not a live folder of ownerId, or ownerId is no user: checked first */
  | { outcome: 'parent-not-found' }
  /** as ChangesResult's 'expired'; also a position whose states the log does not hold (before migration 015) */
  | { outcome: 'expired' }
  | (Extract<TreeAnswer, { outcome: 'answer' }> & {
      /** the owner's current username and avatar (for 'owner' entries and folders' owner) */
      owner: OwnerInfo
      /** the owner's generation in the same snapshot */
      present: ChangePosition
    })

/**
 * What serving GET /v1/folders needs: the only part of the Store the HTTP app sees. Every
 * method is on the hot path of some request; keep it narrow.
 */
/** Most session ids {@link ServingStore.findSessionUsers} answers in one statement. */
export const SESSION_BATCH = 256

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
   * {@link findSessionUser} of each of `sessionIds` at one `now`, in their order (an id
   * given twice is answered twice), in one statement for up to {@link SESSION_BATCH} ids:
   * the session checks of the many followers one commit wakes.
   */
  findSessionUsers(sessionIds: readonly string[], now: number): Promise<(SessionUser | null)[]>

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

  /**
   * Where the reads that may go to a replica (pages, counts, checkpoints) were served, for
   * /metrics; absent on a backend without replicas.
   */
  readRouting?(): ReadRoutingStats

  /**
   * With read replicas: `listener` hears of every replica found not to be one of the
   * primary's database (the ones found so far at once, then each new finding once).
   */
  onReplicaRefused?(listener: (replica: string, reason: ReplicaRefusal) => void): void

  /**
   * Following a primary that moves (a host list in DATABASE_URL): which host is the primary,
   * how often it changed and how long none was known, for /metrics; absent otherwise.
   */
  primaryFailover?(): PrimaryStats | undefined

  /** Following a primary that moves: `listener` hears of each change of primary host. */
  onPrimaryChange?(listener: (change: PrimaryChange) => void): void

  /**
   * The changes of one parent's listing after a position, for the change feed. Everything is
   * read in ONE snapshot (PostgreSQL: one statement; SQLite: one read transaction): the
   * parent check, the position's validity, the log rows, the folders' current states, the
   * owner and the present position, so the rows and `present` agree. Rows are the owner's
   * 'folder' rows of this parent and 'owner' rows, strictly after `after` in
   * (generation, id) order. With `after` null, no rows: only the present position.
   */
  readChanges(query: ChangesQuery): Promise<ChangesResult>

  /**
   * One answer of the tree feed from a cursor (src/store/tree-answer.ts): the root check, the
   * position's validity as readChanges, the entries, the owner and the present position, all
   * in ONE snapshot (SQLite: one read transaction; PostgreSQL: one repeatable-read
   * transaction on the primary).
   */
  readTree(query: TreeQuery): Promise<TreeResult>

  /**
   * The current listing generation of each existing user among `ownerIds`, in one
   * statement (the long-poll watcher polls it); ids of no user are absent from the map.
   */
  ownerGenerations(ownerIds: readonly string[]): Promise<Map<string, number>>

  /**
   * Hints of commits by other connections, sooner than polling ownerGenerations would see
   * them: `onCommit` gets the owner whose listing generation changed (PostgreSQL NOTIFY;
   * SQLite reads them after data_version moved) or null (a commit of unknown effect). Only a
   * hint: one may be late,
   * lost or spurious, so callers keep polling. Absent, or null, when the backend has none or
   * they are switched off. Ends with close().
   */
  changeSignals?(onCommit: (ownerId: string | null) => void): ChangeSignals | null

  /**
   * Resolves when the database answers a trivial query; throws StoreUnavailableError
   * otherwise. The primary only: a replica down never makes the service unready.
   */
  ping(): Promise<void>
  /** Releases connections; safe to call more than once. */
  close(): Promise<void>
}

/** The commit hints of a store (ServingStore.changeSignals), wanted only while someone waits. */
export interface ChangeSignals {
  /** someone waits: deliver hints (idempotent) */
  resume(): void
  /** no one waits: hints may stop until the next resume (idempotent) */
  pause(): void
}

/** What moveFolder did: moved, or why not (no live folder; parent not a live folder of the owner; parent inside the folder). */
export type MoveOutcome = 'moved' | 'no-folder' | 'no-parent' | 'into-itself'

/** What the command line needs besides serving: the schema, the import and the admin commands. */
export interface AdminStore {
  /**
   * Creates or upgrades the schema; safe to call on an up-to-date database. Resolves to the
   * names of the steps it applied, in order (none: it was up to date).
   */
  migrate(): Promise<readonly string[]>

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
  /** Sets the frozen flag (the users.is_suspended column); false when no such user. */
  setUserFrozen(userId: string, frozen: boolean, now: number): Promise<boolean>
  /** Ends a session; false when no such session. */
  deleteSession(sessionId: string): Promise<boolean>
  /**
   * Inserts one folder with a plain INSERT, so the database's own triggers keep the counts
   * and generation and log it as one change of its parent (followers of that parent get
   * an upsert). importData would instead reset the owner's change feeds, as an import does.
   * The parent, when given, must be a live folder of the same owner (the caller checks; the
   * schema refuses another owner's parent).
   */
  addFolder(folder: FolderRecord): Promise<void>
  /** Marks a folder deleted; false when no such live folder. */
  markFolderDeleted(folderId: string, now: number): Promise<boolean>
  /**
   * Marks a live folder deleted and counts, in the same transaction, the live folders below
   * it (any depth, reached through live folders) that no listing reaches any more; null when
   * no such live folder.
   */
  deleteFolder(folderId: string, now: number): Promise<{ hiddenFolders: number } | null>
  /**
   * Renames a live folder with a plain UPDATE (setting updated_at), so the triggers log it
   * like any other writer's rename. `name` is already normalised (normaliseName); false when
   * no such live folder.
   */
  renameFolder(folderId: string, name: string, now: number): Promise<boolean>
  /**
   * Moves a live folder under `parentId` (null: the root) with a plain UPDATE (setting
   * updated_at), after checking in the same transaction, with the owner's folder writes held
   * off, that the parent is a live folder of the same owner and not the folder itself or one
   * below it.
   */
  moveFolder(folderId: string, parentId: string | null, now: number): Promise<MoveOutcome>
  /** Every live folder of a user (any depth), ordered like listFolders within a parent. */
  listLiveFolders(ownerId: string): Promise<FolderRecord[]>
  /** How many users exist (start-up hint for an empty database). */
  countUsers(): Promise<number>

  /**
   * Deletes at most `batch` change log rows whose generation is older than `before` (epoch
   * milliseconds), never the rows of an owner's current generation (so the present position
   * of every owner stays valid); returns how many it deleted. Each call is one short
   * transaction: call again until it returns less than `batch`. Writers are not blocked.
   */
  pruneChanges(before: number, batch: number): Promise<number>
}

/** A whole adapter: what the server and the command line open. */
export interface Store extends ServingStore, AdminStore {}

/** The database cannot be reached or did not answer in time: HTTP 503, CLI one-line error. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError'
  /** the database answered, but cancelled the statement: a lock wait or a slow query */
  readonly timedOut: boolean
  constructor(message: string, options?: { cause?: unknown; timedOut?: boolean }) {
    super(message, options)
    this.timedOut = options?.timedOut ?? false
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
    /** what is wrong, without the record: what the command line shows for its own records */
    readonly reason: string,
  ) {
    super(`${record}: ${reason}`)
  }
}
