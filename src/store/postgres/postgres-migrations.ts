import type { UmzugStorage } from 'umzug'
import { refusal, runPendingMigrations, type SqlMigration } from '../run-migrations.js'
import type { Client } from './postgres-connections.js'

/**
 * Versioned schema of the PostgreSQL backend (docs/api.md, "Data model"), the counterpart of
 * sqlite-migrations.ts. Each migration runs once, recorded in schema_migrations. The whole
 * upgrade runs in the caller's transaction under a transaction-scoped advisory lock, so
 * instances starting together apply it once (the others wait, then find nothing to do) and
 * a failure leaves the previous schema. Tables go to the first schema of search_path.
 *
 * Sorting matches SQLite's BINARY exactly: text that is sorted (names, usernames) is
 * declared COLLATE "C", i.e. UTF-8 byte order = code point order, whatever the database's
 * default collation; uuid order is byte order = the lower-case hex order of SQLite's TEXT
 * ids. Times are timestamptz(3): the millisecond precision the Store speaks.
 */
/** The bounds of username and avatar_url (migration 005), as a condition over the row. */
const USER_BOUNDS = `char_length(username) BETWEEN 1 AND 255 AND username !~ '[\\x01-\\x1f\\x7f]'
  AND (avatar_url IS NULL OR char_length(avatar_url) <= 2048)`

/** Now in microseconds since the epoch. */
const NOW_MICROS = '(extract(epoch FROM clock_timestamp()) * 1000000)::int8'

/**
 * An owner's next listing generation (migration 006): above the previous one and at least
 * the clock, so a value never repeats for an owner, not even after a restored backup. Writers
 * of one owner take its users row lock to bump it, so per owner the order is commit order.
 */
export const NEXT_GENERATION = `greatest(listing_generation + 1, ${NOW_MICROS})`

const LISTED = 'id, name, folder_id, owner_id, is_deleted, created_at, updated_at'

/** The (owner, parent, folder) places a statement changed, per trigger operation. */
const CHANGED_PLACES = {
  INSERT: 'SELECT owner_id, folder_id AS parent_id, id AS folder_id FROM new_folders',
  DELETE: 'SELECT owner_id, folder_id AS parent_id, id AS folder_id FROM old_folders',
  // Only rows whose listed columns changed: the count triggers' own updates (child_count
  // alone) and no-op updates change no place. A move or an owner change yields the old
  // place and the new one; a rename yields one place twice (UNION folds it).
  UPDATE: `SELECT owner_id, folder_id AS parent_id, id AS folder_id FROM (
      (SELECT ${LISTED} FROM old_folders EXCEPT SELECT ${LISTED} FROM new_folders)
      UNION ALL
      (SELECT ${LISTED} FROM new_folders EXCEPT SELECT ${LISTED} FROM old_folders)) AS moved`,
}

/**
 * Migration 010: the places with the side of the change each describes, `place` 0 for the
 * folder's old state, 1 for a new place it was not in before: inserted, moved, given to
 * another owner, or undeleted (so the log tells an undelete, after which the folder's
 * subtree is back in the trees that hold its parent, from a rename, which changes the folder
 * alone). An update that changes no place or liveness (a rename) logs its old state only.
 */
const PLACED_CHANGES = {
  INSERT: 'SELECT owner_id, folder_id AS parent_id, id AS folder_id, 1 AS place FROM new_folders',
  DELETE: 'SELECT owner_id, folder_id AS parent_id, id AS folder_id, 0 AS place FROM old_folders',
  UPDATE: `SELECT owner_id, folder_id AS parent_id, id AS folder_id, 0 AS place FROM (
        SELECT ${LISTED} FROM old_folders EXCEPT SELECT ${LISTED} FROM new_folders) AS was
      UNION ALL
      SELECT n.owner_id, n.folder_id, n.id, 1 FROM (
        SELECT ${LISTED} FROM new_folders EXCEPT SELECT ${LISTED} FROM old_folders) AS n
       WHERE NOT EXISTS (SELECT 1 FROM old_folders AS o
                          WHERE o.id = n.id AND o.owner_id = n.owner_id
                            AND o.folder_id IS NOT DISTINCT FROM n.folder_id
                            AND (n.is_deleted OR NOT o.is_deleted))`,
}

/**
 * One statement: bump each owner with a changed place once, then log the places (`log`);
 * `placed`: the places carry their side (PLACED_CHANGES), written to the `place` column.
 */
function recordChanges(places: string, log: boolean, placed = false): string {
  const bump = `UPDATE users SET listing_generation = ${NEXT_GENERATION}
       WHERE id IN (SELECT owner_id FROM changed)`
  if (!log) return `WITH changed AS (${places}) ${bump};`
  const bumped = `${bump} RETURNING id, listing_generation`
  const [column, value, order] = placed ? [', place', ', c.place', ', c.place'] : ['', '', '']
  return `WITH changed AS (SELECT DISTINCT * FROM (${places}) AS p),
      bumped AS (${bumped})
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id${column})
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id${value}
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation${order}, c.parent_id, c.folder_id;`
}

type Operation = 'INSERT' | 'DELETE' | 'UPDATE'

/**
 * A statement-level trigger function of folders doing `work(operation)`. A statement that
 * changed no row returns at once: an UPDATE fires its statement triggers even when it
 * matches nothing, so without this a trigger whose own update matches nothing would fire
 * itself forever.
 */
function folderStatementFunction(name: string, work: (operation: Operation) => string): string {
  const branch = (operation: Operation, rows: string) => `
        IF NOT EXISTS (SELECT 1 FROM ${rows}) THEN RETURN NULL; END IF;
        ${work(operation)}`
  return `
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN ${branch('INSERT', 'new_folders')}
      ELSIF TG_OP = 'DELETE' THEN ${branch('DELETE', 'old_folders')}
      ELSE ${branch('UPDATE', 'new_folders')}
      END IF;
      RETURN NULL;
    END;
    $$;
  `
}

/**
 * The trigger function of folders that bumps listing generations and writes the change log
 * (migration 006): statement-level, so a bulk statement bumps each owner once and logs each
 * place once. It works at any trigger depth (writes made by other services' triggers are
 * logged too). `log` false leaves the log out: the bench measures what the log costs.
 */
export function folderChangesFunction({ log }: { log: boolean }): string {
  return folderStatementFunction('folders_changes_trigger', (operation) =>
    recordChanges(CHANGED_PLACES[operation], log),
  )
}

/** The trigger function of migration 010: migration 006's, logging each place with its side. */
export function treeChangesFunction({ log }: { log: boolean }): string {
  return folderStatementFunction('folders_changes_trigger', (operation) =>
    recordChanges(PLACED_CHANGES[operation], log, true),
  )
}

/** Live-child count changes of a statement's rows as (folder_id, owner_id, delta) rows. */
const COUNTED = {
  INSERT: 'SELECT folder_id, owner_id, 1 AS d FROM new_folders WHERE NOT is_deleted',
  DELETE: 'SELECT folder_id, owner_id, -1 AS d FROM old_folders WHERE NOT is_deleted',
  UPDATE: `SELECT folder_id, owner_id, -1 AS d FROM old_folders WHERE NOT is_deleted
           UNION ALL SELECT folder_id, owner_id, 1 FROM new_folders WHERE NOT is_deleted`,
}

/**
 * Applies the net count change per parent (and per owner, for the root), skipping parents
 * whose count does not change. The update of child_count fires this trigger again (at any
 * depth, no early return: writes from other services' triggers must count); there old and
 * new rows differ in child_count only, every net change is zero and nothing is updated,
 * so the recursion ends.
 */
function applyCounts(rows: string): string {
  return `WITH delta AS (
        SELECT folder_id, owner_id, sum(d)::int AS n FROM (${rows}) AS r
         GROUP BY folder_id, owner_id HAVING sum(d) <> 0),
      children AS (
        UPDATE folders AS p SET child_count = p.child_count + delta.n
          FROM delta WHERE delta.folder_id IS NOT NULL AND p.id = delta.folder_id
        RETURNING 1)
    UPDATE users AS u SET root_folder_count = u.root_folder_count + delta.n
      FROM delta WHERE delta.folder_id IS NULL AND u.id = delta.owner_id;`
}

const MIGRATIONS: SqlMigration[] = [
  {
    name: '001-initial-schema',
    sql: `
      CREATE TABLE users (
        id            uuid PRIMARY KEY,
        username      text COLLATE "C" NOT NULL UNIQUE,
        email         text,
        avatar_url    text,
        password_hash text,
        is_suspended  boolean NOT NULL DEFAULT false,
        created_at    timestamptz(3) NOT NULL,
        updated_at    timestamptz(3) NOT NULL
      );

      CREATE TABLE sessions (
        id         uuid PRIMARY KEY,
        user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz(3) NOT NULL,
        expires_at timestamptz(3)
      );
      CREATE INDEX sessions_by_user ON sessions (user_id);

      -- A parent must belong to the same owner: the composite foreign key says so, and
      -- UNIQUE (id, owner_id) is what it references.
      CREATE TABLE folders (
        id         uuid PRIMARY KEY,
        name       text COLLATE "C" NOT NULL
                   CONSTRAINT folders_name_trimmed
                   CHECK (char_length(name) BETWEEN 1 AND 255 AND name = btrim(name)),
        folder_id  uuid,
        owner_id   uuid NOT NULL REFERENCES users (id),
        is_deleted boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        CONSTRAINT folders_id_owner UNIQUE (id, owner_id),
        CONSTRAINT folders_parent_same_owner
          FOREIGN KEY (folder_id, owner_id) REFERENCES folders (id, owner_id)
      );

      -- Serves the listing page and its count as index-only scans (it covers every
      -- returned column) over the one owner's live children of one parent, already in
      -- listing order (name is COLLATE "C"), so LIMIT stops early.
      CREATE INDEX folders_listing
        ON folders (owner_id, folder_id, name, created_at, id) INCLUDE (updated_at)
        WHERE NOT is_deleted;

      CREATE TABLE files (
        id         uuid PRIMARY KEY,
        name       text COLLATE "C" NOT NULL
                   CONSTRAINT files_name_trimmed
                   CHECK (char_length(name) BETWEEN 1 AND 255 AND name = btrim(name)),
        folder_id  uuid,
        owner_id   uuid NOT NULL REFERENCES users (id),
        size       bigint NOT NULL DEFAULT 0 CHECK (size >= 0),
        is_deleted boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        CONSTRAINT files_parent_same_owner
          FOREIGN KEY (folder_id, owner_id) REFERENCES folders (id, owner_id)
      );
      CREATE INDEX files_by_folder ON files (owner_id, folder_id);
    `,
  },
  {
    // Exact live-child counts (the twin of SQLite's 002), so a listing's `total` is one row
    // read instead of a count over every child. Statement-level triggers with transition
    // tables: a bulk INSERT ... SELECT of 5,000 rows costs one UPDATE per distinct parent,
    // not one per row. The increments run in the writer's transaction and take the parent
    // row's lock, so concurrent writers serialise on it and the count stays exact.
    name: '002-maintained-child-counts',
    sql: `
      ALTER TABLE folders ADD COLUMN child_count integer NOT NULL DEFAULT 0;
      ALTER TABLE users ADD COLUMN root_folder_count integer NOT NULL DEFAULT 0;

      UPDATE folders AS p SET child_count = c.n
        FROM (SELECT folder_id, owner_id, count(*) AS n FROM folders
               WHERE NOT is_deleted AND folder_id IS NOT NULL GROUP BY folder_id, owner_id) AS c
       WHERE p.id = c.folder_id AND p.owner_id = c.owner_id;
      UPDATE users AS u SET root_folder_count = c.n
        FROM (SELECT owner_id, count(*) AS n FROM folders
               WHERE NOT is_deleted AND folder_id IS NULL GROUP BY owner_id) AS c
       WHERE u.id = c.owner_id;

      -- Applies the live folders of one transition table to the counts, with sign +1 or -1.
      CREATE FUNCTION folder_counts_apply(sign integer, changed_folders folders[]) RETURNS void
      LANGUAGE sql AS $$
        UPDATE folders AS p SET child_count = p.child_count + sign * c.n
          FROM (SELECT f.folder_id, count(*) AS n FROM unnest(changed_folders) AS f
                 WHERE NOT f.is_deleted AND f.folder_id IS NOT NULL GROUP BY f.folder_id) AS c
         WHERE p.id = c.folder_id;
        UPDATE users AS u SET root_folder_count = u.root_folder_count + sign * c.n
          FROM (SELECT f.owner_id, count(*) AS n FROM unnest(changed_folders) AS f
                 WHERE NOT f.is_deleted AND f.folder_id IS NULL GROUP BY f.owner_id) AS c
         WHERE u.id = c.owner_id;
      $$;

      CREATE FUNCTION folder_counts_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        -- The count updates below fire this trigger again (UPDATE on folders); they change
        -- no parent, owner or deletion flag, so the nested call has nothing to do.
        IF pg_trigger_depth() > 1 THEN
          RETURN NULL;
        END IF;
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
          PERFORM folder_counts_apply(-1, (SELECT coalesce(array_agg(o::folders), '{}') FROM old_folders AS o));
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
          PERFORM folder_counts_apply(1, (SELECT coalesce(array_agg(n::folders), '{}') FROM new_folders AS n));
        END IF;
        RETURN NULL;
      END;
      $$;

      CREATE TRIGGER folders_counts_insert AFTER INSERT ON folders
        REFERENCING NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folder_counts_trigger();
      CREATE TRIGGER folders_counts_update AFTER UPDATE ON folders
        REFERENCING OLD TABLE AS old_folders NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folder_counts_trigger();
      CREATE TRIGGER folders_counts_delete AFTER DELETE ON folders
        REFERENCING OLD TABLE AS old_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folder_counts_trigger();
    `,
  },
  {
    // The listing generation of each owner (the twin of SQLite's 003): a number that changes,
    // in the writing transaction, whenever anything a listing of that owner shows changes.
    // Every instance keys its cached answers on it and reads it with the session, so a write
    // committed by any instance, service or console shows in the very next listing. Values
    // come from a sequence: never reused, and nextval() takes no lock, so writers of different
    // owners do not wait on each other; writers of one owner serialise on that user's row,
    // as the root folder count already makes them do. Statement-level triggers: a bulk
    // statement bumps each owner it touches once, not once per row.
    name: '003-listing-generations',
    sql: `
      CREATE SEQUENCE listing_generation_seq;
      ALTER TABLE users ADD COLUMN listing_generation bigint NOT NULL
        DEFAULT nextval('listing_generation_seq');

      CREATE FUNCTION users_generation_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        NEW.listing_generation := nextval('listing_generation_seq');
        RETURN NEW;
      END;
      $$;

      CREATE TRIGGER users_generation_update BEFORE UPDATE OF id, username, avatar_url ON users
        FOR EACH ROW EXECUTE FUNCTION users_generation_trigger();

      CREATE FUNCTION folders_generation_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          UPDATE users SET listing_generation = nextval('listing_generation_seq')
           WHERE id IN (SELECT DISTINCT owner_id FROM new_folders);
        ELSIF TG_OP = 'DELETE' THEN
          UPDATE users SET listing_generation = nextval('listing_generation_seq')
           WHERE id IN (SELECT DISTINCT owner_id FROM old_folders);
        ELSE
          -- Only rows whose listed columns changed: the count triggers' own updates (which
          -- set child_count alone) and no-op updates bump nothing.
          UPDATE users SET listing_generation = nextval('listing_generation_seq')
           WHERE id IN (SELECT DISTINCT owner_id FROM (
                   (SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders
                    EXCEPT ALL
                    SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders)
                   UNION ALL
                   (SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders
                    EXCEPT ALL
                    SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders)
                 ) AS changed);
        END IF;
        RETURN NULL;
      END;
      $$;

      CREATE TRIGGER folders_generation_insert AFTER INSERT ON folders
        REFERENCING NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_generation_trigger();
      CREATE TRIGGER folders_generation_delete AFTER DELETE ON folders
        REFERENCING OLD TABLE AS old_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_generation_trigger();
      -- (A column list would be cheaper, but PostgreSQL refuses one beside transition tables.)
      CREATE TRIGGER folders_generation_update AFTER UPDATE ON folders
        REFERENCING OLD TABLE AS old_folders NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_generation_trigger();
    `,
  },
  {
    // The key that seals continuation tokens (src/tokens/listing-cursor.ts), kept with the data so
    // that every instance on this database shares it unconfigured. gen_random_uuid() draws
    // from PostgreSQL's cryptographic generator (no extension needed); two of them carry
    // 244 random bits, which SHA-256 folds into the 32-byte key.
    name: '004-cursor-key',
    sql: `
      CREATE TABLE service_keys (
        name  text PRIMARY KEY,
        value bytea NOT NULL CHECK (octet_length(value) = 32)
      );
      INSERT INTO service_keys (name, value)
      VALUES ('cursor', sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')));
    `,
  },
  {
    // Bounds of what every listing repeats in each folder's owner object: without them one
    // huge username made every page of its owner huge (and past 512 MB, unserialisable).
    name: '005-user-bounds',
    refuseRows: {
      query: `SELECT id::text AS id FROM users WHERE NOT (${USER_BOUNDS}) ORDER BY id LIMIT 20`,
      rule: 'a username must be 1 to 255 characters without control characters, an avatar_url at most 2,048 characters',
    },
    sql: `ALTER TABLE users ADD CONSTRAINT users_bounds CHECK (${USER_BOUNDS})`,
  },
  {
    // The change feed's log and clock-based generations (docs/api.md "Change log"), the
    // twin of SQLite's 006. Generations came from a sequence, which a restored backup or a
    // point-in-time recovery winds back: the same values were drawn again and cached answers
    // keyed on them came back stale. They now follow the clock (NEXT_GENERATION).
    //
    // Also: the count trigger returned early below the first trigger level (to stop its own
    // updates from recursing), so folders written by another service's trigger were not
    // counted; it now applies net deltas at any depth. TRUNCATE fired no trigger at all:
    // now it fixes the counts and resets every owner's feed.
    name: '006-change-log',
    sql: `
      DROP TRIGGER folders_generation_insert ON folders;
      DROP TRIGGER folders_generation_delete ON folders;
      DROP TRIGGER folders_generation_update ON folders;
      DROP FUNCTION folders_generation_trigger();
      DROP TRIGGER users_generation_update ON users;
      DROP FUNCTION users_generation_trigger();
      ALTER TABLE users ALTER COLUMN listing_generation SET DEFAULT ${NOW_MICROS};
      DROP SEQUENCE listing_generation_seq;

      CREATE TABLE folder_changes (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        owner_id   uuid NOT NULL,
        generation bigint NOT NULL,
        kind       text NOT NULL CHECK (kind IN ('folder', 'owner', 'reset')),
        parent_id  uuid CHECK (kind = 'folder' OR parent_id IS NULL),
        folder_id  uuid CHECK ((kind = 'folder') = (folder_id IS NOT NULL))
      );
      -- Two indexes, as each costs every write a page: the first serves a parent's 'folder'
      -- rows after a position, the owner's 'owner' rows and the newer-'reset' check; the
      -- second the "a row has exactly this generation" check and pruning (oldest first).
      CREATE INDEX folder_changes_by_owner
        ON folder_changes (owner_id, kind, parent_id, generation, id);
      CREATE INDEX folder_changes_by_generation ON folder_changes (generation, owner_id);

      WITH bumped AS (
        UPDATE users SET listing_generation = ${NEXT_GENERATION} RETURNING id, listing_generation)
      INSERT INTO folder_changes (owner_id, generation, kind)
        SELECT id, listing_generation, 'reset' FROM bumped;

      ${folderStatementFunction('folder_counts_trigger', (operation) => applyCounts(COUNTED[operation]))}
      DROP FUNCTION folder_counts_apply(integer, folders[]);

      ${folderChangesFunction({ log: true })}
      CREATE TRIGGER folders_changes_insert AFTER INSERT ON folders
        REFERENCING NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_changes_trigger();
      CREATE TRIGGER folders_changes_delete AFTER DELETE ON folders
        REFERENCING OLD TABLE AS old_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_changes_trigger();
      CREATE TRIGGER folders_changes_update AFTER UPDATE ON folders
        REFERENCING OLD TABLE AS old_folders NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_changes_trigger();

      -- A new user starts at the clock; a new username or avatar is a new generation. The
      -- log row is written AFTER the row is stored (an INSERT ... ON CONFLICT DO NOTHING
      -- runs the BEFORE trigger for a row it then drops).
      CREATE FUNCTION users_generation_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          NEW.listing_generation := greatest(NEW.listing_generation + 1, ${NOW_MICROS});
        ELSIF (NEW.id, NEW.username, NEW.avatar_url) IS DISTINCT FROM (OLD.id, OLD.username, OLD.avatar_url) THEN
          NEW.listing_generation := greatest(OLD.listing_generation + 1, ${NOW_MICROS});
        END IF;
        RETURN NEW;
      END;
      $$;
      CREATE TRIGGER users_generation_insert BEFORE INSERT ON users
        FOR EACH ROW EXECUTE FUNCTION users_generation_trigger();
      CREATE TRIGGER users_generation_update BEFORE UPDATE OF id, username, avatar_url ON users
        FOR EACH ROW EXECUTE FUNCTION users_generation_trigger();

      CREATE FUNCTION users_changes_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO folder_changes (owner_id, generation, kind)
          VALUES (NEW.id, NEW.listing_generation, 'owner');
        RETURN NULL;
      END;
      $$;
      CREATE TRIGGER users_changes_insert AFTER INSERT ON users
        FOR EACH ROW EXECUTE FUNCTION users_changes_trigger();
      CREATE TRIGGER users_changes_update AFTER UPDATE OF id, username, avatar_url ON users
        FOR EACH ROW WHEN (OLD.listing_generation IS DISTINCT FROM NEW.listing_generation)
        EXECUTE FUNCTION users_changes_trigger();

      -- A user deleted takes its history along: one made again with the same id starts afresh.
      CREATE FUNCTION users_forget_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM folder_changes WHERE owner_id = OLD.id;
        RETURN NULL;
      END;
      $$;
      CREATE TRIGGER users_changes_delete AFTER DELETE ON users
        FOR EACH ROW EXECUTE FUNCTION users_forget_trigger();

      -- TRUNCATE fires no row trigger: every owner loses its folders at once, so every
      -- root count is zero and every feed starts again ('reset').
      CREATE FUNCTION folders_truncate_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        WITH bumped AS (
          UPDATE users SET root_folder_count = 0, listing_generation = ${NEXT_GENERATION}
          RETURNING id, listing_generation)
        INSERT INTO folder_changes (owner_id, generation, kind)
          SELECT id, listing_generation, 'reset' FROM bumped;
        RETURN NULL;
      END;
      $$;
      CREATE TRIGGER folders_truncate AFTER TRUNCATE ON folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_truncate_trigger();

      -- Users truncated (with CASCADE, their folders too): a user made again with the same
      -- id must not find the old history valid, so the whole log goes with them.
      CREATE FUNCTION users_truncate_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        TRUNCATE folder_changes;
        RETURN NULL;
      END;
      $$;
      CREATE TRIGGER users_truncate AFTER TRUNCATE ON users
        FOR EACH STATEMENT EXECUTE FUNCTION users_truncate_trigger();
    `,
  },
  {
    // The natural order's stored sort key (src/ordering/natural-key.ts), which only the
    // service can compute. Other writers know nothing of it: a row they insert has none, and
    // a rename that leaves the key alone clears it, so a key is either right for its name or
    // missing; the service completes the missing keys of a parent (on the primary) before it
    // lists that parent in natural order (the second, small index finds them). Existing rows
    // start without one. Neither the key nor its completion is listed: the change trigger
    // compares listed columns only, so the generation and the log stay.
    name: '009-natural-order',
    sql: `
      ALTER TABLE folders ADD COLUMN name_key bytea;
      CREATE INDEX folders_natural
        ON folders (owner_id, folder_id, name_key, name, created_at, id) INCLUDE (updated_at)
        WHERE NOT is_deleted;
      CREATE INDEX folders_unkeyed ON folders (owner_id, folder_id) WHERE name_key IS NULL AND NOT is_deleted;
      CREATE FUNCTION folders_name_key_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.name IS DISTINCT FROM OLD.name AND NEW.name_key IS NOT DISTINCT FROM OLD.name_key THEN
          NEW.name_key := NULL;
        END IF;
        RETURN NEW;
      END;
      $$;
      CREATE TRIGGER folders_name_key_stale BEFORE UPDATE OF name ON folders
        FOR EACH ROW EXECUTE FUNCTION folders_name_key_trigger();
    `,
  },
  {
    // The folder tree feed (docs/api.md "Folder tree") needs the side of each logged place:
    // a folder's parent before a move (its old place), and an undelete told from a rename.
    // Rows logged before have no side (null).
    name: '010-tree-log',
    sql: `
      ALTER TABLE folder_changes ADD COLUMN place smallint CHECK (place IN (0, 1));
      ${treeChangesFunction({ log: true })}
    `,
  },
  {
    // Commit hints for followers (docs/operations.md "Wake-ups"): every change of an owner's
    // listing generation (a folder written, a username or avatar changed, a truncate, an
    // import's reset: all of them bump it through users) NOTIFYs the owner's id on
    // folder_service_changes. One statement-level trigger per event, from the transition
    // tables; the server delivers notifications at commit, never for a rollback, and folds
    // repeats of one owner within a transaction. A hint only: followers still poll.
    name: '011-change-notifications',
    sql: `
      CREATE FUNCTION users_notify_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          PERFORM pg_notify('folder_service_changes', id::text) FROM old_users;
        ELSE
          PERFORM pg_notify('folder_service_changes', n.id::text)
             FROM new_users AS n JOIN old_users AS o ON o.id = n.id
            WHERE n.listing_generation <> o.listing_generation;
        END IF;
        RETURN NULL;
      END;
      $$;
      CREATE TRIGGER users_notify_update AFTER UPDATE ON users
        REFERENCING OLD TABLE AS old_users NEW TABLE AS new_users
        FOR EACH STATEMENT EXECUTE FUNCTION users_notify_trigger();
      CREATE TRIGGER users_notify_delete AFTER DELETE ON users
        REFERENCING OLD TABLE AS old_users
        FOR EACH STATEMENT EXECUTE FUNCTION users_notify_trigger();
    `,
  },
]

/** Key of the advisory lock that serialises migrations (any constant shared by all instances). */
const MIGRATION_LOCK_KEY = '7301185042'

function migrationStorage(client: Client): UmzugStorage {
  return {
    executed: async () =>
      (await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name')).rows.map(
        (row) => row.name,
      ),
    logMigration: async ({ name }) => {
      await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name])
    },
    unlogMigration: async ({ name }) => {
      await client.query('DELETE FROM schema_migrations WHERE name = $1', [name])
    },
  }
}

/**
 * Brings the schema up to date. Must run inside a transaction on `client`: the advisory
 * lock is released, and the migrations become visible, at its end.
 */
export async function migratePostgres(client: Client): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1::int8)', [MIGRATION_LOCK_KEY])
  // Names are measured (CHECK char_length) and compared in code points only in UTF-8.
  const { rows } = await client.query<{ encoding: string }>(
    "SELECT current_setting('server_encoding') AS encoding",
  )
  const encoding = rows[0]?.encoding
  if (encoding !== 'UTF8') {
    throw new Error(`the PostgreSQL database must use the UTF8 encoding, not ${encoding}`)
  }
  await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
  await runPendingMigrations(
    MIGRATIONS.map(({ name, sql, refuseRows }) => ({
      name,
      up: async () => {
        if (refuseRows) {
          const { rows } = await client.query<{ id: string }>(refuseRows.query)
          if (rows.length > 0)
            throw refusal(
              name,
              refuseRows.rule,
              rows.map((row) => row.id),
            )
        }
        await client.query(sql)
      },
    })),
    migrationStorage(client),
  )
}
