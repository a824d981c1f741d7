import type { QueryConfig, QueryResultRow } from 'pg'
import { formatTimestamp } from '../../time.js'
import {
  MissingCursorKeyError,
  StoreUnavailableError,
  type ChangeSignals,
  type ChangesQuery,
  type ChangesResult,
  type CheckpointsQuery,
  type FolderKey,
  type FolderPage,
  type FolderRecord,
  type FolderRow,
  type ImportCounts,
  type ImportData,
  type ImportSource,
  type ListFoldersQuery,
  type ListingOrder,
  type MoveOutcome,
  type ReadRoutingStats,
  type ReplicaRefusal,
  type SessionUser,
  type Store,
  type TreeLogQuery,
  type TreeLogResult,
  type TreePageQuery,
  type TreePageResult,
  type UserRecord,
} from '../store.js'
import { Connections, type Client, type PoolSettings } from './postgres-connections.js'
import { ChangeListener } from './postgres-notifications.js'
import { cannotConnect } from './postgres-errors.js'
import { importIntoPostgres } from './postgres-import.js'
import { itemsOf } from '../import-faults.js'
import { BatchedLookups } from './batched-lookups.js'
import { ReadRouter, type ReplicaSettings, type SnapshotGeneration } from './read-router.js'
import { migratePostgres } from './postgres-migrations.js'
import { changesResult, type LoggedChange } from '../change-rows.js'
import { naturalKey } from '../../ordering/natural-key.js'
import { readTreeLog, readTreePage, type RoutedQuery } from './postgres-tree.js'

/**
 * The PostgreSQL backend (node-postgres), behaving exactly like SqliteStore: the Store
 * speaks epoch-ms numbers, lower-case uuid strings and booleans; timestamptz values leave
 * the database already as epoch-ms int8 (exact, independent of the session TimeZone), and
 * int8 values, which pg returns as strings, become numbers here.
 */

/** timestamptz -> epoch milliseconds as int8 (`column` is always a constant of this file). */
const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::int8`

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
interface UnkeyedRow {
  unkeyed?: boolean
}

/** Completion passes before a natural listing gives up (503) under writers renaming its rows. */
const COMPLETION_PASSES = 3

/**
 * Stored ids are canonical lower-case UUIDs. Any other string names no row, as on SQLite
 * (which compares text), and must not reach a uuid parameter, which PostgreSQL would
 * refuse with an error instead.
 */
const STORED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const isStoredId = (id: string) => STORED_ID.test(id)

/**
 * The owner of a live folder, with the owner's row locked as the triggers' own write of it
 * would lock it: every write of that owner's folders waits until the transaction ends, so
 * what is checked next stays true until the write. null when there is no such live folder.
 */
async function lockOwnerOfLiveFolder(client: Client, folderId: string): Promise<string | null> {
  const { rows } = await client.query<{ owner_id: string }>({
    text: `SELECT users.id AS owner_id FROM users
            WHERE users.id = (SELECT owner_id FROM folders WHERE id = $1)
            FOR NO KEY UPDATE`,
    values: [folderId],
  })
  const ownerId = rows[0]?.owner_id
  if (ownerId === undefined) return null
  const live = await client.query({
    text: 'SELECT 1 FROM folders WHERE id = $1 AND NOT is_deleted',
    values: [folderId],
  })
  return (live.rowCount ?? 0) > 0 ? ownerId : null
}

/** Rows as pg returns them: int8 as decimal strings. */
interface RawFolder {
  id: string
  name: string
  folder_id: string | null
  created_at: string
  updated_at: string
}
type RawFolderRecord = RawFolder & { owner_id: string; is_deleted: boolean }
type RawSessionUser = Omit<SessionUser, 'generation'> & { generation: string }
type RawUser = Omit<UserRecord, 'created_at' | 'updated_at'> & { created_at: string; updated_at: string }
/** A listing row: the total, then one page row (all null on an empty page). */
type RawListing = GenerationRow &
  UnkeyedRow & { total: string } & { [K in keyof RawFolder]: RawFolder[K] | null }

/**
 * The owner's listing generation in the snapshot of the statement it is a column of
 * ($1 is the owner in every routed statement): the read router (read-router.ts) serves a
 * replica's rows only when it is at least the session's.
 */
const GENERATION_COLUMN = '(SELECT listing_generation FROM users WHERE id = $1)::text AS generation'
interface GenerationRow {
  generation: string | null
}
const generationColumn = (row: GenerationRow) => row.generation

function toFolderRow(raw: RawFolder): FolderRow {
  return {
    id: raw.id,
    name: raw.name,
    folder_id: raw.folder_id,
    created_at: Number(raw.created_at),
    updated_at: Number(raw.updated_at),
  }
}

function toFolderRecord(raw: RawFolderRecord): FolderRecord {
  return { ...toFolderRow(raw), owner_id: raw.owner_id, is_deleted: raw.is_deleted }
}

function toUser(raw: RawUser): UserRecord {
  return { ...raw, created_at: Number(raw.created_at), updated_at: Number(raw.updated_at) }
}

/**
 * The listing statement: ONE round trip per listing request. `total` is the maintained
 * count of the parent row (migration 002), so checking the parent and counting is a single
 * primary-key read; a missing, foreign or deleted parent yields no row at all. The page is
 * then read from the nearer end (as store/page-window.ts does for SQLite): `head` walks
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

const LIST = {
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
const SEEK = { name: seekStatements('name'), name_natural: seekStatements('name_natural') }

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
const CHECKPOINTS = { name: checkpointStatements('name'), name_natural: checkpointStatements('name_natural') }

/**
 * The live children of a parent without a natural sort key, in id order (so concurrent
 * completions lock rows in one order), and the UPDATE that stores their keys in one
 * statement, each only while its row still has the name the key was computed from and no
 * key (a rename since then cleared it, or another instance stored it).
 */
const UNKEYED = {
  children:
    'SELECT id, name FROM folders WHERE owner_id = $1 AND folder_id = $2 AND name_key IS NULL AND NOT is_deleted ORDER BY id',
  root: 'SELECT id, name FROM folders WHERE owner_id = $1 AND folder_id IS NULL AND name_key IS NULL AND NOT is_deleted ORDER BY id',
}
const STORE_NATURAL_KEYS: QueryConfig = {
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

const CHANGES = {
  children: changesStatement(
    'folder_service_changes_children',
    'EXISTS (SELECT 1 FROM folders WHERE id = $5 AND owner_id = $1 AND NOT is_deleted)',
    'parent_id = $5',
    'f.folder_id = $5',
  ),
  root: changesStatement('folder_service_changes_root', 'true', 'parent_id IS NULL', 'f.folder_id IS NULL'),
}

interface RawChangesRow {
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
const PRUNE_CHANGES: QueryConfig = {
  name: 'folder_service_prune_changes',
  text: `DELETE FROM folder_changes WHERE id IN (
      SELECT c.id FROM folder_changes AS c
       WHERE c.generation < $1::int8
         AND c.generation IS DISTINCT FROM (SELECT listing_generation FROM users WHERE id = c.owner_id)
       ORDER BY c.generation LIMIT $2::int8)`,
}

/**
 * $1 session ids: the sessions of a batch of requests (see batched-lookups.ts) with their
 * users and listing generations, the authentication of each request in one round trip. Expiry is compared per request in JavaScript, against that
 * request's own clock reading, exactly as `expires_at > now` would.
 */
const SESSION_USERS: QueryConfig = {
  name: 'folder_service_session_users',
  text: `SELECT s.id AS session_id, ${ms('s.expires_at')} AS expires_at,
                u.id, u.username, u.avatar_url, u.is_suspended, u.listing_generation::text AS generation
           FROM sessions s JOIN users u ON u.id = s.user_id
          WHERE s.id = ANY($1::uuid[])`,
}
type RawSessionRow = RawSessionUser & { session_id: string; expires_at: string | null }

/**
 * Session statements out at once. Two keep a round trip's wait short at low load and let
 * batches form under load; the rest of the pool stays free for listings.
 */
const SESSION_LOOKUPS_IN_FLIGHT = 2
const SESSION_LOOKUPS_PER_BATCH = 256

/** Imports at least this large refresh the planner statistics at once. */
const ANALYZE_AFTER_ROWS = 1000

const READ = { retry: true }
const WRITE = { retry: false }

export class PostgresStore implements Store {
  readonly kind = 'postgres'
  private readonly db: Connections
  private readonly reads: ReadRouter

  private readonly sessions: BatchedLookups<string, RawSessionRow | undefined>

  /** the one LISTEN connection, opened when someone first waits (see changeSignals) */
  private listener: ChangeListener | null = null
  private readonly hearers = new Set<(ownerId: string | null) => void>()

  constructor(
    db: Connections,
    replicas?: ReplicaSettings,
    private readonly listen?: { url: string; connectTimeoutMs: number },
  ) {
    this.db = db
    this.reads = new ReadRouter(replicas, db)
    this.sessions = new BatchedLookups(
      async (ids) => {
        const { rows } = await this.db.query<RawSessionRow>({ ...SESSION_USERS, values: [ids] }, READ)
        const byId = new Map(rows.map((row) => [row.session_id, row]))
        return ids.map((id) => byId.get(id))
      },
      SESSION_LOOKUPS_IN_FLIGHT,
      SESSION_LOOKUPS_PER_BATCH,
    )
  }

  migrate(): Promise<void> {
    return this.db.transaction(migratePostgres)
  }

  async findSessionUser(sessionId: string, now: number): Promise<SessionUser | null> {
    if (!isStoredId(sessionId)) return null
    const row = await this.sessions.find(sessionId)
    if (row === undefined || (row.expires_at !== null && Number(row.expires_at) <= now)) return null
    return {
      id: row.id,
      username: row.username,
      avatar_url: row.avatar_url,
      is_suspended: row.is_suspended,
      generation: Number(row.generation),
    }
  }

  /** `statement` on a replica that has replayed `minGeneration`, else on the primary. */
  private routed<R extends QueryResultRow>(
    statement: QueryConfig,
    generationOf: SnapshotGeneration<R>,
    minGeneration: number | undefined,
  ): Promise<R[]> {
    return this.reads.read<R>(
      statement,
      generationOf,
      minGeneration,
      async () => (await this.db.query<R>(statement, READ)).rows,
    )
  }

  /**
   * A listing statement in 'name' order, routed; in 'name_natural', an answer read while a
   * listed row had no sort key is not served: the keys are completed on the primary and the
   * statement runs there again (a replica may not have replayed the completion yet; it moves
   * no generation, so the router cannot tell). 503 if writers keep renaming meanwhile.
   */
  private async ordered<R extends QueryResultRow & GenerationRow & UnkeyedRow>(
    statement: QueryConfig,
    {
      ownerId,
      parentId,
      order,
      minGeneration,
    }: Pick<ListFoldersQuery, 'ownerId' | 'parentId' | 'order' | 'minGeneration'>,
  ): Promise<R[]> {
    let rows = await this.routed<R>(statement, generationColumn, minGeneration)
    if (order !== 'name_natural') return rows
    for (let pass = 0; rows[0]?.unkeyed === true; pass++) {
      if (pass === COMPLETION_PASSES) {
        throw new StoreUnavailableError(
          'natural sort keys of a folder kept changing while they were completed',
        )
      }
      await this.completeNaturalKeys(ownerId, parentId)
      rows = (await this.db.query<R>(statement, READ)).rows
    }
    return rows
  }

  /** Stores the missing natural sort keys of a parent's live children, on the primary. */
  private async completeNaturalKeys(ownerId: string, parentId: string | null): Promise<void> {
    const { rows } = await this.db.query<{ id: string; name: string }>(
      parentId === null
        ? { text: UNKEYED.root, values: [ownerId] }
        : { text: UNKEYED.children, values: [ownerId, parentId] },
      READ,
    )
    if (rows.length === 0) return
    const keys = rows.map((row) => Buffer.from(naturalKey(row.name)))
    const values = [rows.map((row) => row.id), rows.map((row) => row.name), keys]
    await this.db.query({ ...STORE_NATURAL_KEYS, values }, WRITE)
  }

  async listFolders(query: ListFoldersQuery): Promise<FolderPage | null> {
    const { ownerId, parentId, page, limit, seek } = query
    if (parentId !== null && !(isStoredId(parentId) && isStoredId(ownerId))) return null
    if (!isStoredId(ownerId)) return { folders: [], total: 0 }
    if (seek !== undefined) return this.seekFolders(query, seek)
    const offset = (page - 1) * limit
    const list = LIST[query.order ?? 'name']
    const statement =
      parentId === null
        ? { ...list.root, values: [ownerId, limit, offset] }
        : { ...list.children, values: [ownerId, limit, offset, parentId] }
    const rows = await this.ordered<RawListing>(statement, query)
    const first = rows[0]
    if (first === undefined) return null
    const folders = rows.flatMap((row) => (row.id === null ? [] : [toFolderRow(row as RawFolder)]))
    return { folders, total: Number(first.total) }
  }

  private async seekFolders(
    query: ListFoldersQuery,
    { direction, key, skip }: NonNullable<ListFoldersQuery['seek']>,
  ): Promise<FolderPage | null> {
    const { ownerId, parentId, limit, order = 'name' } = query
    // The key came out of a sealed token, so its id is one this service wrote; checked anyway.
    if (!isStoredId(key.id)) return { folders: [], total: 0, more: false }
    const values: unknown[] = [ownerId, limit + 1, key.name, key.created_at, key.id, skip ?? 0]
    const statement = parentId === null ? SEEK[order].root[direction] : SEEK[order].children[direction]
    if (parentId !== null) values.push(parentId)
    if (order === 'name_natural') values.push(Buffer.from(key.naturalKey ?? naturalKey(key.name)))
    const rows = await this.ordered<RawListing>({ ...statement, values }, query)
    const first = rows[0]
    if (first === undefined) return null
    const folders = rows.flatMap((row) => (row.id === null ? [] : [toFolderRow(row as RawFolder)]))
    const more = folders.length > limit
    if (more) folders.pop()
    if (direction === 'before') folders.reverse()
    return { folders, total: Number(first.total), more }
  }

  async listingCheckpoints(query: CheckpointsQuery): Promise<FolderKey[] | null> {
    const { ownerId, parentId, every, order = 'name' } = query
    if (parentId !== null && !(isStoredId(parentId) && isStoredId(ownerId))) return null
    if (!isStoredId(ownerId)) return []
    const statement =
      parentId === null
        ? { ...CHECKPOINTS[order].root, values: [ownerId, every] }
        : { ...CHECKPOINTS[order].children, values: [ownerId, every, parentId] }
    type RawCheckpoint = GenerationRow &
      UnkeyedRow & { name: string | null; created_at: string; id: string; name_key?: Buffer }
    const rows = await this.ordered<RawCheckpoint>(statement, query)
    if (rows.length === 0) return null
    return rows.flatMap(({ name, created_at, id, name_key }): FolderKey[] => {
      if (name === null) return []
      const key = { name, created_at: Number(created_at), id }
      return name_key === undefined ? [key] : [{ ...key, naturalKey: name_key }]
    })
  }

  async readChanges({
    ownerId,
    parentId,
    after,
    limit,
    minGeneration,
  }: ChangesQuery): Promise<ChangesResult> {
    if (!isStoredId(ownerId) || (parentId !== null && !isStoredId(parentId)))
      return { outcome: 'parent-not-found' }
    const values: unknown[] = [ownerId, after?.generation ?? null, after?.row ?? null, limit + 1]
    if (parentId !== null) values.push(parentId)
    const statement = parentId === null ? CHANGES.root : CHANGES.children
    // `present` is the owner's generation in the statement's snapshot.
    const rows = await this.routed<RawChangesRow>(
      { ...statement, values },
      (row) => row.present,
      minGeneration,
    )
    const first = rows[0]
    if (first === undefined || !first.parent_ok) return { outcome: 'parent-not-found' }
    const owner = { id: ownerId, username: first.username, avatar_url: first.avatar_url }
    const present = Number(first.present)
    if (after === null) return changesResult([], limit, owner, present)
    if (!first.valid) return { outcome: 'expired' }
    const read = rows.flatMap((row): LoggedChange[] => {
      if (row.row_id === null || row.kind === null) return []
      const [id, generation] = [Number(row.row_id), Number(row.generation)]
      if (row.kind === 'owner') return [{ kind: 'owner', id, generation }]
      const folderId = row.folder_id as string
      const folder =
        row.name === null
          ? null
          : {
              id: folderId,
              name: row.name,
              folder_id: parentId,
              created_at: Number(row.created_at),
              updated_at: Number(row.updated_at),
            }
      return [{ kind: 'folder', id, generation, folderId, folder }]
    })
    return changesResult(read, limit, owner, present)
  }

  /** The tree's statements, read where readChanges reads. */
  private readonly treeQuery: RoutedQuery = (statement, minGeneration) =>
    this.routed(statement, (row) => row.present, minGeneration)

  readTreePage(query: TreePageQuery): Promise<TreePageResult> {
    const { ownerId, rootId, subtreeOf, after } = query
    const ids = [ownerId, rootId, subtreeOf, after?.id ?? null]
    // Any other string names no row (see isStoredId) and must not reach a uuid parameter.
    if (!ids.every((id) => id === null || isStoredId(id)))
      return Promise.resolve({ outcome: 'parent-not-found' })
    return readTreePage(this.treeQuery, query)
  }

  readTreeLog(query: TreeLogQuery): Promise<TreeLogResult> {
    if (![query.ownerId, query.rootId].every((id) => id === null || isStoredId(id)))
      return Promise.resolve({ outcome: 'parent-not-found' })
    return readTreeLog(this.treeQuery, query)
  }

  async ownerGenerations(ownerIds: readonly string[]): Promise<Map<string, number>> {
    const ids = ownerIds.filter(isStoredId)
    if (ids.length === 0) return new Map()
    const { rows } = await this.db.query<{ id: string; generation: string }>(
      {
        name: 'folder_service_owner_generations',
        text: 'SELECT id, listing_generation::text AS generation FROM users WHERE id = ANY($1::uuid[])',
        values: [ids],
      },
      READ,
    )
    return new Map(rows.map((row) => [row.id, Number(row.generation)]))
  }

  async pruneChanges(before: number, batch: number): Promise<number> {
    const { rowCount } = await this.db.query({ ...PRUNE_CHANGES, values: [before * 1000, batch] }, WRITE)
    return rowCount ?? 0
  }

  async cursorKey(): Promise<Uint8Array> {
    const { rows } = await this.db.query<{ value: Buffer }>(
      { text: "SELECT value FROM service_keys WHERE name = 'cursor'" },
      READ,
    )
    const key = rows[0]
    if (key === undefined) throw new MissingCursorKeyError()
    return key.value
  }

  importData(data: ImportData): Promise<ImportCounts> {
    return this.importStream(itemsOf(data))
  }

  async importStream(source: ImportSource): Promise<ImportCounts> {
    const counts = await this.db.transaction((client) => importIntoPostgres(client, source))
    if (counts.folders + counts.users >= ANALYZE_AFTER_ROWS) {
      // Bulk-loaded rows have no planner statistics until autovacuum comes by (up to a
      // minute): meanwhile the listing of a large folder falls back to a bitmap scan and a
      // sort of every child (70 ms instead of 0.7 for 100,000 children). ANALYZE samples a
      // bounded number of rows, so it stays fast on any table size. The import has already
      // committed: a failure here only leaves the statistics to autovacuum.
      await this.db.query({ text: 'ANALYZE users, folders' }, WRITE).catch(() => undefined)
    }
    return counts
  }

  async findUser(idOrUsername: string): Promise<UserRecord | null> {
    // Like SQLite: the id (any letter case) first, else the username (exact).
    const id = idOrUsername.toLowerCase()
    const { rows } = await this.db.query<RawUser>(
      {
        text: `SELECT ${USER_COLUMNS} FROM users WHERE id = $1::uuid OR username = $2
                ORDER BY id = $1::uuid DESC LIMIT 1`,
        values: [isStoredId(id) ? id : null, idOrUsername],
      },
      READ,
    )
    return rows[0] === undefined ? null : toUser(rows[0])
  }

  async listUsers(): Promise<UserRecord[]> {
    const { rows } = await this.db.query<RawUser>(
      { text: `SELECT ${USER_COLUMNS} FROM users ORDER BY username` },
      READ,
    )
    return rows.map(toUser)
  }

  async setUserSuspended(userId: string, suspended: boolean, now: number): Promise<boolean> {
    if (!isStoredId(userId)) return false
    const { rowCount } = await this.db.query(
      {
        text: 'UPDATE users SET is_suspended = $2, updated_at = $3::timestamptz WHERE id = $1',
        values: [userId, suspended, formatTimestamp(now)],
      },
      WRITE,
    )
    return (rowCount ?? 0) > 0
  }

  async deleteSession(sessionId: string): Promise<boolean> {
    if (!isStoredId(sessionId)) return false
    const { rowCount } = await this.db.query(
      { text: 'DELETE FROM sessions WHERE id = $1', values: [sessionId] },
      WRITE,
    )
    return (rowCount ?? 0) > 0
  }

  async findFolder(folderId: string): Promise<FolderRecord | null> {
    if (!isStoredId(folderId)) return null
    const { rows } = await this.db.query<RawFolderRecord>(
      { text: `SELECT ${FOLDER_RECORD_COLUMNS} FROM folders WHERE id = $1`, values: [folderId] },
      READ,
    )
    return rows[0] === undefined ? null : toFolderRecord(rows[0])
  }

  async addFolder(folder: FolderRecord): Promise<void> {
    await this.db.query(
      {
        text: `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at, name_key)
               VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz, $8)`,
        values: [
          folder.id,
          folder.name,
          folder.folder_id,
          folder.owner_id,
          folder.is_deleted,
          formatTimestamp(folder.created_at),
          formatTimestamp(folder.updated_at),
          Buffer.from(naturalKey(folder.name)),
        ],
      },
      WRITE,
    )
  }

  async markFolderDeleted(folderId: string, now: number): Promise<boolean> {
    return (await this.deleteFolder(folderId, now)) !== null
  }

  async deleteFolder(folderId: string, now: number): Promise<{ hiddenFolders: number } | null> {
    if (!isStoredId(folderId)) return null
    return this.db.transaction(async (client) => {
      const ownerId = await lockOwnerOfLiveFolder(client, folderId)
      if (ownerId === null) return null
      const { rows } = await client.query<{ n: string }>({
        text: `WITH RECURSIVE below(id) AS (
                 SELECT id FROM folders WHERE owner_id = $1 AND folder_id = $2 AND NOT is_deleted
                 UNION
                 SELECT f.id FROM folders f JOIN below ON f.owner_id = $1 AND f.folder_id = below.id
                  WHERE NOT f.is_deleted)
               SELECT count(*) AS n FROM below`,
        values: [ownerId, folderId],
      })
      await client.query({
        text: 'UPDATE folders SET is_deleted = true, updated_at = $2::timestamptz WHERE id = $1',
        values: [folderId, formatTimestamp(now)],
      })
      return { hiddenFolders: Number(rows[0]?.n ?? 0) }
    })
  }

  async renameFolder(folderId: string, name: string, now: number): Promise<boolean> {
    if (!isStoredId(folderId)) return false
    // The new name's natural key in the same statement: the next natural read has nothing to
    // complete (folders_name_key_stale clears the key only when it is left unchanged).
    const { rowCount } = await this.db.query(
      {
        text: `UPDATE folders SET name = $2, updated_at = $3::timestamptz, name_key = $4
                WHERE id = $1 AND NOT is_deleted`,
        values: [folderId, name, formatTimestamp(now), Buffer.from(naturalKey(name))],
      },
      WRITE,
    )
    return (rowCount ?? 0) > 0
  }

  async moveFolder(folderId: string, parentId: string | null, now: number): Promise<MoveOutcome> {
    if (!isStoredId(folderId)) return 'no-folder'
    if (parentId !== null && !isStoredId(parentId)) return 'no-parent'
    return this.db.transaction(async (client): Promise<MoveOutcome> => {
      const ownerId = await lockOwnerOfLiveFolder(client, folderId)
      if (ownerId === null) return 'no-folder'
      if (parentId !== null) {
        const { rows } = await client.query<{ inside: boolean }>({
          text: `WITH RECURSIVE up(id) AS (
                   SELECT $1::uuid
                   UNION
                   SELECT f.folder_id FROM folders f JOIN up ON f.id = up.id WHERE f.folder_id IS NOT NULL)
                 SELECT EXISTS (SELECT 1 FROM up WHERE id = $2) AS inside
                  FROM folders WHERE id = $1 AND owner_id = $3 AND NOT is_deleted`,
          values: [parentId, folderId, ownerId],
        })
        if (rows[0] === undefined) return 'no-parent'
        if (rows[0].inside) return 'into-itself'
      }
      await client.query({
        text: 'UPDATE folders SET folder_id = $2, updated_at = $3::timestamptz WHERE id = $1',
        values: [folderId, parentId, formatTimestamp(now)],
      })
      return 'moved'
    })
  }

  async listLiveFolders(ownerId: string): Promise<FolderRecord[]> {
    if (!isStoredId(ownerId)) return []
    const { rows } = await this.db.query<RawFolderRecord>(
      {
        text: `SELECT ${FOLDER_RECORD_COLUMNS} FROM folders WHERE owner_id = $1 AND NOT is_deleted
                ${ORDER}`,
        values: [ownerId],
      },
      READ,
    )
    return rows.map(toFolderRecord)
  }

  async countUsers(): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>({ text: 'SELECT count(*) AS n FROM users' }, READ)
    return Number(rows[0]?.n ?? 0)
  }

  async ping(): Promise<void> {
    await this.db.query({ text: 'SELECT 1' }, READ)
  }

  onReplicaRefused(listener: (replica: string, reason: ReplicaRefusal) => void): void {
    this.reads.onRefused(listener)
  }

  readRouting(): ReadRoutingStats {
    return { ...this.reads.stats(), primaryStatements: this.db.statements }
  }

  /**
   * NOTIFY from the triggers (migration 011) through one LISTEN connection for the whole
   * store, opened at the first resume and kept until close.
   */
  changeSignals(onCommit: (ownerId: string | null) => void): ChangeSignals | null {
    const listen = this.listen
    if (listen === undefined) return null
    this.hearers.add(onCommit)
    return {
      resume: () => {
        this.listener ??= new ChangeListener(listen.url, {
          onCommit: (ownerId) => {
            for (const hear of this.hearers) hear(ownerId)
          },
          connectTimeoutMs: listen.connectTimeoutMs,
        })
        this.listener.start()
      },
      pause: () => undefined,
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.db.close(), this.reads.close(), this.listener?.close()])
  }
}

export interface PostgresStoreOptions extends PoolSettings {
  /** streaming replicas of `url` for routed reads, each with its own pool */
  replicas?: ReplicaSettings
  /** where the LISTEN connection goes (a direct URL around a pooler); absent: `url`; null: none */
  listenUrl?: string | null
}

/** A store on a pool that has not connected yet: no I/O until the first call. */
export function createPostgresStore(url: string, options: PostgresStoreOptions): PostgresStore {
  return new PostgresStore(new Connections(url, options), options.replicas)
}

/**
 * Creates the store and checks that the server answers, so a wrong URL or a server that is
 * down fails start-up at once with one line (`cannot connect to PostgreSQL at host:port:
 * ECONNREFUSED`), within connectTimeoutMs, and leaves no connection or timer behind.
 * The connection it opens stays pooled for the migration that openStore runs next.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions): Promise<PostgresStore> {
  const connections = new Connections(url, options)
  const listenUrl = options.listenUrl === undefined ? url : options.listenUrl
  const listen =
    listenUrl === null ? undefined : { url: listenUrl, connectTimeoutMs: options.connectTimeoutMs }
  const store = new PostgresStore(connections, options.replicas, listen)
  try {
    await store.ping()
  } catch (error) {
    await store.close()
    throw error instanceof StoreUnavailableError ? error : cannotConnect(connections.target, error)
  }
  return store
}
