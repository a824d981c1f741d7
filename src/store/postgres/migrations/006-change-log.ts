import type { SqlMigration } from '../../run-migrations.js'

/**
 * The change feed's log and clock-based generations (docs/api.md "Change log"), the
 * twin of SQLite's 006. Generations came from a sequence, which a restored backup or a
 * point-in-time recovery winds back: the same values were drawn again and cached answers
 * keyed on them came back stale. They now follow the clock (NEXT_GENERATION).
 *
 * Also: the count trigger returned early below the first trigger level (to stop its own
 * updates from recursing), so folders written by another service's trigger were not
 * counted; it now applies net deltas at any depth. TRUNCATE fired no trigger at all:
 * now it fixes the counts and resets every owner's feed.
 */
export default {
  name: '006-change-log',
  sql: `
      DROP TRIGGER folders_generation_insert ON folders;
      DROP TRIGGER folders_generation_delete ON folders;
      DROP TRIGGER folders_generation_update ON folders;
      DROP FUNCTION folders_generation_trigger();
      DROP TRIGGER users_generation_update ON users;
      DROP FUNCTION users_generation_trigger();
      ALTER TABLE users ALTER COLUMN listing_generation SET DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::int8;
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
        UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8) RETURNING id, listing_generation)
      INSERT INTO folder_changes (owner_id, generation, kind)
        SELECT id, listing_generation, 'reset' FROM bumped;

      
    CREATE OR REPLACE FUNCTION folder_counts_trigger() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN 
        IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
        WITH delta AS (
        SELECT folder_id, owner_id, sum(d)::int AS n FROM (SELECT folder_id, owner_id, 1 AS d FROM new_folders WHERE NOT is_deleted) AS r
         GROUP BY folder_id, owner_id HAVING sum(d) <> 0),
      children AS (
        UPDATE folders AS p SET child_count = p.child_count + delta.n
          FROM delta WHERE delta.folder_id IS NOT NULL AND p.id = delta.folder_id
        RETURNING 1)
    UPDATE users AS u SET root_folder_count = u.root_folder_count + delta.n
      FROM delta WHERE delta.folder_id IS NULL AND u.id = delta.owner_id;
      ELSIF TG_OP = 'DELETE' THEN 
        IF NOT EXISTS (SELECT 1 FROM old_folders) THEN RETURN NULL; END IF;
        WITH delta AS (
        SELECT folder_id, owner_id, sum(d)::int AS n FROM (SELECT folder_id, owner_id, -1 AS d FROM old_folders WHERE NOT is_deleted) AS r
         GROUP BY folder_id, owner_id HAVING sum(d) <> 0),
      children AS (
        UPDATE folders AS p SET child_count = p.child_count + delta.n
          FROM delta WHERE delta.folder_id IS NOT NULL AND p.id = delta.folder_id
        RETURNING 1)
    UPDATE users AS u SET root_folder_count = u.root_folder_count + delta.n
      FROM delta WHERE delta.folder_id IS NULL AND u.id = delta.owner_id;
      ELSE 
        IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
        WITH delta AS (
        SELECT folder_id, owner_id, sum(d)::int AS n FROM (SELECT folder_id, owner_id, -1 AS d FROM old_folders WHERE NOT is_deleted
           UNION ALL SELECT folder_id, owner_id, 1 FROM new_folders WHERE NOT is_deleted) AS r
         GROUP BY folder_id, owner_id HAVING sum(d) <> 0),
      children AS (
        UPDATE folders AS p SET child_count = p.child_count + delta.n
          FROM delta WHERE delta.folder_id IS NOT NULL AND p.id = delta.folder_id
        RETURNING 1)
    UPDATE users AS u SET root_folder_count = u.root_folder_count + delta.n
      FROM delta WHERE delta.folder_id IS NULL AND u.id = delta.owner_id;
      END IF;
      RETURN NULL;
    END;
    $$;
  
      DROP FUNCTION folder_counts_apply(integer, folders[]);

      
    CREATE OR REPLACE FUNCTION folders_changes_trigger() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN 
        IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id FROM new_folders) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.parent_id, c.folder_id;
      ELSIF TG_OP = 'DELETE' THEN 
        IF NOT EXISTS (SELECT 1 FROM old_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id FROM old_folders) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.parent_id, c.folder_id;
      ELSE 
        IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id FROM (
      (SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders EXCEPT SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders)
      UNION ALL
      (SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders EXCEPT SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders)) AS moved) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.parent_id, c.folder_id;
      END IF;
      RETURN NULL;
    END;
    $$;
  
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
          NEW.listing_generation := greatest(NEW.listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8);
        ELSIF (NEW.id, NEW.username, NEW.avatar_url) IS DISTINCT FROM (OLD.id, OLD.username, OLD.avatar_url) THEN
          NEW.listing_generation := greatest(OLD.listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8);
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
          UPDATE users SET root_folder_count = 0, listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
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
} satisfies SqlMigration
