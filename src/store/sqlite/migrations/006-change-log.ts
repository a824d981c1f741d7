import type { SqlMigration } from '../../run-migrations.js'

/**
 * The change feed's log and clock-based generations (docs/api.md "Change log").
 * Generations were drawn from a counter stored with the data, so a restored backup drew
 * the same values again and cached answers keyed on them came back stale; they now
 * follow the clock (NEXT_GENERATION). Every write that changes what a listing shows
 * writes, in the same transaction, one folder_changes row per (owner, parent) it touched.
 *
 * INSERT OR REPLACE deletes the replaced row without firing its delete triggers (unless
 * the writer's connection has recursive_triggers on), which would leave counts,
 * generations and the log wrong: such writes are refused. The BEFORE INSERT triggers
 * note, in replaced_rows, whether a row that the insert conflicts with exists; only a
 * REPLACE reaches the AFTER INSERT trigger with that note (a plain conflicting INSERT
 * aborts first; OR IGNORE and ON CONFLICT DO UPDATE never insert). A note lives for one
 * statement: the next insert of the id clears it, and pruning empties the table.
 */
export default {
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

      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
      
  INSERT INTO folder_changes (owner_id, generation, id, kind)
    SELECT id, listing_generation, 0, 'reset' FROM users WHERE true;

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
        SELECT RAISE(ABORT, 'folders: an update onto the id of another row is refused (UPDATE OR REPLACE deletes that row without firing triggers)');
      END;
      CREATE TRIGGER users_update_replace_guard BEFORE UPDATE OF id, username ON users
        WHEN (NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM users WHERE id = NEW.id))
          OR (NEW.username IS NOT OLD.username AND EXISTS (SELECT 1 FROM users WHERE username = NEW.username))
      BEGIN
        SELECT RAISE(ABORT, 'users: an update onto the id or username of another row is refused (UPDATE OR REPLACE deletes that row without firing triggers)');
      END;
      
    CREATE TRIGGER folders_changes_insert AFTER INSERT ON folders
    BEGIN
      SELECT RAISE(ABORT, 'folders: INSERT OR REPLACE of an existing row is refused (it deletes the old row without firing triggers); use INSERT ... ON CONFLICT (id) DO UPDATE')
       WHERE EXISTS (SELECT 1 FROM replaced_rows WHERE tbl = 'folders' AND id = NEW.id);
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id IN (NEW.owner_id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 1, 'folder', NEW.folder_id, NEW.id
      FROM users WHERE id = NEW.owner_id ;
    END;

    CREATE TRIGGER folders_changes_delete AFTER DELETE ON folders
    BEGIN
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id IN (OLD.owner_id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 0, 'folder', OLD.folder_id, OLD.id
      FROM users WHERE id = OLD.owner_id ;
    END;

    -- Every column a listing shows, or that decides whether and where a folder is listed;
    -- a row for the old place and, when the folder moved (or changed id), one for the new.
    CREATE TRIGGER folders_changes_update
      AFTER UPDATE OF id, name, folder_id, owner_id, is_deleted, created_at, updated_at ON folders
      WHEN OLD.id IS NOT NEW.id OR OLD.name IS NOT NEW.name OR OLD.folder_id IS NOT NEW.folder_id OR OLD.owner_id IS NOT NEW.owner_id OR OLD.is_deleted IS NOT NEW.is_deleted OR OLD.created_at IS NOT NEW.created_at OR OLD.updated_at IS NOT NEW.updated_at
    BEGIN
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id IN (OLD.owner_id, NEW.owner_id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 0, 'folder', OLD.folder_id, OLD.id
      FROM users WHERE id = OLD.owner_id ;
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 1, 'folder', NEW.folder_id, NEW.id
      FROM users WHERE id = NEW.owner_id AND (OLD.owner_id IS NOT NEW.owner_id OR OLD.folder_id IS NOT NEW.folder_id OR OLD.id IS NOT NEW.id);
    END;

    CREATE TRIGGER users_changes_insert AFTER INSERT ON users
    BEGIN
      SELECT RAISE(ABORT, 'users: INSERT OR REPLACE of an existing row is refused (it deletes the old row without firing triggers); use INSERT ... ON CONFLICT (id) DO UPDATE')
       WHERE EXISTS (SELECT 1 FROM replaced_rows WHERE tbl = 'users' AND id = NEW.id);
      UPDATE users SET listing_generation = max(max(listing_generation + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)),
  coalesce((SELECT generation + 1 FROM retired_generations WHERE owner_id = users.id), 0)) WHERE id IN (NEW.id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind)
    SELECT id, listing_generation, 0, 'owner' FROM users WHERE id = NEW.id;
    END;

    CREATE TRIGGER users_changes_update AFTER UPDATE OF id, username, avatar_url ON users
      WHEN OLD.id IS NOT NEW.id OR OLD.username IS NOT NEW.username OR OLD.avatar_url IS NOT NEW.avatar_url
    BEGIN
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id IN (NEW.id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind)
    SELECT id, listing_generation, 0, 'owner' FROM users WHERE id = NEW.id;
    END;
  
    `,
} satisfies SqlMigration
