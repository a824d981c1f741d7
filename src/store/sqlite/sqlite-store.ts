import type Database from 'better-sqlite3'
import {
  MissingCursorKeyError,
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
  type SessionUser,
  type Store,
  type TreeLogQuery,
  type TreeLogResult,
  type TreePageQuery,
  type TreePageResult,
  type UserRecord,
} from '../store.js'
import { migrateSqlite } from './sqlite-migrations.js'
import { translate } from './sqlite-errors.js'
import { pageWindow } from '../page-window.js'
import { itemsOf } from '../import-faults.js'
import { importIntoSqlite } from './sqlite-import.js'
import { openSqliteDatabase, type SqliteSettings } from './sqlite-connections.js'
import { changesResult, type LoggedChange } from '../change-rows.js'
import { prepareTreeStatements, readTreeLogNow, readTreePageNow, type TreeStatements } from './sqlite-tree.js'

type Row = Record<string, unknown>

const FOLDER_COLUMNS = 'id, name, folder_id, created_at, updated_at'
const PAGE_COLUMNS = 'id, name, created_at, updated_at'
type PageRow = [id: string, name: string, created_at: number, updated_at: number]
type SessionRow = [
  id: string,
  username: string,
  avatar_url: string | null,
  suspended: number,
  generation: number,
]
const ORDER = 'ORDER BY name, created_at, id'
const ORDER_DESC = 'ORDER BY name DESC, created_at DESC, id DESC'
const USER_COLUMNS = 'id, username, email, avatar_url, password_hash, is_suspended, created_at, updated_at'

function toUser(row: Row): UserRecord {
  return { ...(row as unknown as UserRecord), is_suspended: row.is_suspended === 1 }
}

function toFolder(row: Row): FolderRecord {
  return { ...(row as unknown as FolderRecord), is_deleted: row.is_deleted === 1 }
}

/**
 * The statements of readChanges. `rows` walks the owner's log after the position in its
 * primary key order, keeping the parent's 'folder' rows and the owner's 'owner' rows, with
 * each folder's state when it is now a live child of that parent.
 * $owner, $parent (null: the root), $generation, $row, $limit.
 */
interface ChangeStatements {
  owner: Database.Statement
  valid: Database.Statement
  rows: Database.Statement
}

type LogRow = [
  id: number,
  generation: number,
  kind: 'folder' | 'owner',
  folderId: string | null,
  name: string | null,
  createdAt: number | null,
  updatedAt: number | null,
]

function prepareChangeStatements(db: Database.Database): ChangeStatements {
  return {
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
    rows: db
      .prepare(
        `SELECT c.id, c.generation, c.kind, c.folder_id, f.name, f.created_at, f.updated_at
           FROM folder_changes AS c
           LEFT JOIN folders AS f
             ON f.id = c.folder_id AND f.owner_id = $owner AND f.folder_id IS $parent AND f.is_deleted = 0
          WHERE c.owner_id = $owner AND (c.generation, c.id) > ($generation, $row)
            AND (c.kind = 'owner' OR (c.kind = 'folder' AND c.parent_id IS $parent))
          ORDER BY c.generation, c.id LIMIT $limit`,
      )
      .raw(),
  }
}

/** Statement compilation costs more than the listing queries themselves: compile once. */
interface HotStatements {
  sessionUser: Database.Statement
  liveChildCount: Database.Statement
  rootFolderCount: Database.Statement
  childPages: PageStatements
  rootPages: PageStatements
  cursorKey: Database.Statement
}

/**
 * A page read forwards, or backwards from the end (see store/page-window.ts); or, for a
 * continuation token, the rows after or before a key, found by seeking the index.
 */
interface PageStatements {
  forward: Database.Statement
  fromEnd: Database.Statement
  after: Database.Statement
  before: Database.Statement
  checkpoints: Database.Statement
}

// Raw rows without folder_id (the same on every row of a page): a third cheaper than
// letting the driver build an object per row.
function pageStatements(db: Database.Database, from: string): PageStatements {
  return {
    forward: db.prepare(`SELECT ${PAGE_COLUMNS} ${from} ${ORDER} LIMIT ? OFFSET ?`).raw(),
    fromEnd: db.prepare(`SELECT ${PAGE_COLUMNS} ${from} ${ORDER_DESC} LIMIT ? OFFSET ?`).raw(),
    // A row value comparison: SQLite turns it into a range on folders_listing.
    after: db
      .prepare(
        `SELECT ${PAGE_COLUMNS} ${from} AND (name, created_at, id) > (?, ?, ?) ${ORDER} LIMIT ? OFFSET ?`,
      )
      .raw(),
    before: db
      .prepare(
        `SELECT ${PAGE_COLUMNS} ${from} AND (name, created_at, id) < (?, ?, ?) ${ORDER_DESC} LIMIT ? OFFSET ?`,
      )
      .raw(),
    // Numbers the rows in index order and keeps every n-th: one pass over the index entries.
    checkpoints: db
      .prepare(
        `SELECT name, created_at, id FROM (
           SELECT name, created_at, id, row_number() OVER (${ORDER}) AS position ${from}
         ) WHERE position % ? = 0 ORDER BY position`,
      )
      .raw(),
  }
}

function prepareHotStatements(db: Database.Database): HotStatements {
  const children = 'FROM folders WHERE owner_id = ? AND folder_id = ? AND is_deleted = 0'
  const root = 'FROM folders WHERE owner_id = ? AND folder_id IS NULL AND is_deleted = 0'
  return {
    sessionUser: db
      .prepare(
        `SELECT u.id, u.username, u.avatar_url, u.is_suspended, u.listing_generation
         FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
      )
      .raw(),
    // One lookup answers both "is the parent a live folder of this owner?" and `total`.
    liveChildCount: db
      .prepare('SELECT child_count FROM folders WHERE id = ? AND owner_id = ? AND is_deleted = 0')
      .pluck(),
    rootFolderCount: db.prepare('SELECT root_folder_count FROM users WHERE id = ?').pluck(),
    childPages: pageStatements(db, children),
    rootPages: pageStatements(db, root),
    cursorKey: db.prepare("SELECT value FROM service_keys WHERE name = 'cursor'").pluck(),
  }
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
  private treePage: ((query: TreePageQuery) => TreePageResult) | undefined
  private treeLog: ((query: TreeLogQuery) => TreeLogResult) | undefined
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

  migrate(): Promise<void> {
    return migrateSqlite(this.db).catch((error: unknown) => Promise.reject(translate(error)))
  }

  findSessionUser(sessionId: string, now: number): Promise<SessionUser | null> {
    return this.run(() => {
      const row = this.q.sessionUser.get(sessionId, now) as SessionRow | undefined
      if (row === undefined) return null
      const [id, username, avatar_url, suspended, generation] = row
      return { id, username, avatar_url, is_suspended: suspended === 1, generation }
    })
  }

  listFolders(query: ListFoldersQuery): Promise<FolderPage | null> {
    // One read transaction, so the count and the page see the same snapshot; the wrapper
    // is made once, not per request.
    this.listing ??= this.db.transaction((q: ListFoldersQuery) => this.readListing(q))
    const listing = this.listing
    return this.run(() => listing(query))
  }

  private readListing({ ownerId, parentId, page, limit, seek }: ListFoldersQuery): FolderPage | null {
    const q = this.q
    const total = (
      parentId === null ? (q.rootFolderCount.get(ownerId) ?? 0) : q.liveChildCount.get(parentId, ownerId)
    ) as number | undefined
    if (total === undefined) return null
    const pages = parentId === null ? q.rootPages : q.childPages
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
      const { name, created_at, id } = seek.key
      // One row more than the page tells whether another page lies beyond it.
      const rows = pages[seek.direction].all(
        ...args,
        name,
        created_at,
        id,
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

  listingCheckpoints({ ownerId, parentId, every }: CheckpointsQuery): Promise<FolderKey[] | null> {
    return this.run(() => {
      const q = this.q
      if (parentId !== null && q.liveChildCount.get(parentId, ownerId) === undefined) return null
      const [pages, args] = parentId === null ? [q.rootPages, [ownerId]] : [q.childPages, [ownerId, parentId]]
      const rows = pages.checkpoints.all(...args, every) as [name: string, created_at: number, id: string][]
      return rows.map(([name, created_at, id]) => ({ name, created_at, id }))
    })
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

  readTreePage(query: TreePageQuery): Promise<TreePageResult> {
    // One read transaction: the page, the owner and the present position agree.
    const read = (this.treePage ??= this.db.transaction((q: TreePageQuery) => readTreePageNow(this.tree, q)))
    return this.run(() => read(query))
  }

  readTreeLog(query: TreeLogQuery): Promise<TreeLogResult> {
    const read = (this.treeLog ??= this.db.transaction((q: TreeLogQuery) => readTreeLogNow(this.tree, q)))
    return this.run(() => read(query))
  }

  ownerGenerations(ownerIds: readonly string[]): Promise<Map<string, number>> {
    return this.run(() => {
      const rows = this.db
        .prepare('SELECT id, listing_generation FROM users WHERE id IN (SELECT value FROM json_each(?))')
        .raw()
        .all(JSON.stringify(ownerIds)) as [id: string, generation: number][]
      return new Map(rows)
    })
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
          this.db.prepare('DELETE FROM replaced_rows').run()
          const doomed = this.db
            .prepare(
              `SELECT c.owner_id, c.generation, c.id FROM users AS u
                 JOIN folder_changes AS c ON c.owner_id = u.id AND c.generation < min(?, u.listing_generation)
                WHERE u.id >= ? ORDER BY u.id, c.generation, c.id LIMIT ?`,
            )
            .raw()
            .all(before * 1000, this.pruneFrom, batch) as [owner: string, generation: number, id: number][]
          const remove = this.db.prepare(
            'DELETE FROM folder_changes WHERE owner_id = ? AND generation = ? AND id = ?',
          )
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
      const row = (this.db
        .prepare(
          `SELECT ${USER_COLUMNS} FROM users WHERE id = lower(?) OR username = ? ORDER BY id = lower(?) DESC LIMIT 1`,
        )
        .get(idOrUsername, idOrUsername, idOrUsername) ?? null) as Row | null
      return row === null ? null : toUser(row)
    })
  }

  listUsers(): Promise<UserRecord[]> {
    return this.run(() =>
      (this.db.prepare(`SELECT ${USER_COLUMNS} FROM users ORDER BY username`).all() as Row[]).map(toUser),
    )
  }

  setUserSuspended(userId: string, suspended: boolean, now: number): Promise<boolean> {
    return this.run(
      () =>
        this.db
          .prepare('UPDATE users SET is_suspended = ?, updated_at = ? WHERE id = ?')
          .run(suspended ? 1 : 0, now, userId).changes > 0,
    )
  }

  deleteSession(sessionId: string): Promise<boolean> {
    return this.run(() => this.db.prepare('DELETE FROM sessions WHERE id = ?').run(sessionId).changes > 0)
  }

  findFolder(folderId: string): Promise<FolderRecord | null> {
    return this.run(() => {
      const row = this.db
        .prepare(`SELECT ${FOLDER_COLUMNS}, owner_id, is_deleted FROM folders WHERE id = ?`)
        .get(folderId) as Row | undefined
      return row === undefined ? null : toFolder(row)
    })
  }

  addFolder(folder: FolderRecord): Promise<void> {
    return this.run(() => {
      this.db
        .prepare(
          `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          folder.id,
          folder.name,
          folder.folder_id,
          folder.owner_id,
          folder.is_deleted ? 1 : 0,
          folder.created_at,
          folder.updated_at,
        )
    })
  }

  markFolderDeleted(folderId: string, now: number): Promise<boolean> {
    return this.run(
      () =>
        this.db
          .prepare('UPDATE folders SET is_deleted = 1, updated_at = ? WHERE id = ? AND is_deleted = 0')
          .run(now, folderId).changes > 0,
    )
  }

  listLiveFolders(ownerId: string): Promise<FolderRecord[]> {
    return this.run(() =>
      (
        this.db
          .prepare(
            `SELECT ${FOLDER_COLUMNS}, owner_id, is_deleted FROM folders
              WHERE owner_id = ? AND is_deleted = 0 ${ORDER}`,
          )
          .all(ownerId) as Row[]
      ).map(toFolder),
    )
  }

  countUsers(): Promise<number> {
    return this.run(() => this.db.prepare('SELECT count(*) FROM users').pluck().get() as number)
  }

  ping(): Promise<void> {
    return this.run(() => void this.db.prepare('SELECT 1').get())
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true
      this.db.close()
    }
    return Promise.resolve()
  }
}

/** Opens the file (creating its directory) as a store; the caller migrates it. */
export function openSqliteStore(path: string, settings: SqliteSettings): SqliteStore {
  return new SqliteStore(openSqliteDatabase(path, settings))
}
