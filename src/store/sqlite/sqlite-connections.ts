import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { ensureDirectory } from './ensure-directory.js'
import { StoreUnavailableError } from '../store.js'

/**
 * The one connection of the SQLite adapter, opened with the settings every statement of
 * sqlite-store.ts relies on: the counterpart of postgres-connections.ts.
 */

export interface SqliteSettings {
  /** how long a statement waits for another process's write lock before SQLITE_BUSY */
  busyTimeoutMs: number
  /** create the file's directory (and its missing ancestors) when it does not exist */
  createDirectory?: boolean | undefined
}

export function openSqliteDatabase(
  path: string,
  { busyTimeoutMs, createDirectory = false }: SqliteSettings,
): Database.Database {
  try {
    if (createDirectory && path !== ':memory:') ensureDirectory(dirname(path))
    const db = new Database(path, { timeout: busyTimeoutMs })
    // WAL: readers never block the writer; NORMAL sync is durable across process crashes in WAL.
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    db.pragma('foreign_keys = ON')
    // 64 MiB page cache (default 2 MiB): large folders and bulk imports of random-UUID keys
    // otherwise thrash it. An upper bound, not an allocation.
    db.pragma('cache_size = -65536')
    return db
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw new StoreUnavailableError(`cannot open SQLite database ${path}: ${reason}`, { cause: error })
  }
}
