import type { SqlMigration } from '../../run-migrations.js'

/**
 * Commit hints for followers (docs/operations.md "Wake-ups"): every change of an owner's
 * listing generation (a folder written, a username or avatar changed, a truncate, an
 * import's reset: all of them bump it through users) NOTIFYs the owner's id on
 * folder_service_changes. One statement-level trigger per event, from the transition
 * tables; the server delivers notifications at commit, never for a rollback, and folds
 * repeats of one owner within a transaction. A hint only: followers still poll.
 */
export default {
  name: '011-change-notifications',
  sql: `
      CREATE FUNCTION users_notify_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          PERFORM pg_notify('folder_service_changes', id::text) FROM old_users;
        ELSE
          PERFORM pg_notify('folder_service_changes', n.id::text)
             FROM new_users AS n JOIN old_users AS o ON o.id = n.id
            WHERE n.listing_generation <> o.listing_generation;
        END IF;
        RETURN NULL;
      END;
      $$;
      CREATE TRIGGER users_notify_update AFTER UPDATE ON users
        REFERENCING OLD TABLE AS old_users NEW TABLE AS new_users
        FOR EACH STATEMENT EXECUTE FUNCTION users_notify_trigger();
      CREATE TRIGGER users_notify_delete AFTER DELETE ON users
        REFERENCING OLD TABLE AS old_users
        FOR EACH STATEMENT EXECUTE FUNCTION users_notify_trigger();
    `,
} satisfies SqlMigration
