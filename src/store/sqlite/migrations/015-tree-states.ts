import type { SqlMigration } from '../../run-migrations.js'

/**
 * The tree feed (docs/api.md "Folder tree") reads the tree as it was at a cursor's position:
 * a folder's state at a position is the old state of its first log row after it (side 0),
 * "not the owner's" when that row is a new place (side 1), else its row now. So a row of an
 * old state now carries the whole state: whether the folder was live, its name and times
 * (NULL on rows logged before: a cursor that needs them is expired). Two partial indexes
 * find a folder's first row after a position, and the folders whose old state after a
 * position named a given parent, each with one seek. The insert trigger logs only a new
 * place and stays as it is.
 */
export default {
  name: '015-tree-states',
  sql: `
      ALTER TABLE folder_changes ADD COLUMN live INTEGER CHECK (live IN (0, 1));
      ALTER TABLE folder_changes ADD COLUMN name TEXT;
      ALTER TABLE folder_changes ADD COLUMN created_at INTEGER;
      ALTER TABLE folder_changes ADD COLUMN updated_at INTEGER;
      CREATE INDEX folder_changes_by_folder ON folder_changes (owner_id, folder_id, generation, id)
        WHERE kind = 'folder';
      CREATE INDEX folder_changes_by_old_parent ON folder_changes (owner_id, parent_id, generation)
        WHERE kind = 'folder' AND id = 0;

      DROP TRIGGER folders_changes_delete;
    CREATE TRIGGER folders_changes_delete AFTER DELETE ON folders
    BEGIN
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000) WHERE id IN (OLD.owner_id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id, live, name, created_at, updated_at)
    SELECT id, listing_generation, 0, 'folder', OLD.folder_id, OLD.id, OLD.is_deleted = 0, OLD.name, OLD.created_at, OLD.updated_at
      FROM users WHERE id = OLD.owner_id ;
    END;

      DROP TRIGGER folders_changes_update;
    CREATE TRIGGER folders_changes_update
      AFTER UPDATE OF id, name, folder_id, owner_id, is_deleted, created_at, updated_at ON folders
      WHEN OLD.id IS NOT NEW.id OR OLD.name IS NOT NEW.name OR OLD.folder_id IS NOT NEW.folder_id OR OLD.owner_id IS NOT NEW.owner_id OR OLD.is_deleted IS NOT NEW.is_deleted OR OLD.created_at IS NOT NEW.created_at OR OLD.updated_at IS NOT NEW.updated_at
    BEGIN
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000)
       WHERE id IN (OLD.owner_id, NEW.owner_id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id, live, name, created_at, updated_at)
    SELECT id, listing_generation, 0, 'folder', OLD.folder_id, OLD.id, OLD.is_deleted = 0, OLD.name, OLD.created_at, OLD.updated_at
      FROM users WHERE id = OLD.owner_id ;
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 1, 'folder', NEW.folder_id, NEW.id
      FROM users WHERE id = NEW.owner_id AND (OLD.owner_id IS NOT NEW.owner_id OR OLD.folder_id IS NOT NEW.folder_id OR OLD.id IS NOT NEW.id OR (OLD.is_deleted = 1 AND NEW.is_deleted = 0));
    END;
  `,
} satisfies SqlMigration
