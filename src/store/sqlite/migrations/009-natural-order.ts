import type { SqlMigration } from '../../run-migrations.js'

/**
 * The natural order's stored sort key (src/ordering/natural-key.ts), which only the
 * service can compute. Other writers know nothing of it: a row they insert has none, and
 * a rename that leaves the key alone clears it, so a key is either right for its name or
 * missing; the service completes the missing keys of a parent before it lists that parent
 * in natural order (the second, small index finds them). Existing rows start without one.
 * Neither the key nor its completion is listed: the generation and the log stay.
 */
export default {
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
} satisfies SqlMigration
