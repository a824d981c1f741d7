import type { SqlMigration } from '../../run-migrations.js'

/**
 * The natural order's stored sort key (src/ordering/natural-key.ts), which only the
 * service can compute. Other writers know nothing of it: a row they insert has none, and
 * a rename that leaves the key alone clears it, so a key is either right for its name or
 * missing; the service completes the missing keys of a parent (on the primary) before it
 * lists that parent in natural order (the second, small index finds them). Existing rows
 * start without one. Neither the key nor its completion is listed: the change trigger
 * compares listed columns only, so the generation and the log stay.
 */
export default {
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
} satisfies SqlMigration
