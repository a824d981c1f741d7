import type Database from 'better-sqlite3'
import type { FolderKey, ListingOrder } from '../store.js'
import { naturalKey } from '../../ordering/natural-key.js'
import { limitSlot } from './limit-slot.js'

/**
 * Every SQL statement of SqliteStore (sqlite-store.ts): the per-request ones prepared once
 * (prepareHotStatements, prepareChangeStatements), the command line's as text the store
 * prepares when called, and the shapes of the rows they return. The tree feed's statements
 * are in sqlite-tree.ts, the import's in sqlite-import.ts and staged-import-checks.ts, the
 * schema in sqlite-migrations.ts. Parameters are positional (?) unless named ($name).
 */

export type Row = Record<string, unknown>

const FOLDER_COLUMNS = 'id, name, folder_id, created_at, updated_at'
const PAGE_COLUMNS = 'id, name, created_at, updated_at'
export type PageRow = [id: string, name: string, created_at: number, updated_at: number]
export type SessionRow = [
  id: string,
  username: string,
  avatar_url: string | null,
  frozen: number,
  generation: number,
]
/** A {@link SessionRow} of many sessions' lookup, after the session's id. */
export type SessionUsersRow = [sessionId: string, ...SessionRow]
/** The columns of each listing order, the sort key first (docs/api.md "Order"). */
const ORDER_COLUMNS: Record<ListingOrder, string[]> = {
  name: ['name', 'created_at', 'id'],
  name_natural: ['name_key', 'name', 'created_at', 'id'],
}
const orderBy = (order: ListingOrder, direction = '') =>
  `ORDER BY ${ORDER_COLUMNS[order].map((column) => column + direction).join(', ')}`
const ORDER = orderBy('name')
const USER_COLUMNS = 'id, username, email, avatar_url, password_hash, is_suspended, created_at, updated_at'

/** A seek key's values in the order's column order. */
export function keyValues(key: FolderKey, order: ListingOrder = 'name'): unknown[] {
  const values = [key.name, key.created_at, key.id]
  if (order === 'name') return values
  return [Buffer.from(key.naturalKey ?? naturalKey(key.name)), ...values]
}

/**
 * The statements of readChanges. `rows` walks the owner's log after the position in its
 * primary key order, keeping the parent's 'folder' rows and the owner's 'owner' rows, with
 * each folder's state when it is now a live child of that parent.
 * $owner, $parent (null: the root), $generation, $row, $limit.
 */
export interface ChangeStatements {
  owner: Database.Statement
  valid: Database.Statement
  rows: Database.Statement
}

export type LogRow = [
  id: number,
  generation: number,
  kind: 'folder' | 'owner',
  folderId: string | null,
  name: string | null,
  createdAt: number | null,
  updatedAt: number | null,
]

export function prepareChangeStatements(db: Database.Database): ChangeStatements {
  return {
    // The owner's name, avatar and current listing generation (no row: no such user).
    owner: db.prepare('SELECT id, username, avatar_url, listing_generation FROM users WHERE id = ?'),
    // A position is valid when its generation has a log row of this owner (not pruned,
    // not restored away, not another owner's) and no reset came after it.
    valid: db
      .prepare(
        `SELECT EXISTS (SELECT 1 FROM folder_changes WHERE owner_id = $owner AND generation = $generation)
            AND NOT EXISTS (SELECT 1 FROM folder_changes WHERE owner_id = $owner
                              AND kind = 'reset' AND generation > $generation)`,
      )
      .pluck(),
    // The log rows after the position (see ChangeStatements).
    rows: db
      .prepare(
        `SELECT c.id, c.generation, c.kind, c.folder_id, f.name, f.created_at, f.updated_at
           FROM folder_changes AS c
           LEFT JOIN folders AS f
             ON f.id = c.folder_id AND f.owner_id = $owner AND f.folder_id IS $parent AND f.is_deleted = 0
          WHERE c.owner_id = $owner AND (c.generation, c.id) > ($generation, $row)
            AND (c.kind = 'owner' OR (c.kind = 'folder' AND c.parent_id IS $parent))
          ORDER BY c.generation, c.id LIMIT ${limitSlot('$limit')}`,
      )
      .raw(),
  }
}

/** Statement compilation costs more than the listing queries themselves: compile once. */
export interface HotStatements {
  sessionUser: Database.Statement
  /** the same for a JSON array of session ids, each row after its session's id */
  sessionUsers: Database.Statement
  liveChildCount: Database.Statement
  rootFolderCount: Database.Statement
  ownerGenerations: Database.Statement
  pages: Record<ListingOrder, { children: PageStatements; root: PageStatements }>
  /** the live rows of (owner, parent) without a natural sort key, for completion */
  unkeyed: { children: Database.Statement; root: Database.Statement }
  /** a computed key, stored only while the row still has the name it was computed from */
  setNaturalKey: Database.Statement
  cursorKey: Database.Statement
}

/**
 * A page read forwards, or backwards from the end (see page-window.ts); or, for a
 * continuation token, the rows after or before a key, found by seeking the index.
 */
interface PageStatements {
  forward: Database.Statement
  fromEnd: Database.Statement
  after: Database.Statement
  before: Database.Statement
  checkpoints: Database.Statement
}

const LIMIT_SLOT = limitSlot()

// Raw rows without folder_id (the same on every row of a page): a third cheaper than
// letting the driver build an object per row.
function pageStatements(db: Database.Database, from: string, order: ListingOrder): PageStatements {
  const [ascending, descending] = [orderBy(order), orderBy(order, ' DESC')]
  const key = `(${ORDER_COLUMNS[order].join(', ')})`
  const slots = `(${ORDER_COLUMNS[order].map(() => '?').join(', ')})`
  // checkpoints carry the sort key after the FolderKey columns
  const checkpointColumns = order === 'name' ? 'name, created_at, id' : 'name, created_at, id, name_key'
  return {
    forward: db.prepare(`SELECT ${PAGE_COLUMNS} ${from} ${ascending} LIMIT ${LIMIT_SLOT} OFFSET ?`).raw(),
    fromEnd: db.prepare(`SELECT ${PAGE_COLUMNS} ${from} ${descending} LIMIT ${LIMIT_SLOT} OFFSET ?`).raw(),
    // A row value comparison: SQLite turns it into a range on the order's index.
    after: db
      .prepare(
        `SELECT ${PAGE_COLUMNS} ${from} AND ${key} > ${slots} ${ascending} LIMIT ${LIMIT_SLOT} OFFSET ?`,
      )
      .raw(),
    before: db
      .prepare(
        `SELECT ${PAGE_COLUMNS} ${from} AND ${key} < ${slots} ${descending} LIMIT ${LIMIT_SLOT} OFFSET ?`,
      )
      .raw(),
    // Numbers the rows in index order and keeps every n-th: one pass over the index entries.
    checkpoints: db
      .prepare(
        `SELECT ${checkpointColumns} FROM (
           SELECT ${checkpointColumns}, row_number() OVER (${ascending}) AS position ${from}
         ) WHERE position % ? = 0 ORDER BY position`,
      )
      .raw(),
  }
}

export function prepareHotStatements(db: Database.Database): HotStatements {
  const children = 'FROM folders WHERE owner_id = ? AND folder_id = ? AND is_deleted = 0'
  const root = 'FROM folders WHERE owner_id = ? AND folder_id IS NULL AND is_deleted = 0'
  return {
    // Session, now: the session's user and listing generation while it has not expired.
    sessionUser: db
      .prepare(
        `SELECT u.id, u.username, u.avatar_url, u.is_suspended, u.listing_generation
         FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
      )
      .raw(),
    // Sessions, now: sessionUser for each id of a JSON array (a wake's session checks).
    sessionUsers: db
      .prepare(
        `SELECT s.id, u.id, u.username, u.avatar_url, u.is_suspended, u.listing_generation
         FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id IN (SELECT value FROM json_each(?)) AND (s.expires_at IS NULL OR s.expires_at > ?)`,
      )
      .raw(),
    // One lookup answers both "is the parent a live folder of this owner?" and `total`.
    liveChildCount: db
      .prepare('SELECT child_count FROM folders WHERE id = ? AND owner_id = ? AND is_deleted = 0')
      .pluck(),
    // Owner: how many live folders the owner has at the root (no row: no such user).
    rootFolderCount: db.prepare('SELECT root_folder_count FROM users WHERE id = ?').pluck(),
    // JSON array of owner ids: each existing user's id and listing generation (the feeds' poll).
    ownerGenerations: db
      .prepare('SELECT id, listing_generation FROM users WHERE id IN (SELECT value FROM json_each(?))')
      .raw(),
    pages: {
      name: { children: pageStatements(db, children, 'name'), root: pageStatements(db, root, 'name') },
      name_natural: {
        children: pageStatements(db, children, 'name_natural'),
        root: pageStatements(db, root, 'name_natural'),
      },
    },
    unkeyed: {
      children: db.prepare(`SELECT id, name ${children} AND name_key IS NULL`).raw(),
      root: db.prepare(`SELECT id, name ${root} AND name_key IS NULL`).raw(),
    },
    setNaturalKey: db.prepare(
      'UPDATE folders SET name_key = ? WHERE id = ? AND name = ? AND name_key IS NULL',
    ),
    // The deployment's cursor key (migration-made), which seals every token.
    cursorKey: db.prepare("SELECT value FROM service_keys WHERE name = 'cursor'").pluck(),
  }
}

/** Empties replaced_rows, whose notes live for one statement only. */
export const CLEAR_REPLACED_ROWS = 'DELETE FROM replaced_rows'

/**
 * Generation bound, first owner id, batch: the keys of up to `batch` log rows below the
 * bound and below each owner's current generation, walking the owners in id order from the
 * first one, each a range of the log's primary key.
 */
export const PRUNABLE_CHANGES = `SELECT c.owner_id, c.generation, c.id FROM users AS u
   JOIN folder_changes AS c ON c.owner_id = u.id AND c.generation < min(?, u.listing_generation)
  WHERE u.id >= ? ORDER BY u.id, c.generation, c.id LIMIT ${limitSlot()}`

/** Owner, generation, id: deletes one log row. */
export const DELETE_CHANGE = 'DELETE FROM folder_changes WHERE owner_id = ? AND generation = ? AND id = ?'

/** Id or username (three times): the user with that id (any letter case), else that username. */
export const FIND_USER = `SELECT ${USER_COLUMNS} FROM users WHERE id = lower(?) OR username = ? ORDER BY id = lower(?) DESC LIMIT 1`

/** Every user, by username. */
export const LIST_USERS = `SELECT ${USER_COLUMNS} FROM users ORDER BY username`

/** How many users there are. */
export const COUNT_USERS = 'SELECT count(*) FROM users'

/** Frozen flag (0/1), now, user: sets the user's frozen flag. */
export const SET_USER_FROZEN = 'UPDATE users SET is_suspended = ?, updated_at = ? WHERE id = ?'

/** Session: deletes it. */
export const DELETE_SESSION = 'DELETE FROM sessions WHERE id = ?'

/** Folder: the folder, deleted or not, with its owner. */
export const FIND_FOLDER = `SELECT ${FOLDER_COLUMNS}, owner_id, is_deleted FROM folders WHERE id = ?`

/** Owner: the owner's live folders in the listing order. */
export const LIST_LIVE_FOLDERS = `SELECT ${FOLDER_COLUMNS}, owner_id, is_deleted FROM folders
  WHERE owner_id = ? AND is_deleted = 0 ${ORDER}`

/** Folder: its owner while it is live (not marked deleted). */
export const LIVE_FOLDER_OWNER = 'SELECT owner_id FROM folders WHERE id = ? AND is_deleted = 0'

/** Id, name, parent, owner, deleted (0/1), created_at, updated_at, natural sort key: one folder. */
export const ADD_FOLDER = `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at, name_key)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

/** Owner, folder, owner: how many live folders lie below the folder (through live folders). */
export const COUNT_LIVE_BELOW = `WITH RECURSIVE below(id) AS (
    SELECT id FROM folders WHERE owner_id = ? AND folder_id = ? AND is_deleted = 0
    UNION
    SELECT f.id FROM folders f JOIN below ON f.owner_id = ? AND f.folder_id = below.id
     WHERE f.is_deleted = 0)
  SELECT count(*) FROM below`

/** Now, folder: marks the folder deleted. */
export const MARK_FOLDER_DELETED = 'UPDATE folders SET is_deleted = 1, updated_at = ? WHERE id = ?'

/** Name, now, the name's natural sort key, folder: renames a live folder. */
export const RENAME_FOLDER =
  'UPDATE folders SET name = ?, updated_at = ?, name_key = ? WHERE id = ? AND is_deleted = 0'

/**
 * New parent, folder: a row when the folder is the parent or one of its ancestors (the
 * parent's ancestors, itself included; UNION stops on a cycle written by others).
 */
export const PARENT_INSIDE = `WITH RECURSIVE up(id) AS (
    SELECT ?
    UNION
    SELECT f.folder_id FROM folders f JOIN up ON f.id = up.id WHERE f.folder_id IS NOT NULL)
  SELECT 1 FROM up WHERE id = ?`

/** New parent (null: the root), now, folder: moves the folder. */
export const MOVE_FOLDER = 'UPDATE folders SET folder_id = ?, updated_at = ? WHERE id = ?'

/** The database answers: a trivial read. */
export const PING = 'SELECT 1'
