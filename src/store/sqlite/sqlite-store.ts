import type Database from 'better-sqlite3'
import {
  ImportError,
  StoreUnavailableError,
  type FolderPage,
  type FolderRecord,
  type FolderRow,
  type ImportCounts,
  type ImportData,
  type ImportEntry,
  type ListFoldersQuery,
  type SessionUser,
  type Store,
  type UserRecord,
} from '../store.js'
import { migrateSqlite } from './sqlite-migrations.js'
import { pageWindow } from '../page-window.js'
import { importFaults } from '../import-faults.js'

type Row = Record<string, unknown>

const FOLDER_COLUMNS = 'id, name, folder_id, created_at, updated_at'
const PAGE_COLUMNS = 'id, name, created_at, updated_at'
type PageRow = [id: string, name: string, created_at: number, updated_at: number]
const ORDER = 'ORDER BY name, created_at, id'
const ORDER_DESC = 'ORDER BY name DESC, created_at DESC, id DESC'
const USER_COLUMNS = 'id, username, email, avatar_url, password_hash, is_suspended, created_at, updated_at'

/** SQLite result codes that mean "the database is not usable right now", not a bad query. */
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|NOTADB|CORRUPT|READONLY)/

function isSqliteError(error: unknown): error is Error & { code: string } {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string'
}

/** Driver errors become typed errors at the adapter boundary (DESIGN habit 6). */
function translate(error: unknown): Error {
  if (isSqliteError(error) && UNAVAILABLE_CODES.test(error.code)) {
    return new StoreUnavailableError(`SQLite: ${error.message}`, { cause: error })
  }
  return error instanceof Error ? error : new Error(String(error))
}

function toUser(row: Row): UserRecord {
  return { ...(row as unknown as UserRecord), is_suspended: row.is_suspended === 1 }
}

function toFolder(row: Row): FolderRecord {
  return { ...(row as unknown as FolderRecord), is_deleted: row.is_deleted === 1 }
}

/** Statement compilation costs more than the listing queries themselves: compile once. */
interface HotStatements {
  sessionUser: Database.Statement
  liveChildCount: Database.Statement
  rootFolderCount: Database.Statement
  childPages: PageStatements
  rootPages: PageStatements
  dataVersion: Database.Statement
}

/** A page read forwards, or backwards from the end (see store/page-window.ts). */
interface PageStatements {
  forward: Database.Statement
  fromEnd: Database.Statement
}

// Raw rows without folder_id (the same on every row of a page): a third cheaper than
// letting the driver build an object per row.
function pageStatements(db: Database.Database, from: string): PageStatements {
  return {
    forward: db.prepare(`SELECT ${PAGE_COLUMNS} ${from} ${ORDER} LIMIT ? OFFSET ?`).raw(),
    fromEnd: db.prepare(`SELECT ${PAGE_COLUMNS} ${from} ${ORDER_DESC} LIMIT ? OFFSET ?`).raw(),
  }
}

function prepareHotStatements(db: Database.Database): HotStatements {
  const children = 'FROM folders WHERE owner_id = ? AND folder_id = ? AND is_deleted = 0'
  const root = 'FROM folders WHERE owner_id = ? AND folder_id IS NULL AND is_deleted = 0'
  return {
    sessionUser: db.prepare(
      `SELECT u.id, u.username, u.avatar_url, u.is_suspended
         FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
    ),
    // One lookup answers both "is the parent a live folder of this owner?" and `total`.
    liveChildCount: db
      .prepare('SELECT child_count FROM folders WHERE id = ? AND owner_id = ? AND is_deleted = 0')
      .pluck(),
    rootFolderCount: db.prepare('SELECT root_folder_count FROM users WHERE id = ?').pluck(),
    // data_version moves when another connection commits; total_changes() when this one does.
    dataVersion: db.prepare('SELECT (SELECT data_version FROM pragma_data_version()), total_changes()').raw(),
    childPages: pageStatements(db, children),
    rootPages: pageStatements(db, root),
  }
}

/** Inserts each entry; a constraint violation becomes an ImportError naming the entry. */
function insertEach<T>(
  entries: ImportEntry<T>[],
  insert: (row: T) => unknown,
  explain: (row: T, code: string) => string,
): void {
  for (const { at, row } of entries) {
    try {
      insert(row)
    } catch (error) {
      if (isSqliteError(error) && error.code.startsWith('SQLITE_CONSTRAINT')) {
        throw new ImportError(at, explain(row, error.code))
      }
      throw error
    }
  }
}

const INSERT_COUNT_TRIGGER = 'folders_count_insert'

/**
 * Runs a bulk folder insert with the per-row count trigger lifted, then adds what the new
 * live folders contribute to their parents' and owners' counts in one update per parent.
 * Must run inside the import's write transaction: DDL is transactional in SQLite, so other
 * connections never see the trigger missing, and a failed import restores it by rollback.
 */
function withCountsAppliedInBulk(
  db: Database.Database,
  folders: ImportEntry<FolderRecord>[],
  insert: () => void,
) {
  const triggerSql = db
    .prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?")
    .pluck()
    .get(INSERT_COUNT_TRIGGER) as string
  db.exec(`DROP TRIGGER ${INSERT_COUNT_TRIGGER}`)
  insert()
  const children = new Map<string, number>()
  const roots = new Map<string, number>()
  for (const { row } of folders) {
    if (row.is_deleted) continue
    const [counts, key] = row.folder_id === null ? [roots, row.owner_id] : [children, row.folder_id]
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  const addChildren = db.prepare('UPDATE folders SET child_count = child_count + ? WHERE id = ?')
  for (const [id, n] of children) addChildren.run(n, id)
  const addRoots = db.prepare('UPDATE users SET root_folder_count = root_folder_count + ? WHERE id = ?')
  for (const [id, n] of roots) addRoots.run(n, id)
  db.exec(triggerSql)
}

/** The embedded backend: better-sqlite3 on one file in WAL mode (see openStore). */
export class SqliteStore implements Store {
  readonly kind = 'sqlite'
  private readonly db: Database.Database
  private closed = false

  private hot: HotStatements | undefined
  private listing: ((query: ListFoldersQuery) => FolderPage | null) | undefined

  constructor(db: Database.Database) {
    this.db = db
  }

  /** Prepared on first use (after migrate: the tables must exist), then reused. */
  private get q(): HotStatements {
    return (this.hot ??= prepareHotStatements(this.db))
  }

  /** Runs a synchronous database call, translating driver errors. */
  private run<T>(work: () => T): Promise<T> {
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
      const row = this.q.sessionUser.get(sessionId, now) as Row | undefined
      if (row === undefined) return null
      return {
        id: row.id as string,
        username: row.username as string,
        avatar_url: row.avatar_url as string | null,
        is_suspended: row.is_suspended === 1,
      }
    })
  }

  listFolders(query: ListFoldersQuery): Promise<FolderPage | null> {
    // One read transaction, so the count and the page see the same snapshot; the wrapper
    // is made once, not per request.
    this.listing ??= this.db.transaction((q: ListFoldersQuery) => this.readListing(q))
    const listing = this.listing
    return this.run(() => listing(query))
  }

  private readListing({ ownerId, parentId, page, limit }: ListFoldersQuery): FolderPage | null {
    const q = this.q
    const total = (
      parentId === null ? (q.rootFolderCount.get(ownerId) ?? 0) : q.liveChildCount.get(parentId, ownerId)
    ) as number | undefined
    if (total === undefined) return null
    const window = pageWindow(total, page, limit)
    if (window === null) return { folders: [], total }
    const pages = parentId === null ? q.rootPages : q.childPages
    const args = parentId === null ? [ownerId] : [ownerId, parentId]
    const rows = (window.fromEnd ? pages.fromEnd : pages.forward).all(
      ...args,
      window.limit,
      window.offset,
    ) as PageRow[]
    if (window.fromEnd) rows.reverse()
    const folders = rows.map(([id, name, created_at, updated_at]): FolderRow => ({
      id,
      name,
      folder_id: parentId,
      created_at,
      updated_at,
    }))
    return { folders, total }
  }

  importData(data: ImportData): Promise<ImportCounts> {
    return this.run(() => this.db.transaction(() => this.insertAll(data)).immediate())
  }

  private insertAll(data: ImportData): ImportCounts {
    const db = this.db
    const insertUser = db.prepare(`INSERT INTO users (${USER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
    const insertSession = db.prepare(
      'INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)',
    )
    const insertFolder = db.prepare(
      'INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    )
    const insertFile = db.prepare(
      `INSERT INTO files (id, name, folder_id, owner_id, size, is_deleted, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    const userExists = db.prepare('SELECT 1 FROM users WHERE id = ?').pluck()
    const { idTaken } = importFaults
    const owned = (row: { owner_id: string; folder_id: string | null }, code: string, id: string): string => {
      if (code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE') return idTaken(id)
      if (userExists.get(row.owner_id) === undefined) return importFaults.unknownOwner(row.owner_id)
      if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY' && row.folder_id !== null) {
        return importFaults.badParent(row.folder_id)
      }
      return 'violates a rule of the data model'
    }

    insertEach(
      data.users,
      (u) =>
        insertUser.run(
          u.id,
          u.username,
          u.email,
          u.avatar_url,
          u.password_hash,
          u.is_suspended ? 1 : 0,
          u.created_at,
          u.updated_at,
        ),
      (u, code) =>
        code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ? idTaken(u.id) : importFaults.usernameTaken(u.username),
    )
    insertEach(
      data.sessions,
      (s) => insertSession.run(s.id, s.user_id, s.created_at, s.expires_at),
      (s, code) =>
        code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ? idTaken(s.id) : importFaults.unknownUser(s.user_id),
    )
    withCountsAppliedInBulk(db, data.folders, () =>
      insertEach(
        data.folders,
        (f) =>
          insertFolder.run(
            f.id,
            f.name,
            f.folder_id,
            f.owner_id,
            f.is_deleted ? 1 : 0,
            f.created_at,
            f.updated_at,
          ),
        (f, code) => owned(f, code, f.id),
      ),
    )
    insertEach(
      data.files,
      (f) =>
        insertFile.run(
          f.id,
          f.name,
          f.folder_id,
          f.owner_id,
          f.size,
          f.is_deleted ? 1 : 0,
          f.created_at,
          f.updated_at,
        ),
      (f, code) => owned(f, code, f.id),
    )
    return {
      users: data.users.length,
      sessions: data.sessions.length,
      folders: data.folders.length,
      files: data.files.length,
    }
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

  dataVersion(): string | undefined {
    try {
      const [other, own] = this.q.dataVersion.get() as [number, number]
      return `${other}:${own}`
    } catch {
      // Unknown is always safe: the caller then reads the database.
      return undefined
    }
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
