import type { SqlMigration } from '../../run-migrations.js'

/**
 * The listing generation of each owner (the twin of SQLite's 003): a number that changes,
 * in the writing transaction, whenever anything a listing of that owner shows changes.
 * Every instance keys its cached answers on it and reads it with the session, so a write
 * committed by any instance, service or console shows in the very next listing. Values
 * come from a sequence: never reused, and nextval() takes no lock, so writers of different
 * owners do not wait on each other; writers of one owner serialise on that user's row,
 * as the root folder count already makes them do. Statement-level triggers: a bulk
 * statement bumps each owner it touches once, not once per row.
 */
export default {
  name: '003-listing-generations',
  sql: `
      CREATE SEQUENCE listing_generation_seq;
      ALTER TABLE users ADD COLUMN listing_generation bigint NOT NULL
        DEFAULT nextval('listing_generation_seq');

      CREATE FUNCTION users_generation_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        NEW.listing_generation := nextval('listing_generation_seq');
        RETURN NEW;
      END;
      $$;

      CREATE TRIGGER users_generation_update BEFORE UPDATE OF id, username, avatar_url ON users
        FOR EACH ROW EXECUTE FUNCTION users_generation_trigger();

      CREATE FUNCTION folders_generation_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          UPDATE users SET listing_generation = nextval('listing_generation_seq')
           WHERE id IN (SELECT DISTINCT owner_id FROM new_folders);
        ELSIF TG_OP = 'DELETE' THEN
          UPDATE users SET listing_generation = nextval('listing_generation_seq')
           WHERE id IN (SELECT DISTINCT owner_id FROM old_folders);
        ELSE
          -- Only rows whose listed columns changed: the count triggers' own updates (which
          -- set child_count alone) and no-op updates bump nothing.
          UPDATE users SET listing_generation = nextval('listing_generation_seq')
           WHERE id IN (SELECT DISTINCT owner_id FROM (
                   (SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders
                    EXCEPT ALL
                    SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders)
                   UNION ALL
                   (SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders
                    EXCEPT ALL
                    SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders)
                 ) AS changed);
        END IF;
        RETURN NULL;
      END;
      $$;

      CREATE TRIGGER folders_generation_insert AFTER INSERT ON folders
        REFERENCING NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_generation_trigger();
      CREATE TRIGGER folders_generation_delete AFTER DELETE ON folders
        REFERENCING OLD TABLE AS old_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_generation_trigger();
      -- (A column list would be cheaper, but PostgreSQL refuses one beside transition tables.)
      CREATE TRIGGER folders_generation_update AFTER UPDATE ON folders
        REFERENCING OLD TABLE AS old_folders NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folders_generation_trigger();
    `,
} satisfies SqlMigration
