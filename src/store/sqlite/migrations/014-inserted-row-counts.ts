import type { SqlMigration } from '../../run-migrations.js'

/**
 * A row inserted into folders is counted from its own live children, whatever the writer put
 * in child_count. A writer that does not enforce foreign keys (the sqlite3 command line's
 * default) can delete a parent and insert it again with its children untouched: 013's insert
 * trigger counted the new row in its parent but left its own count at the column's default,
 * so its listing answered `total: 0` and the tree walk skipped its children. A writer may
 * also name child_count in its insert. The recount is one probe of folders_tree, and writes
 * only a count that differs (a new folder has no children: nothing is written); the count
 * update sets child_count alone, which no generation or change-log trigger watches. The
 * import lifts this trigger and takes each new folder's count as it copies it.
 */
export default {
  name: '014-inserted-row-counts',
  sql: `
      DROP TRIGGER folders_count_insert;

      CREATE TRIGGER folders_count_insert AFTER INSERT ON folders
      BEGIN
        UPDATE folders SET child_count = child_count + 1
         WHERE NEW.is_deleted = 0 AND id = NEW.folder_id AND owner_id = NEW.owner_id;
        UPDATE users SET root_folder_count = root_folder_count + 1
         WHERE NEW.is_deleted = 0 AND NEW.folder_id IS NULL AND id = NEW.owner_id;
        UPDATE folders SET child_count = (
          SELECT count(*) FROM folders AS c
           WHERE c.owner_id = NEW.owner_id AND c.folder_id = NEW.id AND c.is_deleted = 0)
         WHERE id = NEW.id AND child_count IS NOT (
          SELECT count(*) FROM folders AS c
           WHERE c.owner_id = NEW.owner_id AND c.folder_id = NEW.id AND c.is_deleted = 0);
      END;
    `,
} satisfies SqlMigration
