import type Database from 'better-sqlite3'
import type { UmzugStorage } from 'umzug'
import { runPendingMigrations, type Migration } from '../run-migrations.js'

/**
 * Versioned schema of the embedded backend (CONTRACT section 7). Each migration runs once,
 * recorded in schema_migrations; the whole upgrade is one IMMEDIATE transaction, so two
 * processes starting at once cannot both apply it and a failure leaves the old schema.
 *
 * Times are INTEGER epoch milliseconds; ids are lower-case TEXT UUIDs, whose byte order
 * equals PostgreSQL's uuid order, so the `id` tie-break sorts alike on both backends.
 */
const MIGRATIONS: { name: string; sql: string }[] = [
  {
    name: '001-initial-schema',
    sql: `
      CREATE TABLE users (
        id            TEXT PRIMARY KEY NOT NULL,
        username      TEXT NOT NULL UNIQUE,
        email         TEXT,
        avatar_url    TEXT,
        password_hash TEXT,
        is_suspended  INTEGER NOT NULL DEFAULT 0 CHECK (is_suspended IN (0, 1)),
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;

      CREATE TABLE sessions (
        id         TEXT PRIMARY KEY NOT NULL,
        user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX sessions_by_user ON sessions (user_id);

      -- A parent must belong to the same owner: the composite foreign key says so.
      CREATE TABLE folders (
        id         TEXT PRIMARY KEY NOT NULL,
        name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255 AND name = trim(name)),
        folder_id  TEXT,
        owner_id   TEXT NOT NULL REFERENCES users (id),
        is_deleted INTEGER NOT NULL DEFAULT 0 CHECK (is_deleted IN (0, 1)),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (id, owner_id),
        FOREIGN KEY (folder_id, owner_id) REFERENCES folders (id, owner_id)
      ) STRICT, WITHOUT ROWID;

      -- Serves the listing page and its count from the index alone (it covers every
      -- returned column) and only ever touches the one owner's live children of one parent.
      CREATE INDEX folders_listing
        ON folders (owner_id, folder_id, name, created_at, id, updated_at)
        WHERE is_deleted = 0;

      CREATE TABLE files (
        id         TEXT PRIMARY KEY NOT NULL,
        name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255 AND name = trim(name)),
        folder_id  TEXT,
        owner_id   TEXT NOT NULL REFERENCES users (id),
        size       INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
        is_deleted INTEGER NOT NULL DEFAULT 0 CHECK (is_deleted IN (0, 1)),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        FOREIGN KEY (folder_id, owner_id) REFERENCES folders (id, owner_id)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX files_by_folder ON files (owner_id, folder_id);
    `,
  },
  {
    // Exact live-child counts kept by triggers, so a listing's `total` is one row read
    // instead of a scan of every child (30 ms for 100,000 children). Triggers run inside the
    // writing transaction, so the counts are right whoever writes and however concurrently.
    name: '002-maintained-child-counts',
    sql: `
      ALTER TABLE folders ADD COLUMN child_count INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE users ADD COLUMN root_folder_count INTEGER NOT NULL DEFAULT 0;

      UPDATE folders SET child_count = (
        SELECT count(*) FROM folders AS c
         WHERE c.owner_id = folders.owner_id AND c.folder_id = folders.id AND c.is_deleted = 0);
      UPDATE users SET root_folder_count = (
        SELECT count(*) FROM folders AS f
         WHERE f.owner_id = users.id AND f.folder_id IS NULL AND f.is_deleted = 0);

      CREATE TRIGGER folders_count_insert AFTER INSERT ON folders WHEN NEW.is_deleted = 0
      BEGIN
        UPDATE folders SET child_count = child_count + 1 WHERE id = NEW.folder_id;
        UPDATE users SET root_folder_count = root_folder_count + 1
         WHERE NEW.folder_id IS NULL AND id = NEW.owner_id;
      END;

      CREATE TRIGGER folders_count_delete AFTER DELETE ON folders WHEN OLD.is_deleted = 0
      BEGIN
        UPDATE folders SET child_count = child_count - 1 WHERE id = OLD.folder_id;
        UPDATE users SET root_folder_count = root_folder_count - 1
         WHERE OLD.folder_id IS NULL AND id = OLD.owner_id;
      END;

      -- A move or a (un)deletion takes the old contribution away and adds the new one.
      CREATE TRIGGER folders_count_update AFTER UPDATE OF is_deleted, folder_id, owner_id ON folders
      BEGIN
        UPDATE folders SET child_count = child_count - 1 WHERE OLD.is_deleted = 0 AND id = OLD.folder_id;
        UPDATE users SET root_folder_count = root_folder_count - 1
         WHERE OLD.is_deleted = 0 AND OLD.folder_id IS NULL AND id = OLD.owner_id;
        UPDATE folders SET child_count = child_count + 1 WHERE NEW.is_deleted = 0 AND id = NEW.folder_id;
        UPDATE users SET root_folder_count = root_folder_count + 1
         WHERE NEW.is_deleted = 0 AND NEW.folder_id IS NULL AND id = NEW.owner_id;
      END;
    `,
  },
]

/** schema_migrations as umzug's storage; reads as empty until the first upgrade creates it. */
function migrationStorage(db: Database.Database): UmzugStorage {
  const exists = () =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !==
    undefined
  return {
    executed: () =>
      Promise.resolve(
        exists()
          ? (db.prepare('SELECT name FROM schema_migrations ORDER BY name').pluck().all() as string[])
          : [],
      ),
    logMigration: ({ name }) => {
      db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL) STRICT`)
      db.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)').run(name, Date.now())
      return Promise.resolve()
    },
    unlogMigration: ({ name }) => {
      db.prepare('DELETE FROM schema_migrations WHERE name = ?').run(name)
      return Promise.resolve()
    },
  }
}

/**
 * Brings the schema up to date. An up-to-date database is only read, so starting a server
 * or a command never waits for a writer (a long import, say); an upgrade takes the write
 * lock and checks again inside it, in case another process upgraded meanwhile.
 */
export async function migrateSqlite(db: Database.Database): Promise<void> {
  const migrations: Migration[] = MIGRATIONS.map(({ name, sql }) => ({
    name,
    up: () => Promise.resolve(void db.exec(sql)),
  }))
  const storage = migrationStorage(db)
  const applied = new Set(await storage.executed({ context: undefined }))
  if (migrations.every(({ name }) => applied.has(name))) return
  db.exec('BEGIN IMMEDIATE')
  try {
    await runPendingMigrations(migrations, storage)
    db.exec('COMMIT')
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK')
    throw error
  }
}
