import type Database from 'better-sqlite3'
import type { UmzugStorage } from 'umzug'
import { refusal, runPendingMigrations, type Migration, type SqlMigration } from '../run-migrations.js'

/**
 * Versioned schema of the embedded backend (docs/api.md, "Data model"). Each migration runs once,
 * recorded in schema_migrations; the whole upgrade is one IMMEDIATE transaction, so two
 * processes starting at once cannot both apply it and a failure leaves the old schema.
 *
 * Times are INTEGER epoch milliseconds; ids are lower-case TEXT UUIDs, whose byte order
 * equals PostgreSQL's uuid order, so the `id` tie-break sorts alike on both backends.
 */
/** A users row breaking the bounds of username and avatar_url (migration 005), as SQL over `row`. */
const userOutOfBounds = (row: string) =>
  `(length(${row}.username) NOT BETWEEN 1 AND 255 OR instr(${row}.username, char(0)) > 0
    OR ${row}.username GLOB '*[' || char(1) || '-' || char(31) || char(127) || ']*'
    OR length(${row}.avatar_url) > 2048)`

const USER_BOUNDS_RULE =
  'a username must be 1 to 255 characters without control characters, an avatar_url at most 2,048 characters'

/**
 * Now in microseconds since the epoch, in what every writer's SQLite has: julianday() (the
 * command line of Debian 12 and Ubuntu 22.04 lacks unixepoch('subsec'), 3.42, and returns
 * NULL for it). SQLite's clock counts milliseconds: rounding to the millisecond removes the
 * floating-point error of the Julian day (about 40 microseconds today), so the value is the
 * clock's own.
 */
const NOW_MICROS = "CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000"

/**
 * The clock migration 006 ran with (SQLite 3.42 and later only): frozen there, since
 * databases ran it; 008 made the triggers again with NOW_MICROS.
 */
const NOW_MICROS_006 = "CAST(unixepoch('subsec') * 1000000 AS INTEGER)"

/**
 * An owner's next listing generation (migration 006): above the previous one and at least
 * the clock, so a value never repeats for an owner, not even after a restored backup.
 */
const nextGeneration = (now: string) => `max(listing_generation + 1, ${now})`
export const NEXT_GENERATION = nextGeneration(NOW_MICROS)

/**
 * The first generation of a user inserted (or imported): also above the last one of a
 * deleted user with the same id, which SQLite's millisecond clock alone would not ensure
 * for a user deleted and made again within one millisecond.
 */
const firstGeneration = (now: string) => `max(${nextGeneration(now)},
  coalesce((SELECT generation + 1 FROM retired_generations WHERE owner_id = users.id), 0))`
export const FIRST_GENERATION = firstGeneration(NOW_MICROS)

/**
 * The messages of writes refused because SQLite would delete a row without firing its
 * triggers, so counts, generations and the change log would miss it.
 */
const replaceRefused = (table: string) =>
  `${table}: INSERT OR REPLACE of an existing row is refused (it deletes the old row without ` +
  `firing triggers); use INSERT ... ON CONFLICT (id) DO UPDATE`
const updateOntoRefused = (table: string, what: string) =>
  `${table}: an update onto the ${what} of another row is refused (UPDATE OR REPLACE deletes ` +
  `that row without firing triggers)`

/**
 * Log row of `folder` (OLD or NEW) under its owner and parent, at the owner's generation.
 * Its id is its place in that generation: every trigger run bumps the generation of each
 * owner it logs for, so a generation holds one row, or two for a move (the old place 0,
 * the new place 1).
 */
const logFolder = (row: 'OLD' | 'NEW', extra = '') => `
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, ${row === 'OLD' ? 0 : 1}, 'folder', ${row}.folder_id, ${row}.id
      FROM users WHERE id = ${row}.owner_id ${extra};`

/** The 'owner' (or 'reset') row of the users matching `where`, at their generation. */
export const logOwners = (kind: 'owner' | 'reset', where: string) => `
  INSERT INTO folder_changes (owner_id, generation, id, kind)
    SELECT id, listing_generation, 0, '${kind}' FROM users WHERE ${where};`

/** An update changed a column a listing shows, or that decides whether and where a folder is listed. */
const FOLDER_CHANGED = ['id', 'name', 'folder_id', 'owner_id', 'is_deleted', 'created_at', 'updated_at']
  .map((column) => `OLD.${column} IS NOT NEW.${column}`)
  .join(' OR ')

/** The folder's new place is a place it was not in before (the log row of place 1, migration 006). */
const NEW_PLACE =
  'OLD.owner_id IS NOT NEW.owner_id OR OLD.folder_id IS NOT NEW.folder_id OR OLD.id IS NOT NEW.id'

/**
 * Migration 010: the update trigger of migration 006, which also logs the new place (row 1)
 * when a folder is undeleted, so that the log tells an undelete (the folder and its subtree
 * came back into every tree that holds its parent) from a rename (the folder alone changed):
 * both log the old place (row 0) at the same parent.
 */
export function treeUpdateTrigger(): string {
  return `
    CREATE TRIGGER folders_changes_update
      AFTER UPDATE OF id, name, folder_id, owner_id, is_deleted, created_at, updated_at ON folders
      WHEN ${FOLDER_CHANGED}
    BEGIN
      UPDATE users SET listing_generation = ${NEXT_GENERATION}
       WHERE id IN (OLD.owner_id, NEW.owner_id);
      ${logFolder('OLD')}
      ${logFolder('NEW', `AND (${NEW_PLACE} OR (OLD.is_deleted = 1 AND NEW.is_deleted = 0))`)}
    END;
  `
}

/**
 * The triggers that bump listing generations and write the change log (migrations 006 and
 * 008). `log` false leaves the log out: the bench measures what the log costs a writer with
 * it. `now` is the clock expression (006's own stays frozen). One trigger per event, so the
 * bump always precedes the log row that reads it.
 */
export function changeTriggers({ log, now = NOW_MICROS }: { log: boolean; now?: string }): string {
  const bump = (ids: string, generation = nextGeneration(now)) =>
    `UPDATE users SET listing_generation = ${generation} WHERE id IN (${ids});`
  const when = (sql: string) => (log ? sql : '')
  const changed = FOLDER_CHANGED
  return `
    CREATE TRIGGER folders_changes_insert AFTER INSERT ON folders
    BEGIN
      SELECT RAISE(ABORT, '${replaceRefused('folders')}')
       WHERE EXISTS (SELECT 1 FROM replaced_rows WHERE tbl = 'folders' AND id = NEW.id);
      ${bump('NEW.owner_id')}
      ${when(logFolder('NEW'))}
    END;

    CREATE TRIGGER folders_changes_delete AFTER DELETE ON folders
    BEGIN
      ${bump('OLD.owner_id')}
      ${when(logFolder('OLD'))}
    END;

    -- Every column a listing shows, or that decides whether and where a folder is listed;
    -- a row for the old place and, when the folder moved (or changed id), one for the new.
    CREATE TRIGGER folders_changes_update
      AFTER UPDATE OF id, name, folder_id, owner_id, is_deleted, created_at, updated_at ON folders
      WHEN ${changed}
    BEGIN
      ${bump('OLD.owner_id, NEW.owner_id')}
      ${when(logFolder('OLD'))}
      ${when(logFolder('NEW', `AND (${NEW_PLACE})`))}
    END;

    CREATE TRIGGER users_changes_insert AFTER INSERT ON users
    BEGIN
      SELECT RAISE(ABORT, '${replaceRefused('users')}')
       WHERE EXISTS (SELECT 1 FROM replaced_rows WHERE tbl = 'users' AND id = NEW.id);
      ${bump('NEW.id', firstGeneration(now))}
      ${when(logOwners('owner', 'id = NEW.id'))}
    END;

    CREATE TRIGGER users_changes_update AFTER UPDATE OF id, username, avatar_url ON users
      WHEN OLD.id IS NOT NEW.id OR OLD.username IS NOT NEW.username OR OLD.avatar_url IS NOT NEW.avatar_url
    BEGIN
      ${bump('NEW.id')}
      ${when(logOwners('owner', 'id = NEW.id'))}
    END;
  `
}

/**
 * A folders row whose name is not UTF-8 text (migration 007), as SQL over `row`: a NUL, or
 * a character that does not survive decoding and encoding again. The STRICT table refuses
 * a BLOB, but stores whatever bytes a writer binds or casts as TEXT; the service would read such a name with U+FFFD in place of
 * the bytes, so it could not seal the name into a continuation token and find the folder
 * again, and a walk would list it on every page. There is no UTF-8 check in SQLite and no
 * loop in a trigger: folder_name_positions numbers the characters (SQLite counts a lead
 * byte and the continuation bytes after it as one), and each must equal char(unicode(c)),
 * which holds for valid UTF-8 only (unicode() gives U+FFFD for U+FFFE and U+FFFF, valid
 * characters the comparison lets through by name).
 */
const folderNameNotUtf8 = (row: string) =>
  `(instr(CAST(${row}.name AS BLOB), x'00') > 0 OR EXISTS (
     SELECT 1 FROM folder_name_positions p
      WHERE p.i <= length(${row}.name) AND substr(${row}.name, p.i, 1) NOT IN ('', char(65534), char(65535))
        AND CAST(substr(${row}.name, p.i, 1) AS BLOB) <> CAST(char(unicode(substr(${row}.name, p.i, 1))) AS BLOB)))`

/** 1 to 255, the most characters a name has (its CHECK), as a recursive CTE. */
const POSITIONS = `folder_name_positions(i) AS (
  SELECT 1 UNION ALL SELECT i + 1 FROM folder_name_positions WHERE i < 255)`

const FOLDER_NAME_ENCODING_RULE = 'a folder name must be text in valid UTF-8, without NUL'

const MIGRATIONS: SqlMigration[] = [
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
  {
    // The listing generation of each owner: a number that changes, in the writing
    // transaction, whenever anything a listing of that owner shows changes (a folder of
    // theirs inserted, deleted, (un)deleted, renamed, moved, re-timed; their username or
    // avatar). Cached answers are keyed on it, so whoever writes (this service, another
    // process, a SQL console) the next listing is right. Values come from one global counter,
    // so a generation is never reused, not even by a user deleted and created again with the
    // same id. The counter row costs a writer nothing extra in contention: SQLite has one
    // writer at a time anyway.
    name: '003-listing-generations',
    sql: `
      CREATE TABLE listing_generation_seq (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        value INTEGER NOT NULL
      ) STRICT;
      INSERT INTO listing_generation_seq (id, value) VALUES (1, 1);
      ALTER TABLE users ADD COLUMN listing_generation INTEGER NOT NULL DEFAULT 1;

      CREATE TRIGGER users_generation_insert AFTER INSERT ON users
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id = NEW.id;
      END;

      CREATE TRIGGER users_generation_update AFTER UPDATE OF id, username, avatar_url ON users
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id = NEW.id;
      END;

      CREATE TRIGGER folders_generation_insert AFTER INSERT ON folders
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id = NEW.owner_id;
      END;

      CREATE TRIGGER folders_generation_delete AFTER DELETE ON folders
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id = OLD.owner_id;
      END;

      -- Every column a listing shows, or that decides whether and where a folder is listed
      -- (child_count is not one: it changes only with a child's own insert, move or delete).
      CREATE TRIGGER folders_generation_update
        AFTER UPDATE OF id, name, folder_id, owner_id, is_deleted, created_at, updated_at ON folders
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id IN (OLD.owner_id, NEW.owner_id);
      END;
    `,
  },
  {
    // The key that seals continuation tokens (src/tokens/listing-cursor.ts), made here from
    // SQLite's cryptographic generator and kept with the data: whoever opens this
    // database opens its tokens, and a token of another database never opens.
    name: '004-cursor-key',
    sql: `
      CREATE TABLE service_keys (
        name  TEXT PRIMARY KEY NOT NULL,
        value BLOB NOT NULL CHECK (length(value) = 32)
      ) STRICT;
      INSERT INTO service_keys (name, value) VALUES ('cursor', randomblob(32));
    `,
  },
  {
    // Bounds of what every listing repeats in each folder's owner object: without them one
    // huge username made every page of its owner huge (and past 512 MB, unserialisable).
    // SQLite cannot add a CHECK to an existing table without rebuilding it under its
    // foreign keys, so triggers enforce the same rule on every insert and update.
    name: '005-user-bounds',
    refuseRows: {
      query: `SELECT id FROM users u WHERE ${userOutOfBounds('u')} ORDER BY id LIMIT 20`,
      rule: USER_BOUNDS_RULE,
    },
    sql: `
      CREATE TRIGGER users_bounds_insert BEFORE INSERT ON users
      WHEN ${userOutOfBounds('NEW')}
      BEGIN
        SELECT RAISE(ABORT, 'users: ${USER_BOUNDS_RULE}');
      END;
      CREATE TRIGGER users_bounds_update BEFORE UPDATE OF username, avatar_url ON users
      WHEN ${userOutOfBounds('NEW')}
      BEGIN
        SELECT RAISE(ABORT, 'users: ${USER_BOUNDS_RULE}');
      END;
    `,
  },
  {
    // The change feed's log and clock-based generations (docs/api.md "Change log").
    // Generations were drawn from a counter stored with the data, so a restored backup drew
    // the same values again and cached answers keyed on them came back stale; they now
    // follow the clock (NEXT_GENERATION). Every write that changes what a listing shows
    // writes, in the same transaction, one folder_changes row per (owner, parent) it touched.
    //
    // INSERT OR REPLACE deletes the replaced row without firing its delete triggers (unless
    // the writer's connection has recursive_triggers on), which would leave counts,
    // generations and the log wrong: such writes are refused. The BEFORE INSERT triggers
    // note, in replaced_rows, whether a row that the insert conflicts with exists; only a
    // REPLACE reaches the AFTER INSERT trigger with that note (a plain conflicting INSERT
    // aborts first; OR IGNORE and ON CONFLICT DO UPDATE never insert). A note lives for one
    // statement: the next insert of the id clears it, and pruning empties the table.
    name: '006-change-log',
    sql: `
      DROP TRIGGER folders_generation_insert;
      DROP TRIGGER folders_generation_delete;
      DROP TRIGGER folders_generation_update;
      DROP TRIGGER users_generation_insert;
      DROP TRIGGER users_generation_update;
      DROP TABLE listing_generation_seq;

      -- Clustered by owner and position: a row costs a writer one page of this table, and
      -- a feed reads the owner's rows after its position in order (those of other parents
      -- are skipped: the read costs what the owner changed since the position). Resets are
      -- few, indexed apart; pruning walks the owners.
      CREATE TABLE folder_changes (
        owner_id   TEXT NOT NULL,
        generation INTEGER NOT NULL,
        id         INTEGER NOT NULL,
        kind       TEXT NOT NULL CHECK (kind IN ('folder', 'owner', 'reset')),
        parent_id  TEXT CHECK (kind = 'folder' OR parent_id IS NULL),
        folder_id  TEXT CHECK ((kind = 'folder') = (folder_id IS NOT NULL)),
        PRIMARY KEY (owner_id, generation, id)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX folder_changes_resets ON folder_changes (owner_id, generation) WHERE kind = 'reset';

      UPDATE users SET listing_generation = ${nextGeneration(NOW_MICROS_006)};
      ${logOwners('reset', 'true')}

      -- A user deleted takes its history along: one made again with the same id starts
      -- afresh, above the last generation of the deleted one (FIRST_GENERATION).
      CREATE TABLE retired_generations (
        owner_id   TEXT PRIMARY KEY NOT NULL,
        generation INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE TRIGGER users_changes_delete AFTER DELETE ON users
      BEGIN
        DELETE FROM folder_changes WHERE owner_id = OLD.id;
        INSERT INTO retired_generations (owner_id, generation) VALUES (OLD.id, OLD.listing_generation)
          ON CONFLICT (owner_id) DO UPDATE SET generation = excluded.generation;
      END;

      CREATE TABLE replaced_rows (
        tbl TEXT NOT NULL,
        id  TEXT NOT NULL,
        PRIMARY KEY (tbl, id)
      ) STRICT, WITHOUT ROWID;

      CREATE TRIGGER folders_replace_guard BEFORE INSERT ON folders
      BEGIN
        DELETE FROM replaced_rows WHERE tbl = 'folders' AND id = NEW.id;
        INSERT INTO replaced_rows (tbl, id)
          SELECT 'folders', NEW.id WHERE EXISTS (SELECT 1 FROM folders WHERE id = NEW.id);
      END;
      CREATE TRIGGER users_replace_guard BEFORE INSERT ON users
      BEGIN
        DELETE FROM replaced_rows WHERE tbl = 'users' AND id = NEW.id;
        INSERT INTO replaced_rows (tbl, id)
          SELECT 'users', NEW.id
           WHERE EXISTS (SELECT 1 FROM users WHERE id = NEW.id OR username = NEW.username);
      END;
      -- UPDATE OR REPLACE onto another row's id or username deletes that row the same way.
      CREATE TRIGGER folders_update_replace_guard BEFORE UPDATE OF id ON folders
        WHEN NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM folders WHERE id = NEW.id)
      BEGIN
        SELECT RAISE(ABORT, '${updateOntoRefused('folders', 'id')}');
      END;
      CREATE TRIGGER users_update_replace_guard BEFORE UPDATE OF id, username ON users
        WHEN (NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM users WHERE id = NEW.id))
          OR (NEW.username IS NOT OLD.username AND EXISTS (SELECT 1 FROM users WHERE username = NEW.username))
      BEGIN
        SELECT RAISE(ABORT, '${updateOntoRefused('users', 'id or username')}');
      END;
      ${changeTriggers({ log: true, now: NOW_MICROS_006 })}
    `,
  },
  {
    // Names as PostgreSQL already holds them (it refuses bytes that are not UTF-8 and NUL
    // on input): a name the service cannot read back exactly cannot be listed reliably.
    name: '007-folder-name-encoding',
    refuseRows: {
      // The table does not exist yet: the same numbers, as a CTE of the same name.
      query: `WITH RECURSIVE ${POSITIONS}
        SELECT id FROM folders f WHERE ${folderNameNotUtf8('f')} ORDER BY id LIMIT 20`,
      rule: FOLDER_NAME_ENCODING_RULE,
    },
    sql: `
      CREATE TABLE folder_name_positions (i INTEGER PRIMARY KEY NOT NULL) STRICT;
      INSERT INTO folder_name_positions (i)
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 255) SELECT i FROM n;
      CREATE TRIGGER folders_name_encoding_insert BEFORE INSERT ON folders
      WHEN ${folderNameNotUtf8('NEW')}
      BEGIN
        SELECT RAISE(ABORT, 'folders: ${FOLDER_NAME_ENCODING_RULE}');
      END;
      CREATE TRIGGER folders_name_encoding_update BEFORE UPDATE OF name ON folders
      WHEN ${folderNameNotUtf8('NEW')}
      BEGIN
        SELECT RAISE(ABORT, 'folders: ${FOLDER_NAME_ENCODING_RULE}');
      END;
    `,
  },
  {
    // Other writers use their distribution's sqlite3 (docs/operations.md "Other writers"):
    // 006's triggers called unixepoch('subsec'), which SQLite before 3.42 reads as NULL, so
    // every write to folders or users from Debian 12's sqlite3 (3.40) failed on
    // users.listing_generation. The same triggers, with a clock every version has.
    name: '008-portable-clock',
    sql: `
      DROP TRIGGER folders_changes_insert;
      DROP TRIGGER folders_changes_delete;
      DROP TRIGGER folders_changes_update;
      DROP TRIGGER users_changes_insert;
      DROP TRIGGER users_changes_update;
      ${changeTriggers({ log: true })}
    `,
  },
  {
    // The natural order's stored sort key (src/ordering/natural-key.ts), which only the
    // service can compute. Other writers know nothing of it: a row they insert has none, and
    // a rename that leaves the key alone clears it, so a key is either right for its name or
    // missing; the service completes the missing keys of a parent before it lists that parent
    // in natural order (the second, small index finds them). Existing rows start without one.
    // Neither the key nor its completion is listed: the generation and the log stay.
    name: '009-natural-order',
    sql: `
      ALTER TABLE folders ADD COLUMN name_key BLOB;
      CREATE INDEX folders_natural
        ON folders (owner_id, folder_id, name_key, name, created_at, id, updated_at)
        WHERE is_deleted = 0;
      CREATE INDEX folders_unkeyed ON folders (owner_id, folder_id) WHERE name_key IS NULL AND is_deleted = 0;
      CREATE TRIGGER folders_name_key_stale AFTER UPDATE OF name ON folders
        WHEN NEW.name IS NOT OLD.name AND NEW.name_key IS OLD.name_key
      BEGIN
        UPDATE folders SET name_key = NULL WHERE id = NEW.id;
      END;
    `,
  },
  {
    // The folder tree feed (docs/api.md "Folder tree") must re-send the subtree of a folder
    // that comes back, and must not re-send it for a rename: an undelete now also logs the
    // new place (row 1), as a move does.
    name: '010-tree-log',
    sql: `
      DROP TRIGGER folders_changes_update;
      ${treeUpdateTrigger()}
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
  const migrations: Migration[] = MIGRATIONS.map(({ name, sql, refuseRows }) => ({
    name,
    up: () => {
      const offending = refuseRows && (db.prepare(refuseRows.query).pluck().all() as string[])
      if (refuseRows && offending && offending.length > 0) throw refusal(name, refuseRows.rule, offending)
      db.exec(sql)
      return Promise.resolve()
    },
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
