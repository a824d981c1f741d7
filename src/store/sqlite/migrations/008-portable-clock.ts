import type { SqlMigration } from '../../run-migrations.js'

/**
 * Other writers use their distribution's sqlite3 (docs/operations.md "Other writers"):
 * 006's triggers called unixepoch('subsec'), which SQLite before 3.42 reads as NULL, so
 * every write to folders or users from Debian 12's sqlite3 (3.40) failed on
 * users.listing_generation. The same triggers, with a clock every version has.
 */
export default {
  name: '008-portable-clock',
  sql: `
      DROP TRIGGER folders_changes_insert;
      DROP TRIGGER folders_changes_delete;
      DROP TRIGGER folders_changes_update;
      DROP TRIGGER users_changes_insert;
      DROP TRIGGER users_changes_update;
      
    CREATE TRIGGER folders_changes_insert AFTER INSERT ON folders
    BEGIN
      SELECT RAISE(ABORT, 'folders: INSERT OR REPLACE of an existing row is refused (it deletes the old row without firing triggers); use INSERT ... ON CONFLICT (id) DO UPDATE')
       WHERE EXISTS (SELECT 1 FROM replaced_rows WHERE tbl = 'folders' AND id = NEW.id);
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000) WHERE id IN (NEW.owner_id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 1, 'folder', NEW.folder_id, NEW.id
      FROM users WHERE id = NEW.owner_id ;
    END;

    CREATE TRIGGER folders_changes_delete AFTER DELETE ON folders
    BEGIN
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000) WHERE id IN (OLD.owner_id);
      
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
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000) WHERE id IN (OLD.owner_id, NEW.owner_id);
      
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
      UPDATE users SET listing_generation = max(max(listing_generation + 1, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000),
  coalesce((SELECT generation + 1 FROM retired_generations WHERE owner_id = users.id), 0)) WHERE id IN (NEW.id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind)
    SELECT id, listing_generation, 0, 'owner' FROM users WHERE id = NEW.id;
    END;

    CREATE TRIGGER users_changes_update AFTER UPDATE OF id, username, avatar_url ON users
      WHEN OLD.id IS NOT NEW.id OR OLD.username IS NOT NEW.username OR OLD.avatar_url IS NOT NEW.avatar_url
    BEGIN
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000) WHERE id IN (NEW.id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind)
    SELECT id, listing_generation, 0, 'owner' FROM users WHERE id = NEW.id;
    END;
  
    `,
} satisfies SqlMigration
