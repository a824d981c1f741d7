import type { QueryConfig } from 'pg'
import type { ListingOrder, SessionUser, UserRecord } from '../store.js'

/**
 * Every SQL statement of PostgresStore (postgres-store.ts), and the shapes of the rows they
 * return: pg gives int8 as decimal strings, which the store turns into numbers. The tree
 * feed's statements are in postgres-tree.ts, the import's in postgres-import.ts and
 * staged-import-checks.ts, the schema in postgres-migrations.ts.
 *
 * Statements with a `name` are prepared once per connection (the per-request ones); the rest
 * are sent as text (the command line's). $n are the parameters each comment lists.
 */

/** timestamptz -> epoch milliseconds as int8 (`column` is always a constant, never input). */
export const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::int8`

const FOLDER_COLUMNS = `id, name, folder_id, ${ms('created_at')} AS created_at, ${ms('updated_at')} AS updated_at`
const FOLDER_RECORD_COLUMNS = `${FOLDER_COLUMNS}, owner_id, is_deleted`
const USER_COLUMNS = `id, username, email, avatar_url, password_hash, is_suspended,
  ${ms('created_at')} AS created_at, ${ms('updated_at')} AS updated_at`
/**
 * The listing order (docs/api.md "Order"); name is COLLATE "C" in the schema. Qualified:
 * a bare `created_at` would name the epoch-ms output column, and sorting on that
 * expression could not follow the index.
 */
const ORDER = 'ORDER BY folders.name, folders.created_at, folders.id'

/**
 * ORDER for the children of one parent. The leading folder_id changes nothing (it is the
 * same for every row) but lets the planner read the root's children (`folder_id IS NULL`,
 * which it does not treat as an equality) in folders_listing order and stop at LIMIT,
 * instead of sorting all of them: 0.06 ms instead of 20 ms for 50 000 root folders.
 */
const SORT_COLUMNS: Record<ListingOrder, string[]> = {
  name: ['name', 'created_at', 'id'],
  name_natural: ['name_key', 'name', 'created_at', 'id'],
}
const sortedBy = (order: ListingOrder, table: string, direction = '') =>
  `ORDER BY ${[table === 'folders' ? 'folder_id' : null, ...SORT_COLUMNS[order]]
    .flatMap((column) => (column === null ? [] : [`${table}.${column}${direction}`]))
    .join(', ')}`

/**
 * Natural-order statements also say, in the same snapshot, whether a live child of the
 * parent lacks its sort key ($1 owner; `parentFilter` names the parent): such an answer is
 * not served (PostgresStore.naturally).
 */
const unkeyedColumn = (parentFilter: string) =>
  `EXISTS (SELECT 1 FROM folders WHERE owner_id = $1 AND ${parentFilter} AND name_key IS NULL
            AND NOT is_deleted) AS unkeyed`
export interface UnkeyedRow {
  unkeyed?: boolean
}

/** Rows as pg returns them: int8 as decimal strings. */
export interface RawFolder {
  id: string
  name: string
  folder_id: string | null
  created_at: string
  updated_at: string
}
export type RawFolderRecord = RawFolder & { owner_id: string; is_deleted: boolean }
type RawSessionUser = Omit<SessionUser, 'generation'> & { generation: string }
export type RawUser = Omit<UserRecord, 'created_at' | 'updated_at'> & {
  created_at: string
  updated_at: string
}
/** A listing row: the total, then one page row (all null on an empty page). */
export type RawListing = GenerationRow &
  UnkeyedRow & { total: string } & { [K in keyof RawFolder]: RawFolder[K] | null }

/**
 * The owner's listing generation in the snapshot of the statement it is a column of
 * ($1 is the owner in every routed statement): the read router (replicas.ts) serves a
 * replica's rows only when it is at least the session's.
 */
const GENERATION_COLUMN = '(SELECT listing_generation FROM users WHERE id = $1)::text AS generation'
export interface GenerationRow {
  generation: string | null
}
export const generationColumn = (row: GenerationRow) => row.generation

/**
 * The listing statement: ONE round trip per listing request. `total` is the maintained
 * count of the parent row (migration 002), so checking the parent and counting is a single
 * primary-key read; a missing, foreign or deleted parent yields no row at all. The page is
 * then read from the nearer end (as store/sqlite/page-window.ts does for SQLite): `head` walks
 * folders_listing forwards past the rows before the page, `tail` backwards past the rows
 * after it, and the one-time filter on `win` runs only the cheaper of the two, so the last
 * page of 100,000 children costs what the first does. One statement is one snapshot: the
 * total, the page and the generation agree. A LEFT JOIN keeps one row when the page is empty.
 */
function listingStatement(
  name: string,
  total: string,
  parentFilter: string,
  order: ListingOrder = 'name',
): QueryConfig {
  const children = `FROM folders WHERE owner_id = $1 AND ${parentFilter} AND NOT is_deleted`
  const natural = order === 'name_natural'
  const columns = `id, name, folder_id, created_at, updated_at${natural ? ', name_key' : ''}`
  return {
    name: natural ? `${name}_natural` : name,
    // $2 page size, $3 rows before the page (offset); `n` rows on the page, `after` beyond it.
    text: `WITH win AS (
        SELECT t.total, GREATEST(LEAST($2::int8, t.total - $3::int8), 0) AS n,
               GREATEST(t.total - $3::int8 - $2::int8, 0) AS after
          FROM (${total}) AS t
      ),
      head AS (
        SELECT ${columns} ${children}
           AND (SELECT n > 0 AND $3::int8 <= after FROM win)
         ${sortedBy(order, 'folders')} LIMIT (SELECT n FROM win) OFFSET $3::int8
      ),
      tail AS (
        SELECT ${columns} ${children}
           AND (SELECT n > 0 AND $3::int8 > after FROM win)
         ${sortedBy(order, 'folders', ' DESC')} LIMIT (SELECT n FROM win) OFFSET (SELECT after FROM win)
      ),
      page AS (SELECT * FROM head UNION ALL SELECT * FROM tail)
    SELECT win.total, page.id, page.name, page.folder_id,
           ${ms('page.created_at')} AS created_at, ${ms('page.updated_at')} AS updated_at,
           ${GENERATION_COLUMN}${natural ? `, ${unkeyedColumn(parentFilter)}` : ''}
      FROM win LEFT JOIN page ON true
     ${sortedBy(order, 'page')}`,
  }
}

const LIST_CHILDREN_TOTAL =
  'SELECT child_count::int8 AS total FROM folders WHERE id = $4 AND owner_id = $1 AND NOT is_deleted'
const LIST_ROOT_TOTAL =
  'SELECT coalesce((SELECT root_folder_count FROM users WHERE id = $1), 0)::int8 AS total'

/** $1 owner, $2 limit, $3 offset, $4 parent */
export const LIST_CHILDREN = listingStatement(
  'folder_service_list_children_v3',
  LIST_CHILDREN_TOTAL,
  'folder_id = $4',
)

/** $1 owner, $2 limit, $3 offset */
export const LIST_ROOT = listingStatement('folder_service_list_root_v3', LIST_ROOT_TOTAL, 'folder_id IS NULL')

/** The listing statements (listingStatement) by order, then children of a parent or the root. */
export const LIST = {
  name: { children: LIST_CHILDREN, root: LIST_ROOT },
  name_natural: {
    children: listingStatement(
      'folder_service_list_children_v3',
      LIST_CHILDREN_TOTAL,
      'folder_id = $4',
      'name_natural',
    ),
    root: listingStatement(
      'folder_service_list_root_v3',
      LIST_ROOT_TOTAL,
      'folder_id IS NULL',
      'name_natural',
    ),
  },
}

/**
 * The seek statement of a continuation token: the rows strictly after (or before) a key,
 * found by seeking folders_listing with a row comparison (an index condition, so the depth
 * of the key costs nothing), one row more than the page to tell whether another follows,
 * and the total as in listingStatement: one round trip, one snapshot. No row at all when the
 * parent is not a live folder of the owner. The key's created_at arrives as epoch ms and is
 * compared exactly (timestamptz(3) holds whole milliseconds).
 * $1 owner, $2 rows to read, $3 name, $4 created_at (ms), $5 id, $6 rows to skip first,
 * $7 parent (children only), then in natural order the sort key ($7 or $8).
 */
function seekStatement(
  name: string,
  total: string,
  parentFilter: string,
  direction: 'after' | 'before',
  order: ListingOrder = 'name',
) {
  const comparison = direction === 'after' ? '>' : '<'
  const natural = order === 'name_natural'
  const key = `$${parentFilter.includes('$7') ? 8 : 7}::bytea`
  const columns = SORT_COLUMNS[order].map((column) => `folders.${column}`).join(', ')
  const bound = `${natural ? `${key}, ` : ''}$3::text, 'epoch'::timestamptz + $4::int8 * interval '1 millisecond', $5::uuid`
  return {
    name: natural ? `${name}_natural` : name,
    text: `SELECT t.total, p.id, p.name, p.folder_id, p.created_at, p.updated_at, ${GENERATION_COLUMN}
             ${natural ? `, ${unkeyedColumn(parentFilter)}` : ''}
      FROM (${total}) AS t
      LEFT JOIN LATERAL (
        SELECT id, name, folder_id, ${ms('folders.created_at')} AS created_at,
               ${ms('folders.updated_at')} AS updated_at
          FROM folders
         WHERE owner_id = $1 AND ${parentFilter} AND NOT is_deleted
           AND (${columns}) ${comparison} (${bound})
         ${sortedBy(order, 'folders', direction === 'after' ? '' : ' DESC')} LIMIT $2::int8 OFFSET $6::int8
      ) AS p ON true`,
  }
}

const CHILDREN_TOTAL =
  'SELECT child_count::int8 AS total FROM folders WHERE id = $7 AND owner_id = $1 AND NOT is_deleted'
const ROOT_TOTAL = 'SELECT coalesce((SELECT root_folder_count FROM users WHERE id = $1), 0)::int8 AS total'
const seekStatements = (order: ListingOrder) => ({
  children: {
    after: seekStatement(
      'folder_service_seek_children_after',
      CHILDREN_TOTAL,
      'folder_id = $7',
      'after',
      order,
    ),
    before: seekStatement(
      'folder_service_seek_children_before',
      CHILDREN_TOTAL,
      'folder_id = $7',
      'before',
      order,
    ),
  },
  root: {
    after: seekStatement('folder_service_seek_root_after', ROOT_TOTAL, 'folder_id IS NULL', 'after', order),
    before: seekStatement(
      'folder_service_seek_root_before',
      ROOT_TOTAL,
      'folder_id IS NULL',
      'before',
      order,
    ),
  },
})
/** The seek statements of continuation tokens (seekStatement) by order, parent and direction. */
export const SEEK = { name: seekStatements('name'), name_natural: seekStatements('name_natural') }

/**
 * Checkpoints of a listing: the rows numbered in index order, every n-th kept; one pass over
 * the index entries. No row when the parent is not a live folder of the owner; a row with a
 * null name when it is but has no checkpoint. $1 owner, $2 every, $3 parent (children only).
 */
function checkpointsStatement(
  name: string,
  total: string,
  parentFilter: string,
  order: ListingOrder,
): QueryConfig {
  const natural = order === 'name_natural'
  const key = natural ? ', name_key' : ''
  return {
    name: natural ? `${name}_natural` : name,
    text: `SELECT c.name, ${ms('c.created_at')} AS created_at, c.id::text AS id${natural ? ', c.name_key' : ''},
                  ${GENERATION_COLUMN}${natural ? `, ${unkeyedColumn(parentFilter)}` : ''}
      FROM (${total}) AS t
      LEFT JOIN LATERAL (
        SELECT name, created_at, id${key} FROM (
          SELECT folders.name, folders.created_at, folders.id${natural ? ', folders.name_key' : ''},
                 row_number() OVER (${sortedBy(order, 'folders')}) AS position
            FROM folders WHERE owner_id = $1 AND ${parentFilter} AND NOT is_deleted
        ) AS numbered WHERE position % $2::int8 = 0
      ) AS c ON true
     ${sortedBy(order, 'c')}`,
  }
}

const checkpointStatements = (order: ListingOrder) => ({
  children: checkpointsStatement(
    'folder_service_checkpoints_children',
    'SELECT 1 FROM folders WHERE id = $3 AND owner_id = $1 AND NOT is_deleted',
    'folder_id = $3',
    order,
  ),
  root: checkpointsStatement('folder_service_checkpoints_root', 'SELECT 1', 'folder_id IS NULL', order),
})
/** The checkpoint statements (checkpointsStatement) by order, then children or root. */
export const CHECKPOINTS = {
  name: checkpointStatements('name'),
  name_natural: checkpointStatements('name_natural'),
}

/**
 * The live children of a parent without a natural sort key, in id order (so concurrent
 * completions lock rows in one order), and the UPDATE that stores their keys in one
 * statement, each only while its row still has the name the key was computed from and no
 * key (a rename since then cleared it, or another instance stored it).
 */
export const UNKEYED = {
  children:
    'SELECT id, name FROM folders WHERE owner_id = $1 AND folder_id = $2 AND name_key IS NULL AND NOT is_deleted ORDER BY id',
  root: 'SELECT id, name FROM folders WHERE owner_id = $1 AND folder_id IS NULL AND name_key IS NULL AND NOT is_deleted ORDER BY id',
}
/** $1 ids, $2 the names the keys were computed from, $3 the keys (see UNKEYED). */
export const STORE_NATURAL_KEYS: QueryConfig = {
  name: 'folder_service_store_natural_keys',
  text: `UPDATE folders AS f SET name_key = k.key
           FROM unnest($1::uuid[], $2::text[], $3::bytea[]) AS k(id, name, key)
          WHERE f.id = k.id AND f.name = k.name AND f.name_key IS NULL`,
}

/**
 * Store.readChanges in ONE statement, so one snapshot: the owner, the parent check, the
 * position's validity (a log row of the owner at exactly its generation, and no 'reset'
 * after it), the log rows after the position (the parent's 'folder' rows and the owner's
 * 'owner' rows, each read in index order up to the limit, then merged) and each folder's
 * state when it is now a live child of the parent. One row with null log columns when
 * nothing follows (or the position is not valid); no row at all when the owner is no user.
 * $1 owner, $2 generation (null: read no rows), $3 row, $4 rows to read, $5 parent (children only).
 */
function changesStatement(
  name: string,
  parentCheck: string,
  logParent: string,
  listedParent: string,
): QueryConfig {
  const after = '(generation, id) > ($2::int8, $3::int8) ORDER BY generation, id LIMIT $4::int8'
  return {
    name,
    text: `WITH state AS (
        SELECT u.username, u.avatar_url, u.listing_generation::text AS present, ${parentCheck} AS parent_ok,
               EXISTS (SELECT 1 FROM folder_changes WHERE generation = $2::int8 AND owner_id = $1)
               AND NOT EXISTS (SELECT 1 FROM folder_changes WHERE owner_id = $1
                          AND kind = 'reset' AND parent_id IS NULL AND generation > $2::int8) AS valid
          FROM users AS u WHERE u.id = $1
      ),
      log AS (
        SELECT * FROM (
          (SELECT id, generation, kind, folder_id FROM folder_changes
            WHERE owner_id = $1 AND kind = 'folder' AND ${logParent} AND ${after})
          UNION ALL
          (SELECT id, generation, kind, folder_id FROM folder_changes
            WHERE owner_id = $1 AND kind = 'owner' AND parent_id IS NULL AND ${after})
        ) AS merged
        WHERE (SELECT parent_ok AND coalesce(valid, false) FROM state)
        ORDER BY generation, id LIMIT $4::int8
      )
    SELECT s.username, s.avatar_url, s.present, s.parent_ok, coalesce(s.valid, false) AS valid,
           l.id::text AS row_id, l.generation::text AS generation, l.kind, l.folder_id,
           f.name, ${ms('f.created_at')} AS created_at, ${ms('f.updated_at')} AS updated_at
      FROM state AS s
      LEFT JOIN (log AS l
        LEFT JOIN folders AS f
          ON f.id = l.folder_id AND f.owner_id = $1 AND ${listedParent} AND NOT f.is_deleted) ON true
     ORDER BY l.generation, l.id`,
  }
}

/** Store.readChanges (changesStatement) for the children of a parent ($5) or the root. */
export const CHANGES = {
  children: changesStatement(
    'folder_service_changes_children',
    'EXISTS (SELECT 1 FROM folders WHERE id = $5 AND owner_id = $1 AND NOT is_deleted)',
    'parent_id = $5',
    'f.folder_id = $5',
  ),
  root: changesStatement('folder_service_changes_root', 'true', 'parent_id IS NULL', 'f.folder_id IS NULL'),
}

export interface RawChangesRow {
  username: string
  avatar_url: string | null
  present: string
  parent_ok: boolean
  valid: boolean
  row_id: string | null
  generation: string | null
  kind: 'folder' | 'owner' | null
  folder_id: string | null
  name: string | null
  created_at: string | null
  updated_at: string | null
}

/**
 * Deletes the oldest log rows below a generation, except those of an owner's current
 * generation, at most $2 of them: one short statement (row locks on the deleted rows only;
 * writers only insert). $1 generation bound (microseconds), $2 batch.
 */
export const PRUNE_CHANGES: QueryConfig = {
  name: 'folder_service_prune_changes',
  text: `DELETE FROM folder_changes WHERE id IN (
      SELECT c.id FROM folder_changes AS c
       WHERE c.generation < $1::int8
         AND c.generation IS DISTINCT FROM (SELECT listing_generation FROM users WHERE id = c.owner_id)
       ORDER BY c.generation LIMIT $2::int8)`,
}

/**
 * $1 session ids: the sessions of a batch of requests (see batched-lookups.ts) with their
 * users and listing generations, the authentication of each request in one round trip.
 * Expiry is compared per request in JavaScript, against that request's own clock reading, exactly as `expires_at > now` would.
 */
export const SESSION_USERS: QueryConfig = {
  name: 'folder_service_session_users',
  text: `SELECT s.id AS session_id, ${ms('s.expires_at')} AS expires_at,
                u.id, u.username, u.avatar_url, u.is_suspended, u.listing_generation::text AS generation
           FROM sessions s JOIN users u ON u.id = s.user_id
          WHERE s.id = ANY($1::uuid[])`,
}
export type RawSessionRow = RawSessionUser & { session_id: string; expires_at: string | null }

/** $1 owner ids: each existing user's current listing generation (the long-poll watcher polls it). */
export const OWNER_GENERATIONS: QueryConfig = {
  name: 'folder_service_owner_generations',
  text: 'SELECT id, listing_generation::text AS generation FROM users WHERE id = ANY($1::uuid[])',
}

/** The deployment's cursor key (migration-made), which seals every token. */
export const CURSOR_KEY: QueryConfig = { text: "SELECT value FROM service_keys WHERE name = 'cursor'" }

/** Samples users and folders for the planner's statistics after a large import. */
export const ANALYZE: QueryConfig = { text: 'ANALYZE users, folders' }

/** The database answers: a trivial read. */
export const PING: QueryConfig = { text: 'SELECT 1' }

/**
 * $1 folder: its owner's user row, locked as the triggers' own write of it would lock it
 * (FOR NO KEY UPDATE); no row when there is no such folder.
 */
export const LOCK_FOLDER_OWNER: QueryConfig = {
  text: `SELECT users.id AS owner_id FROM users
          WHERE users.id = (SELECT owner_id FROM folders WHERE id = $1)
          FOR NO KEY UPDATE`,
}

/** $1 folder: a row when it is live (not marked deleted). */
export const LIVE_FOLDER: QueryConfig = { text: 'SELECT 1 FROM folders WHERE id = $1 AND NOT is_deleted' }

/** $1 id (null when the text is no uuid), $2 username: the user with that id, else with that username. */
export const FIND_USER: QueryConfig = {
  text: `SELECT ${USER_COLUMNS} FROM users WHERE id = $1::uuid OR username = $2
          ORDER BY id = $1::uuid DESC LIMIT 1`,
}

/** Every user, by username. */
export const LIST_USERS: QueryConfig = { text: `SELECT ${USER_COLUMNS} FROM users ORDER BY username` }

/** How many users there are. */
export const COUNT_USERS: QueryConfig = { text: 'SELECT count(*) AS n FROM users' }

/** $1 user, $2 the frozen flag, $3 now: sets the user's frozen flag. */
export const SET_USER_FROZEN: QueryConfig = {
  text: 'UPDATE users SET is_suspended = $2, updated_at = $3::timestamptz WHERE id = $1',
}

/** $1 session: deletes it. */
export const DELETE_SESSION: QueryConfig = { text: 'DELETE FROM sessions WHERE id = $1' }

/** $1 folder: the folder, deleted or not, with its owner. */
export const FIND_FOLDER: QueryConfig = { text: `SELECT ${FOLDER_RECORD_COLUMNS} FROM folders WHERE id = $1` }

/** $1 owner: the owner's live folders in the listing order. */
export const LIST_LIVE_FOLDERS: QueryConfig = {
  text: `SELECT ${FOLDER_RECORD_COLUMNS} FROM folders WHERE owner_id = $1 AND NOT is_deleted
          ${ORDER}`,
}

/**
 * $1 id, $2 name, $3 parent, $4 owner, $5 deleted, $6 created_at, $7 updated_at (text
 * timestamps), $8 natural sort key: one folder, as the command line adds it.
 */
export const ADD_FOLDER: QueryConfig = {
  text: `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at, name_key)
         VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz, $8)`,
}

/** $1 owner, $2 folder: how many live folders lie below the folder (through live folders). */
export const COUNT_LIVE_BELOW: QueryConfig = {
  text: `WITH RECURSIVE below(id) AS (
           SELECT id FROM folders WHERE owner_id = $1 AND folder_id = $2 AND NOT is_deleted
           UNION
           SELECT f.id FROM folders f JOIN below ON f.owner_id = $1 AND f.folder_id = below.id
            WHERE NOT f.is_deleted)
         SELECT count(*) AS n FROM below`,
}

/** $1 folder, $2 now: marks the folder deleted. */
export const MARK_FOLDER_DELETED: QueryConfig = {
  text: 'UPDATE folders SET is_deleted = true, updated_at = $2::timestamptz WHERE id = $1',
}

/** $1 folder, $2 name, $3 now, $4 the new name's natural key: renames a live folder. */
export const RENAME_FOLDER: QueryConfig = {
  text: `UPDATE folders SET name = $2, updated_at = $3::timestamptz, name_key = $4
          WHERE id = $1 AND NOT is_deleted`,
}

/**
 * $1 new parent, $2 folder, $3 owner: no row unless the parent is a live folder of the owner;
 * else whether the folder is the parent or one of its ancestors. UNION stops on a cycle
 * written by others.
 */
export const PARENT_INSIDE: QueryConfig = {
  text: `WITH RECURSIVE up(id) AS (
           SELECT $1::uuid
           UNION
           SELECT f.folder_id FROM folders f JOIN up ON f.id = up.id WHERE f.folder_id IS NOT NULL)
         SELECT EXISTS (SELECT 1 FROM up WHERE id = $2) AS inside
          FROM folders WHERE id = $1 AND owner_id = $3 AND NOT is_deleted`,
}

/** $1 folder, $2 new parent (null: the root), $3 now: moves the folder. */
export const MOVE_FOLDER: QueryConfig = {
  text: 'UPDATE folders SET folder_id = $2, updated_at = $3::timestamptz WHERE id = $1',
}
