import type Database from 'better-sqlite3'
import {
  MissingCursorKeyError,
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
import { migrateSqlite } from './sqlite-migrations.js'
import { translate } from './sqlite-errors.js'
import { pageWindow } from './page-window.js'
import { itemsOf } from '../import-faults.js'
import { importIntoSqlite } from './sqlite-import.js'
import { openSqliteDatabase, type SqliteSettings } from './sqlite-connections.js'
import { changesResult, type LoggedChange } from '../change-rows.js'
import { naturalKey } from '../../ordering/natural-key.js'
import { prepareTreeStatements, readTreeNow, type TreeStatements } from './sqlite-tree.js'
import { commitHints } from './commit-hints.js'
import {
  ADD_FOLDER,
  CLEAR_REPLACED_ROWS,
  COUNT_LIVE_BELOW,
  COUNT_USERS,
  DELETE_CHANGE,
  DELETE_SESSION,
  FIND_FOLDER,
  FIND_USER,
  keyValues,
  LIST_LIVE_FOLDERS,
  LIST_USERS,
  LIVE_FOLDER_OWNER,
  MARK_FOLDER_DELETED,
  MOVE_FOLDER,
  PARENT_INSIDE,
  PING,
  prepareChangeStatements,
  prepareHotStatements,
  PRUNABLE_CHANGES,
  RENAME_FOLDER,
  SET_USER_FROZEN,
  type ChangeStatements,
  type HotStatements,
  type LogRow,
  type PageRow,
  type Row,
  type SessionRow,
  type SessionUsersRow,
} from './sqlite-statements.js'

function toUser(row: Row): UserRecord {
  return { ...(row as unknown as UserRecord), is_suspended: row.is_suspended === 1 }
}

function toFolder(row: Row): FolderRecord {
  return { ...(row as unknown as FolderRecord), is_deleted: row.is_deleted === 1 }
}

/** The embedded backend: better-sqlite3 on one file in WAL mode (see openStore). */
export class SqliteStore implements Store {
  readonly kind = 'sqlite'
  private readonly db: Database.Database
  private closed = false
  /**
   * An import in progress: its write transaction stays open on this connection while the
   * source is read (asynchronously), so every other call waits for it to end rather than
   * run inside it.
   */
  private importing: Promise<unknown> | null = null

  private hot: HotStatements | undefined
  private listing: ((query: ListFoldersQuery) => FolderPage | null) | undefined
  private changes: ((query: ChangesQuery) => ChangesResult) | undefined
  private changeStatements: ChangeStatements | undefined
  private treeStatements: TreeStatements | undefined
  private treeRead: ((query: TreeQuery) => TreeResult) | undefined
  /** pruneChanges goes on from this owner id (see there) */
  private pruneFrom = ''

  constructor(db: Database.Database) {
    this.db = db
  }

  /** Prepared on first use (after migrate: the tables must exist), then reused. */
  private get q(): HotStatements {
    return (this.hot ??= prepareHotStatements(this.db))
  }

  /** Runs a synchronous database call, translating driver errors. */
  private run<T>(work: () => T): Promise<T> {
    if (this.importing !== null) return this.importing.then(() => this.run(work))
    try {
      return Promise.resolve(work())
    } catch (error) {
      return Promise.reject(translate(error))
    }
  }

  migrate(): Promise<readonly string[]> {
    return migrateSqlite(this.db).catch((error: unknown) => Promise.reject(translate(error)))
  }

  findSessionUser(sessionId: string, now: number): Promise<SessionUser | null> {
    return this.run(() => {
      const row = this.q.sessionUser.get(sessionId, now) as SessionRow | undefined
      return row === undefined ? null : sessionUserOf(row)
    })
  }

  findSessionUsers(sessionIds: readonly string[], now: number): Promise<(SessionUser | null)[]> {
    return this.run(() => {
      const rows = this.q.sessionUsers.all(JSON.stringify(sessionIds), now) as SessionUsersRow[]
      const byId = new Map(rows.map(([sessionId, ...row]) => [sessionId, sessionUserOf(row)]))
      return sessionIds.map((id) => byId.get(id) ?? null)
    })
  }

  listFolders(query: ListFoldersQuery): Promise<FolderPage | null> {
    // One read transaction, so the count and the page see the same snapshot; the wrapper
    // is made once, not per request.
    this.listing ??= this.db.transaction((q: ListFoldersQuery) => this.readListing(q))
    const listing = this.listing
    return this.run(() =>
      query.order === 'name_natural'
        ? this.naturally(query.ownerId, query.parentId, () => this.readListing(query))
        : listing(query),
    )
  }

  /**
   * `read` in one snapshot in which every live child of the parent has its natural sort key.
   * Keys missing (rows of other writers) are completed first, in one write transaction that
   * then reads: no writer can come between. Storing a key is no listed change.
   */
  private naturally<T>(ownerId: string, parentId: string | null, read: () => T): T {
    const q = this.q
    const [unkeyed, args] =
      parentId === null ? [q.unkeyed.root, [ownerId]] : [q.unkeyed.children, [ownerId, parentId]]
    const keyed = this.db.transaction(() => (unkeyed.get(...args) === undefined ? { read: read() } : null))()
    if (keyed !== null) return keyed.read
    return this.db
      .transaction(() => {
        for (const [id, name] of unkeyed.all(...args) as [string, string][]) {
          q.setNaturalKey.run(Buffer.from(naturalKey(name)), id, name)
        }
        return read()
      })
      .immediate()
  }

  private readListing({ ownerId, parentId, page, limit, seek, order }: ListFoldersQuery): FolderPage | null {
    const q = this.q
    const total = (
      parentId === null ? (q.rootFolderCount.get(ownerId) ?? 0) : q.liveChildCount.get(parentId, ownerId)
    ) as number | undefined
    if (total === undefined) return null
    const pages = q.pages[order ?? 'name'][parentId === null ? 'root' : 'children']
    const args = parentId === null ? [ownerId] : [ownerId, parentId]
    const toFolders = (rows: PageRow[]) =>
      rows.map(([id, name, created_at, updated_at]): FolderRow => ({
        id,
        name,
        folder_id: parentId,
        created_at,
        updated_at,
      }))
    if (seek !== undefined) {
      // One row more than the page tells whether another page lies beyond it.
      const rows = pages[seek.direction].all(
        ...args,
        ...keyValues(seek.key, order),
        limit + 1,
        seek.skip ?? 0,
      ) as PageRow[]
      const more = rows.length > limit
      if (more) rows.pop()
      if (seek.direction === 'before') rows.reverse()
      return { folders: toFolders(rows), total, more }
    }
    const window = pageWindow(total, page, limit)
    if (window === null) return { folders: [], total }
    const rows = (window.fromEnd ? pages.fromEnd : pages.forward).all(
      ...args,
      window.limit,
      window.offset,
    ) as PageRow[]
    if (window.fromEnd) rows.reverse()
    return { folders: toFolders(rows), total }
  }

  listingCheckpoints({ ownerId, parentId, every, order }: CheckpointsQuery): Promise<FolderKey[] | null> {
    const read = () => {
      const q = this.q
      if (parentId !== null && q.liveChildCount.get(parentId, ownerId) === undefined) return null
      const pages = q.pages[order ?? 'name'][parentId === null ? 'root' : 'children']
      const args = parentId === null ? [ownerId] : [ownerId, parentId]
      const rows = pages.checkpoints.all(...args, every) as [string, number, string, Buffer?][]
      return rows.map(([name, created_at, id, key]): FolderKey =>
        key === undefined ? { name, created_at, id } : { name, created_at, id, naturalKey: key },
      )
    }
    return this.run(() => (order === 'name_natural' ? this.naturally(ownerId, parentId, read) : read()))
  }

  readChanges(query: ChangesQuery): Promise<ChangesResult> {
    // One read transaction: one snapshot for the checks, the rows and the present position.
    this.changes ??= this.db.transaction((q: ChangesQuery) => this.readChangesNow(q))
    const changes = this.changes
    return this.run(() => changes(query))
  }

  private readChangesNow({ ownerId, parentId, after, limit }: ChangesQuery): ChangesResult {
    const c = (this.changeStatements ??= prepareChangeStatements(this.db))
    const owner = c.owner.get(ownerId) as
      { id: string; username: string; avatar_url: string | null; listing_generation: number } | undefined
    if (owner === undefined) return { outcome: 'parent-not-found' }
    if (parentId !== null && this.q.liveChildCount.get(parentId, ownerId) === undefined) {
      return { outcome: 'parent-not-found' }
    }
    const info = { id: owner.id, username: owner.username, avatar_url: owner.avatar_url }
    if (after === null) return changesResult([], limit, info, owner.listing_generation)
    const position = { owner: ownerId, generation: after.generation, row: after.row }
    if (c.valid.get({ owner: ownerId, generation: after.generation }) !== 1) return { outcome: 'expired' }
    const read = (c.rows.all({ ...position, parent: parentId, limit: limit + 1 }) as LogRow[]).map(
      ([id, generation, kind, folderId, name, created_at, updated_at]): LoggedChange =>
        kind === 'owner'
          ? { kind, id, generation }
          : {
              kind,
              id,
              generation,
              folderId: folderId as string,
              folder:
                name === null
                  ? null
                  : {
                      id: folderId as string,
                      name,
                      folder_id: parentId,
                      created_at: created_at as number,
                      updated_at: updated_at as number,
                    },
            },
    )
    return changesResult(read, limit, info, owner.listing_generation)
  }

  private get tree(): TreeStatements {
    const changes = (this.changeStatements ??= prepareChangeStatements(this.db))
    return (this.treeStatements ??= prepareTreeStatements(this.db, changes.valid))
  }

  readTree(query: TreeQuery): Promise<TreeResult> {
    // One read transaction: every read of the answer, the owner and the present agree.
    const read = (this.treeRead ??= this.db.transaction((q: TreeQuery) => readTreeNow(this.tree, q)))
    return this.run(() => read(query))
  }

  ownerGenerations(ownerIds: readonly string[]): Promise<Map<string, number>> {
    return this.run(() => {
      const rows = this.q.ownerGenerations.all(JSON.stringify(ownerIds)) as [id: string, generation: number][]
      return new Map(rows)
    })
  }

  /** The owners other connections' commits moved, named as they commit (commit-hints.ts). */
  changeSignals(onCommit: (ownerId: string | null) => void): ChangeSignals {
    return commitHints(this.db, () => this.closed, onCommit)
  }

  /**
   * One write transaction per call (SQLite has one writer: a small batch keeps the others'
   * wait short). The log is clustered by owner, so pruning walks the owners in id order,
   * each a range of its primary key, and the next call goes on from the owner where this one
   * stopped. Empties replaced_rows too: its notes live for one statement only.
   */
  pruneChanges(before: number, batch: number): Promise<number> {
    return this.run(() =>
      this.db
        .transaction(() => {
          this.db.prepare(CLEAR_REPLACED_ROWS).run()
          const doomed = this.db
            .prepare(PRUNABLE_CHANGES)
            .raw()
            .all(before * 1000, this.pruneFrom, batch) as [owner: string, generation: number, id: number][]
          const remove = this.db.prepare(DELETE_CHANGE)
          for (const key of doomed) remove.run(...key)
          this.pruneFrom = doomed.length < batch ? '' : (doomed.at(-1)?.[0] ?? '')
          return doomed.length
        })
        .immediate(),
    )
  }

  cursorKey(): Promise<Uint8Array> {
    return this.run(() => {
      const key = this.q.cursorKey.get() as Buffer | undefined
      if (key === undefined) throw new MissingCursorKeyError()
      return key
    })
  }

  /** Holds the connection (one write transaction) until the source is exhausted and checked. */
  importStream(source: ImportSource): Promise<ImportCounts> {
    if (this.importing !== null) return this.importing.then(() => this.importStream(source))
    const job = importIntoSqlite(this.db, source).catch((error: unknown) => Promise.reject(translate(error)))
    const settled = job.then(
      () => undefined,
      () => undefined,
    )
    this.importing = settled
    void settled.then(() => {
      if (this.importing === settled) this.importing = null
    })
    return job
  }

  importData(data: ImportData): Promise<ImportCounts> {
    return this.importStream(itemsOf(data))
  }

  findUser(idOrUsername: string): Promise<UserRecord | null> {
    return this.run(() => {
      const row = (this.db.prepare(FIND_USER).get(idOrUsername, idOrUsername, idOrUsername) ??
        null) as Row | null
      return row === null ? null : toUser(row)
    })
  }

  listUsers(): Promise<UserRecord[]> {
    return this.run(() => (this.db.prepare(LIST_USERS).all() as Row[]).map(toUser))
  }

  setUserFrozen(userId: string, frozen: boolean, now: number): Promise<boolean> {
    return this.run(() => this.db.prepare(SET_USER_FROZEN).run(frozen ? 1 : 0, now, userId).changes > 0)
  }

  deleteSession(sessionId: string): Promise<boolean> {
    return this.run(() => this.db.prepare(DELETE_SESSION).run(sessionId).changes > 0)
  }

  findFolder(folderId: string): Promise<FolderRecord | null> {
    return this.run(() => {
      const row = this.db.prepare(FIND_FOLDER).get(folderId) as Row | undefined
      return row === undefined ? null : toFolder(row)
    })
  }

  addFolder(folder: FolderRecord): Promise<void> {
    return this.run(() => {
      this.db
        .prepare(ADD_FOLDER)
        .run(
          folder.id,
          folder.name,
          folder.folder_id,
          folder.owner_id,
          folder.is_deleted ? 1 : 0,
          folder.created_at,
          folder.updated_at,
          Buffer.from(naturalKey(folder.name)),
        )
    })
  }

  markFolderDeleted(folderId: string, now: number): Promise<boolean> {
    return this.deleteFolder(folderId, now).then((deleted) => deleted !== null)
  }

  deleteFolder(folderId: string, now: number): Promise<{ hiddenFolders: number } | null> {
    return this.run(() =>
      this.db
        .transaction(() => {
          const ownerId = this.liveFolderOwner(folderId)
          if (ownerId === null) return null
          const hiddenFolders = this.db
            .prepare(COUNT_LIVE_BELOW)
            .pluck()
            .get(ownerId, folderId, ownerId) as number
          this.db.prepare(MARK_FOLDER_DELETED).run(now, folderId)
          return { hiddenFolders }
        })
        .immediate(),
    )
  }

  renameFolder(folderId: string, name: string, now: number): Promise<boolean> {
    // The new name's natural key in the same statement: the next natural read has nothing to
    // complete (folders_name_key_stale clears the key only when it is left unchanged).
    return this.run(
      () =>
        this.db.prepare(RENAME_FOLDER).run(name, now, Buffer.from(naturalKey(name)), folderId).changes > 0,
    )
  }

  moveFolder(folderId: string, parentId: string | null, now: number): Promise<MoveOutcome> {
    return this.run(() =>
      this.db
        .transaction((): MoveOutcome => {
          const ownerId = this.liveFolderOwner(folderId)
          if (ownerId === null) return 'no-folder'
          if (parentId !== null) {
            if (this.liveFolderOwner(parentId) !== ownerId) return 'no-parent'
            const inside = this.db.prepare(PARENT_INSIDE).get(parentId, folderId)
            if (inside !== undefined) return 'into-itself'
          }
          this.db.prepare(MOVE_FOLDER).run(parentId, now, folderId)
          return 'moved'
        })
        .immediate(),
    )
  }

  /** The owner of a live folder; null when there is no such live folder. */
  private liveFolderOwner(folderId: string): string | null {
    const owner = this.db.prepare(LIVE_FOLDER_OWNER).pluck().get(folderId) as string | undefined
    return owner ?? null
  }

  listLiveFolders(ownerId: string): Promise<FolderRecord[]> {
    return this.run(() => (this.db.prepare(LIST_LIVE_FOLDERS).all(ownerId) as Row[]).map(toFolder))
  }

  countUsers(): Promise<number> {
    return this.run(() => this.db.prepare(COUNT_USERS).pluck().get() as number)
  }

  ping(): Promise<void> {
    return this.run(() => void this.db.prepare(PING).get())
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true
      this.db.close()
    }
    return Promise.resolve()
  }
}

/** Opens the file (creating its directory when told to) as a store; the caller migrates it. */
export function openSqliteStore(path: string, settings: SqliteSettings): SqliteStore {
  return new SqliteStore(openSqliteDatabase(path, settings))
}

function sessionUserOf([id, username, avatar_url, frozen, generation]: SessionRow): SessionUser {
  return { id, username, avatar_url, is_suspended: frozen === 1, generation }
}
