import type { QueryConfig, QueryResultRow } from 'pg'
import { formatTimestamp } from '../../time.js'
import {
  MissingCursorKeyError,
  StoreUnavailableError,
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
  type ReadRoutingStats,
  type SessionUser,
  type Store,
  type TreeLogQuery,
  type TreeLogResult,
  type TreePageQuery,
  type TreePageResult,
  type UserRecord,
} from '../store.js'
import { Connections, type PoolSettings } from './postgres-connections.js'
import { cannotConnect } from './postgres-errors.js'
import { importIntoPostgres } from './postgres-import.js'
import { itemsOf } from '../import-faults.js'
import { BatchedLookups } from './batched-lookups.js'
import { ReadRouter, type ReplicaSettings, type SnapshotGeneration } from './read-router.js'
import { migratePostgres } from './postgres-migrations.js'
import { changesResult, type LoggedChange } from '../change-rows.js'
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
const LISTING_ORDER = 'ORDER BY folders.folder_id, folders.name, folders.created_at, folders.id'
const LISTING_ORDER_DESC =
  'ORDER BY folders.folder_id DESC, folders.name DESC, folders.created_at DESC, folders.id DESC'

/**
 * Stored ids are canonical lower-case UUIDs. Any other string names no row, as on SQLite
 * (which compares text), and must not reach a uuid parameter, which PostgreSQL would
 * refuse with an error instead.
 */
const STORED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const isStoredId = (id: string) => STORED_ID.test(id)

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
type RawListing = GenerationRow & { total: string } & { [K in keyof RawFolder]: RawFolder[K] | null }

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
function listingStatement(name: string, total: string, parentFilter: string): QueryConfig {
  const children = `FROM folders WHERE owner_id = $1 AND ${parentFilter} AND NOT is_deleted`
  const columns = 'id, name, folder_id, created_at, updated_at'
  return {
    name,
    // $2 page size, $3 rows before the page (offset); `n` rows on the page, `after` beyond it.
    text: `WITH win AS (
        SELECT t.total, GREATEST(LEAST($2::int8, t.total - $3::int8), 0) AS n,
               GREATEST(t.total - $3::int8 - $2::int8, 0) AS after
          FROM (${total}) AS t
      ),
      head AS (
        SELECT ${columns} ${children}
           AND (SELECT n > 0 AND $3::int8 <= after FROM win)
         ${LISTING_ORDER} LIMIT (SELECT n FROM win) OFFSET $3::int8
      ),
      tail AS (
        SELECT ${columns} ${children}
           AND (SELECT n > 0 AND $3::int8 > after FROM win)
         ${LISTING_ORDER_DESC} LIMIT (SELECT n FROM win) OFFSET (SELECT after FROM win)
      ),
      page AS (SELECT * FROM head UNION ALL SELECT * FROM tail)
    SELECT win.total, page.id, page.name, page.folder_id,
           ${ms('page.created_at')} AS created_at, ${ms('page.updated_at')} AS updated_at,
           ${GENERATION_COLUMN}
      FROM win LEFT JOIN page ON true
     ORDER BY page.name, page.created_at, page.id`,
  }
}

/** $1 owner, $2 limit, $3 offset, $4 parent */
export const LIST_CHILDREN = listingStatement(
  'folder_service_list_children_v3',
  'SELECT child_count::int8 AS total FROM folders WHERE id = $4 AND owner_id = $1 AND NOT is_deleted',
  'folder_id = $4',
)

/** $1 owner, $2 limit, $3 offset */
export const LIST_ROOT = listingStatement(
  'folder_service_list_root_v3',
  'SELECT coalesce((SELECT root_folder_count FROM users WHERE id = $1), 0)::int8 AS total',
  'folder_id IS NULL',
)

/**
 * The seek statement of a continuation token: the rows strictly after (or before) a key,
 * found by seeking folders_listing with a row comparison (an index condition, so the depth
 * of the key costs nothing), one row more than the page to tell whether another follows,
 * and the total as in listingStatement: one round trip, one snapshot. No row at all when the
 * parent is not a live folder of the owner. The key's created_at arrives as epoch ms and is
 * compared exactly (timestamptz(3) holds whole milliseconds).
 * $1 owner, $2 rows to read, $3 name, $4 created_at (ms), $5 id, $6 rows to skip first,
 * $7 parent (children only).
 */
function seekStatement(name: string, total: string, parentFilter: string, direction: 'after' | 'before') {
  const [comparison, order] = direction === 'after' ? ['>', LISTING_ORDER] : ['<', LISTING_ORDER_DESC]
  return {
    name,
    text: `SELECT t.total, p.id, p.name, p.folder_id, p.created_at, p.updated_at, ${GENERATION_COLUMN}
      FROM (${total}) AS t
      LEFT JOIN LATERAL (
        SELECT id, name, folder_id, ${ms('folders.created_at')} AS created_at,
               ${ms('folders.updated_at')} AS updated_at
          FROM folders
         WHERE owner_id = $1 AND ${parentFilter} AND NOT is_deleted
           AND (folders.name, folders.created_at, folders.id)
               ${comparison} ($3::text, 'epoch'::timestamptz + $4::int8 * interval '1 millisecond', $5::uuid)
         ${order} LIMIT $2::int8 OFFSET $6::int8
      ) AS p ON true`,
  }
}

const CHILDREN_TOTAL =
  'SELECT child_count::int8 AS total FROM folders WHERE id = $7 AND owner_id = $1 AND NOT is_deleted'
const ROOT_TOTAL = 'SELECT coalesce((SELECT root_folder_count FROM users WHERE id = $1), 0)::int8 AS total'
const SEEK = {
  children: {
    after: seekStatement('folder_service_seek_children_after', CHILDREN_TOTAL, 'folder_id = $7', 'after'),
    before: seekStatement('folder_service_seek_children_before', CHILDREN_TOTAL, 'folder_id = $7', 'before'),
  },
  root: {
    after: seekStatement('folder_service_seek_root_after', ROOT_TOTAL, 'folder_id IS NULL', 'after'),
    before: seekStatement('folder_service_seek_root_before', ROOT_TOTAL, 'folder_id IS NULL', 'before'),
  },
}

/**
 * Checkpoints of a listing: the rows numbered in index order, every n-th kept; one pass over
 * the index entries. No row when the parent is not a live folder of the owner; a row with a
 * null name when it is but has no checkpoint. $1 owner, $2 every, $3 parent (children only).
 */
function checkpointsStatement(name: string, total: string, parentFilter: string): QueryConfig {
  return {
    name,
    text: `SELECT c.name, ${ms('c.created_at')} AS created_at, c.id::text AS id, ${GENERATION_COLUMN}
      FROM (${total}) AS t
      LEFT JOIN LATERAL (
        SELECT name, created_at, id FROM (
          SELECT folders.name, folders.created_at, folders.id,
                 row_number() OVER (${LISTING_ORDER}) AS position
            FROM folders WHERE owner_id = $1 AND ${parentFilter} AND NOT is_deleted
        ) AS numbered WHERE position % $2::int8 = 0
      ) AS c ON true
     ORDER BY c.name, c.created_at, c.id`,
  }
}

const CHECKPOINTS = {
  children: checkpointsStatement(
    'folder_service_checkpoints_children',
    'SELECT 1 FROM folders WHERE id = $3 AND owner_id = $1 AND NOT is_deleted',
    'folder_id = $3',
  ),
  root: checkpointsStatement('folder_service_checkpoints_root', 'SELECT 1', 'folder_id IS NULL'),
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

  constructor(db: Connections, replicas?: ReplicaSettings) {
    this.db = db
    this.reads = new ReadRouter(replicas)
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

  async listFolders(query: ListFoldersQuery): Promise<FolderPage | null> {
    const { ownerId, parentId, page, limit, seek, minGeneration } = query
    if (parentId !== null && !(isStoredId(parentId) && isStoredId(ownerId))) return null
    if (!isStoredId(ownerId)) return { folders: [], total: 0 }
    if (seek !== undefined) return this.seekFolders(query, seek)
    const offset = (page - 1) * limit
    const statement =
      parentId === null
        ? { ...LIST_ROOT, values: [ownerId, limit, offset] }
        : { ...LIST_CHILDREN, values: [ownerId, limit, offset, parentId] }
    const rows = await this.routed<RawListing>(statement, generationColumn, minGeneration)
    const first = rows[0]
    if (first === undefined) return null
    const folders = rows.flatMap((row) => (row.id === null ? [] : [toFolderRow(row as RawFolder)]))
    return { folders, total: Number(first.total) }
  }

  private async seekFolders(
    { ownerId, parentId, limit, minGeneration }: ListFoldersQuery,
    { direction, key, skip }: NonNullable<ListFoldersQuery['seek']>,
  ): Promise<FolderPage | null> {
    // The key came out of a sealed token, so its id is one this service wrote; checked anyway.
    if (!isStoredId(key.id)) return { folders: [], total: 0, more: false }
    const values: unknown[] = [ownerId, limit + 1, key.name, key.created_at, key.id, skip ?? 0]
    const statement = parentId === null ? SEEK.root[direction] : SEEK.children[direction]
    if (parentId !== null) values.push(parentId)
    const rows = await this.routed<RawListing>({ ...statement, values }, generationColumn, minGeneration)
    const first = rows[0]
    if (first === undefined) return null
    const folders = rows.flatMap((row) => (row.id === null ? [] : [toFolderRow(row as RawFolder)]))
    const more = folders.length > limit
    if (more) folders.pop()
    if (direction === 'before') folders.reverse()
    return { folders, total: Number(first.total), more }
  }

  async listingCheckpoints({
    ownerId,
    parentId,
    every,
    minGeneration,
  }: CheckpointsQuery): Promise<FolderKey[] | null> {
    if (parentId !== null && !(isStoredId(parentId) && isStoredId(ownerId))) return null
    if (!isStoredId(ownerId)) return []
    const query =
      parentId === null
        ? { ...CHECKPOINTS.root, values: [ownerId, every] }
        : { ...CHECKPOINTS.children, values: [ownerId, every, parentId] }
    type RawCheckpoint = GenerationRow & { name: string | null; created_at: string; id: string }
    const rows = await this.routed<RawCheckpoint>(query, generationColumn, minGeneration)
    if (rows.length === 0) return null
    return rows.flatMap(({ name, created_at, id }) =>
      name === null ? [] : [{ name, created_at: Number(created_at), id }],
    )
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
        text: `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
               VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz)`,
        values: [
          folder.id,
          folder.name,
          folder.folder_id,
          folder.owner_id,
          folder.is_deleted,
          formatTimestamp(folder.created_at),
          formatTimestamp(folder.updated_at),
        ],
      },
      WRITE,
    )
  }

  async markFolderDeleted(folderId: string, now: number): Promise<boolean> {
    if (!isStoredId(folderId)) return false
    const { rowCount } = await this.db.query(
      {
        text: 'UPDATE folders SET is_deleted = true, updated_at = $2::timestamptz WHERE id = $1 AND NOT is_deleted',
        values: [folderId, formatTimestamp(now)],
      },
      WRITE,
    )
    return (rowCount ?? 0) > 0
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

  readRouting(): ReadRoutingStats {
    return { ...this.reads.stats(), primaryStatements: this.db.statements }
  }

  async close(): Promise<void> {
    await Promise.all([this.db.close(), this.reads.close()])
  }
}

export interface PostgresStoreOptions extends PoolSettings {
  /** streaming replicas of `url` for routed reads, each with its own pool */
  replicas?: ReplicaSettings
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
  const store = new PostgresStore(connections, options.replicas)
  try {
    await store.ping()
  } catch (error) {
    await store.close()
    throw error instanceof StoreUnavailableError ? error : cannotConnect(connections.target, error)
  }
  return store
}
