import type { SqlMigration } from '../../run-migrations.js'

/**
 * A folder's child_count is the number of folders its owner's listing of it pages through:
 * its live children of the same owner. The triggers of 002 counted live children of any
 * owner, while a writer that does not enforce foreign keys (the sqlite3 command line's
 * default) can give a child, or a parent, to another user: the listing's `total` then
 * counted a row it did not list, and the tree walk read children it would not send. 002's
 * first fill counted the owner's children only, so databases migrated across it could be
 * off too: every count is taken again here, and only the rows that differ are written.
 *
 * A parent's own owner change recounts it: every child's standing changes at once. The
 * count updates set child_count alone, which no generation or change-log trigger watches.
 */
export default {
  name: '013-owner-child-counts',
  sql: `
      DROP TRIGGER folders_count_insert;
      DROP TRIGGER folders_count_delete;
      DROP TRIGGER folders_count_update;

      CREATE TRIGGER folders_count_insert AFTER INSERT ON folders WHEN NEW.is_deleted = 0
      BEGIN
        UPDATE folders SET child_count = child_count + 1
         WHERE id = NEW.folder_id AND owner_id = NEW.owner_id;
        UPDATE users SET root_folder_count = root_folder_count + 1
         WHERE NEW.folder_id IS NULL AND id = NEW.owner_id;
      END;

      CREATE TRIGGER folders_count_delete AFTER DELETE ON folders WHEN OLD.is_deleted = 0
      BEGIN
        UPDATE folders SET child_count = child_count - 1
         WHERE id = OLD.folder_id AND owner_id = OLD.owner_id;
        UPDATE users SET root_folder_count = root_folder_count - 1
         WHERE OLD.folder_id IS NULL AND id = OLD.owner_id;
      END;

      -- A move, a (un)deletion or an owner change takes the old contribution away and adds
      -- the new one; a folder whose own owner changed is counted again.
      CREATE TRIGGER folders_count_update AFTER UPDATE OF is_deleted, folder_id, owner_id ON folders
      BEGIN
        UPDATE folders SET child_count = child_count - 1
         WHERE OLD.is_deleted = 0 AND id = OLD.folder_id AND owner_id = OLD.owner_id;
        UPDATE users SET root_folder_count = root_folder_count - 1
         WHERE OLD.is_deleted = 0 AND OLD.folder_id IS NULL AND id = OLD.owner_id;
        UPDATE folders SET child_count = child_count + 1
         WHERE NEW.is_deleted = 0 AND id = NEW.folder_id AND owner_id = NEW.owner_id;
        UPDATE users SET root_folder_count = root_folder_count + 1
         WHERE NEW.is_deleted = 0 AND NEW.folder_id IS NULL AND id = NEW.owner_id;
        UPDATE folders SET child_count = (
          SELECT count(*) FROM folders AS c
           WHERE c.owner_id = NEW.owner_id AND c.folder_id = NEW.id AND c.is_deleted = 0)
         WHERE OLD.owner_id IS NOT NEW.owner_id AND id = NEW.id;
      END;

      UPDATE folders SET child_count = (
        SELECT count(*) FROM folders AS c
         WHERE c.owner_id = folders.owner_id AND c.folder_id = folders.id AND c.is_deleted = 0)
       WHERE child_count IS NOT (
        SELECT count(*) FROM folders AS c
         WHERE c.owner_id = folders.owner_id AND c.folder_id = folders.id AND c.is_deleted = 0);
    `,
} satisfies SqlMigration
