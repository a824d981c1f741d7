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
  type MoveOutcome,
  type SessionUser,
  type Store,
  type TreeQuery,
  type TreeResult,
  type UserRecord,
} from '../store.js'
import { Connections, type Client, type FollowSettings, type PoolSettings } from './postgres-connections.js'
import { ChangeListener } from './postgres-notifications.js'
import { cannotConnect } from './postgres-errors.js'
import { importIntoPostgres } from './postgres-import.js'
import { itemsOf } from '../import-faults.js'
import { BatchedLookups } from './batched-lookups.js'
import type { ReadRoutingStats, ReplicaRefusal } from '../replica-stats.js'
import type { PrimaryChange, PrimaryStats } from '../failover-stats.js'
import { ReadRouter, type ReplicaSettings, type SnapshotGeneration } from './replicas.js'
import { migratePostgres } from './postgres-migrations.js'
import { changesResult, type LoggedChange } from '../change-rows.js'
import { naturalKey } from '../../ordering/natural-key.js'
import { readTree, TREE_TRANSACTION, type SnapshotQuery } from './postgres-tree.js'
import {
  ADD_FOLDER,
  ANALYZE,
  CHANGES,
  CHECKPOINTS,
  COUNT_LIVE_BELOW,
  COUNT_USERS,
  CURSOR_KEY,
  DELETE_SESSION,
  FIND_FOLDER,
  FIND_USER,
  generationColumn,
  LIST,
  LIST_LIVE_FOLDERS,
  LIST_USERS,
  LIVE_FOLDER,
  LOCK_FOLDER_OWNER,
  MARK_FOLDER_DELETED,
  MOVE_FOLDER,
  OWNER_GENERATIONS,
  PARENT_INSIDE,
  PING,
  PRUNE_CHANGES,
  RENAME_FOLDER,
  SEEK,
  SESSION_USERS,
  SET_USER_FROZEN,
  STORE_NATURAL_KEYS,
  UNKEYED,
  type GenerationRow,
  type RawChangesRow,
  type RawFolder,
  type RawFolderRecord,
  type RawListing,
  type RawSessionRow,
  type RawUser,
  type UnkeyedRow,
} from './postgres-statements.js'

/**
 * The PostgreSQL backend (node-postgres), behaving exactly like SqliteStore: the Store
 * speaks epoch-ms numbers, lower-case uuid strings and booleans; timestamptz values leave
 * the database already as epoch-ms int8 (exact, independent of the session TimeZone), and
 * int8 values, which pg returns as strings, become numbers here. The SQL is in
 * postgres-statements.ts.
 */

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
  const { rows } = await client.query<{ owner_id: string }>({ ...LOCK_FOLDER_OWNER, values: [folderId] })
  const ownerId = rows[0]?.owner_id
  if (ownerId === undefined) return null
  const live = await client.query({ ...LIVE_FOLDER, values: [folderId] })
  return (live.rowCount ?? 0) > 0 ? ownerId : null
}

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
    private readonly listen?: ListenerPlace,
    /** DATABASE_DIRECT_URL: the database itself, beside a pooler, for migrations */
    private readonly direct?: Connections,
  ) {
    this.db = db
    this.reads = new ReadRouter(replicas, db)
    // The LISTEN connection is on the old primary, or waits out a back-off: it goes to the new one now.
    db.primary?.onChange(() => this.listener?.reconnect())
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

  /** On the database itself when DATABASE_DIRECT_URL names it (one long transaction, no pooler hop). */
  migrate(): Promise<readonly string[]> {
    return (this.direct ?? this.db).transaction(migratePostgres)
  }

  async findSessionUser(sessionId: string, now: number): Promise<SessionUser | null> {
    if (!isStoredId(sessionId)) return null
    return sessionUserOf(await this.sessions.find(sessionId), now)
  }

  async findSessionUsers(sessionIds: readonly string[], now: number): Promise<(SessionUser | null)[]> {
    const ids = sessionIds.filter(isStoredId)
    if (ids.length === 0) return sessionIds.map(() => null)
    const { rows } = await this.db.query<RawSessionRow>({ ...SESSION_USERS, values: [ids] }, READ)
    const byId = new Map(rows.map((row) => [row.session_id, row]))
    return sessionIds.map((id) => sessionUserOf(byId.get(id), now))
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

  /**
   * One answer of the tree feed, its statements in one snapshot: a repeatable-read, read-only
   * transaction on the primary (a replica's snapshot would not hold across a pool's
   * statements, and the answer's reads must agree).
   */
  readTree(query: TreeQuery): Promise<TreeResult> {
    const { ownerId, rootId, from } = query
    const after = from?.expansion?.after
    const ids = [
      ownerId,
      rootId,
      from?.expansion?.top ?? null,
      ...(after?.head ?? []),
      after?.tail?.id ?? null,
    ]
    // Any other string names no row (see isStoredId) and must not reach a uuid parameter.
    if (!ids.every((id) => id === null || isStoredId(id)))
      return Promise.resolve({ outcome: 'parent-not-found' })
    return this.db.transaction(async (client) => {
      await client.query(TREE_TRANSACTION)
      // Each statement's row type is the caller's (postgres-tree.ts reads its own columns).
      const run: SnapshotQuery = async <R>(statement: QueryConfig) =>
        (await client.query<R & QueryResultRow>(statement)).rows
      return readTree(run, query)
    })
  }

  async ownerGenerations(ownerIds: readonly string[]): Promise<Map<string, number>> {
    const ids = ownerIds.filter(isStoredId)
    if (ids.length === 0) return new Map()
    const { rows } = await this.db.query<{ id: string; generation: string }>(
      { ...OWNER_GENERATIONS, values: [ids] },
      READ,
    )
    return new Map(rows.map((row) => [row.id, Number(row.generation)]))
  }

  async pruneChanges(before: number, batch: number): Promise<number> {
    const { rowCount } = await this.db.query({ ...PRUNE_CHANGES, values: [before * 1000, batch] }, WRITE)
    return rowCount ?? 0
  }

  async cursorKey(): Promise<Uint8Array> {
    const { rows } = await this.db.query<{ value: Buffer }>(CURSOR_KEY, READ)
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
      await this.db.query(ANALYZE, WRITE).catch(() => undefined)
    }
    return counts
  }

  async findUser(idOrUsername: string): Promise<UserRecord | null> {
    // Like SQLite: the id (any letter case) first, else the username (exact).
    const id = idOrUsername.toLowerCase()
    const { rows } = await this.db.query<RawUser>(
      { ...FIND_USER, values: [isStoredId(id) ? id : null, idOrUsername] },
      READ,
    )
    return rows[0] === undefined ? null : toUser(rows[0])
  }

  async listUsers(): Promise<UserRecord[]> {
    const { rows } = await this.db.query<RawUser>(LIST_USERS, READ)
    return rows.map(toUser)
  }

  async setUserFrozen(userId: string, frozen: boolean, now: number): Promise<boolean> {
    if (!isStoredId(userId)) return false
    const { rowCount } = await this.db.query(
      { ...SET_USER_FROZEN, values: [userId, frozen, formatTimestamp(now)] },
      WRITE,
    )
    return (rowCount ?? 0) > 0
  }

  async deleteSession(sessionId: string): Promise<boolean> {
    if (!isStoredId(sessionId)) return false
    const { rowCount } = await this.db.query({ ...DELETE_SESSION, values: [sessionId] }, WRITE)
    return (rowCount ?? 0) > 0
  }

  async findFolder(folderId: string): Promise<FolderRecord | null> {
    if (!isStoredId(folderId)) return null
    const { rows } = await this.db.query<RawFolderRecord>({ ...FIND_FOLDER, values: [folderId] }, READ)
    return rows[0] === undefined ? null : toFolderRecord(rows[0])
  }

  async addFolder(folder: FolderRecord): Promise<void> {
    await this.db.query(
      {
        ...ADD_FOLDER,
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
      const { rows } = await client.query<{ n: string }>({ ...COUNT_LIVE_BELOW, values: [ownerId, folderId] })
      await client.query({ ...MARK_FOLDER_DELETED, values: [folderId, formatTimestamp(now)] })
      return { hiddenFolders: Number(rows[0]?.n ?? 0) }
    })
  }

  async renameFolder(folderId: string, name: string, now: number): Promise<boolean> {
    if (!isStoredId(folderId)) return false
    // The new name's natural key in the same statement: the next natural read has nothing to
    // complete (folders_name_key_stale clears the key only when it is left unchanged).
    const { rowCount } = await this.db.query(
      {
        ...RENAME_FOLDER,
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
          ...PARENT_INSIDE,
          values: [parentId, folderId, ownerId],
        })
        if (rows[0] === undefined) return 'no-parent'
        if (rows[0].inside) return 'into-itself'
      }
      await client.query({ ...MOVE_FOLDER, values: [folderId, parentId, formatTimestamp(now)] })
      return 'moved'
    })
  }

  async listLiveFolders(ownerId: string): Promise<FolderRecord[]> {
    if (!isStoredId(ownerId)) return []
    const { rows } = await this.db.query<RawFolderRecord>({ ...LIST_LIVE_FOLDERS, values: [ownerId] }, READ)
    return rows.map(toFolderRecord)
  }

  async countUsers(): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>(COUNT_USERS, READ)
    return Number(rows[0]?.n ?? 0)
  }

  ping(): Promise<void> {
    return this.db.ping(PING)
  }

  primaryFailover(): PrimaryStats | undefined {
    return this.db.primary?.stats()
  }

  onPrimaryChange(listener: (change: PrimaryChange) => void): void {
    this.db.primary?.onChange((change) => {
      listener(change)
    })
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
        this.listener ??= new ChangeListener(listen.locate, {
          onCommit: (ownerId) => {
            for (const hear of this.hearers) hear(ownerId)
          },
          onLost: listen.lost,
          connectTimeoutMs: listen.connectTimeoutMs,
        })
        this.listener.start()
      },
      pause: () => undefined,
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.db.close(), this.reads.close(), this.listener?.close(), this.direct?.close()])
  }
}

/** Where the LISTEN connection goes, found anew at each connect, and what to do when it is lost. */
interface ListenerPlace {
  locate: () => Promise<string>
  lost?: () => void
  connectTimeoutMs: number
}

export interface PostgresStoreOptions extends PoolSettings, Partial<FollowSettings> {
  /** streaming replicas of `url` for routed reads, each with its own pool */
  replicas?: ReplicaSettings
  /** DATABASE_DIRECT_URL: the database itself (it may list hosts), for LISTEN and migrations */
  directUrl?: string | null
  /** whether to LISTEN for commit hints (FEED_NOTIFY); default true */
  listen?: boolean
}

/** A store on a pool that has not connected yet: no I/O until the first call. */
export function createPostgresStore(url: string, options: PostgresStoreOptions): PostgresStore {
  return new PostgresStore(connectionsOf(url, options), options.replicas)
}

function connectionsOf(url: string, options: PostgresStoreOptions): Connections {
  return new Connections(url, options, { failoverWaitMs: options.failoverWaitMs ?? 0 })
}

/**
 * Where what needs a session goes: LISTEN on the database itself (DATABASE_DIRECT_URL when
 * given, else the statements' primary, wherever it is); behind a transaction pooler without
 * a direct URL, nowhere: a pooler drops notifications, and followers are woken by the poll.
 */
function listenerPlace(
  connections: Connections,
  direct: Connections | undefined,
  options: PostgresStoreOptions,
): ListenerPlace | undefined {
  if (options.listen === false) return undefined
  const { connectTimeoutMs } = options
  if (direct !== undefined) {
    return { locate: () => direct.primaryUrl(), lost: () => direct.sessionLost(), connectTimeoutMs }
  }
  if (options.pooler === 'transaction') return undefined
  return { locate: () => connections.primaryUrl(), connectTimeoutMs }
}

/**
 * Creates the store and checks that the server answers, so a wrong URL or a server that is
 * down fails start-up at once with one line (`cannot connect to PostgreSQL at host:port:
 * ECONNREFUSED`), within connectTimeoutMs, and leaves no connection or timer behind.
 * The connection it opens stays pooled for the migration that openStore runs next. With a
 * host list, start-up waits for a primary as a request would, plus one connect timeout.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions): Promise<PostgresStore> {
  const connections = connectionsOf(url, options)
  // The direct URL reaches the server itself: its connections keep their session settings.
  const direct =
    options.directUrl === undefined || options.directUrl === null
      ? undefined
      : connectionsOf(options.directUrl, { ...options, pooler: 'none' })
  const listen = listenerPlace(connections, direct, options)
  const store = new PostgresStore(connections, options.replicas, listen, direct)
  try {
    await connections.ready((options.failoverWaitMs ?? 0) + options.connectTimeoutMs)
    await store.ping()
  } catch (error) {
    await store.close()
    throw error instanceof StoreUnavailableError ? error : cannotConnect(connections.target, error)
  }
  return store
}

/** A session's row as the session lookups return it: its user, or null once expired at `now` (or none). */
function sessionUserOf(row: RawSessionRow | undefined, now: number): SessionUser | null {
  if (row === undefined || (row.expires_at !== null && Number(row.expires_at) <= now)) return null
  return {
    id: row.id,
    username: row.username,
    avatar_url: row.avatar_url,
    is_suspended: row.is_suspended,
    generation: Number(row.generation),
  }
}
