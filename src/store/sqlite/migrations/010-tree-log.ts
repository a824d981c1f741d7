import type { SqlMigration } from '../../run-migrations.js'

/**
 * The folder tree feed (docs/api.md "Folder tree") must re-send the subtree of a folder
 * that comes back, and must not re-send it for a rename: an undelete now also logs the
 * new place (row 1), as a move does.
 */
export default {
  name: '010-tree-log',
  sql: `
      DROP TRIGGER folders_changes_update;
      
    CREATE TRIGGER folders_changes_update
      AFTER UPDATE OF id, name, folder_id, owner_id, is_deleted, created_at, updated_at ON folders
      WHEN OLD.id IS NOT NEW.id OR OLD.name IS NOT NEW.name OR OLD.folder_id IS NOT NEW.folder_id OR OLD.owner_id IS NOT NEW.owner_id OR OLD.is_deleted IS NOT NEW.is_deleted OR OLD.created_at IS NOT NEW.created_at OR OLD.updated_at IS NOT NEW.updated_at
    BEGIN
      UPDATE users SET listing_generation = max(listing_generation + 1, CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000)
       WHERE id IN (OLD.owner_id, NEW.owner_id);
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 0, 'folder', OLD.folder_id, OLD.id
      FROM users WHERE id = OLD.owner_id ;
      
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 1, 'folder', NEW.folder_id, NEW.id
      FROM users WHERE id = NEW.owner_id AND (OLD.owner_id IS NOT NEW.owner_id OR OLD.folder_id IS NOT NEW.folder_id OR OLD.id IS NOT NEW.id OR (OLD.is_deleted = 1 AND NEW.is_deleted = 0));
    END;
  
    `,
} satisfies SqlMigration
