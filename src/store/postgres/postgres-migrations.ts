import type { UmzugStorage } from 'umzug'
import { runPendingMigrations } from '../run-migrations.js'
import type { Client } from './postgres-connections.js'

/**
 * Versioned schema of the PostgreSQL backend (CONTRACT section 7), the counterpart of
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
const MIGRATIONS: { name: string; sql: string }[] = [
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
    MIGRATIONS.map(({ name, sql }) => ({
      name,
      up: async () => {
        await client.query(sql)
      },
    })),
    migrationStorage(client),
  )
}
