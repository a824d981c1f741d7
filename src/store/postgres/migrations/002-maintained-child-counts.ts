import type { SqlMigration } from '../../run-migrations.js'

/**
 * Exact live-child counts (the twin of SQLite's 002), so a listing's `total` is one row
 * read instead of a count over every child. Statement-level triggers with transition
 * tables: a bulk INSERT ... SELECT of 5,000 rows costs one UPDATE per distinct parent,
 * not one per row. The increments run in the writer's transaction and take the parent
 * row's lock, so concurrent writers serialise on it and the count stays exact.
 */
export default {
  name: '002-maintained-child-counts',
  sql: `
      ALTER TABLE folders ADD COLUMN child_count integer NOT NULL DEFAULT 0;
      ALTER TABLE users ADD COLUMN root_folder_count integer NOT NULL DEFAULT 0;

      UPDATE folders AS p SET child_count = c.n
        FROM (SELECT folder_id, owner_id, count(*) AS n FROM folders
               WHERE NOT is_deleted AND folder_id IS NOT NULL GROUP BY folder_id, owner_id) AS c
       WHERE p.id = c.folder_id AND p.owner_id = c.owner_id;
      UPDATE users AS u SET root_folder_count = c.n
        FROM (SELECT owner_id, count(*) AS n FROM folders
               WHERE NOT is_deleted AND folder_id IS NULL GROUP BY owner_id) AS c
       WHERE u.id = c.owner_id;

      -- Applies the live folders of one transition table to the counts, with sign +1 or -1.
      CREATE FUNCTION folder_counts_apply(sign integer, changed_folders folders[]) RETURNS void
      LANGUAGE sql AS $$
        UPDATE folders AS p SET child_count = p.child_count + sign * c.n
          FROM (SELECT f.folder_id, count(*) AS n FROM unnest(changed_folders) AS f
                 WHERE NOT f.is_deleted AND f.folder_id IS NOT NULL GROUP BY f.folder_id) AS c
         WHERE p.id = c.folder_id;
        UPDATE users AS u SET root_folder_count = u.root_folder_count + sign * c.n
          FROM (SELECT f.owner_id, count(*) AS n FROM unnest(changed_folders) AS f
                 WHERE NOT f.is_deleted AND f.folder_id IS NULL GROUP BY f.owner_id) AS c
         WHERE u.id = c.owner_id;
      $$;

      CREATE FUNCTION folder_counts_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        -- The count updates below fire this trigger again (UPDATE on folders); they change
        -- no parent, owner or deletion flag, so the nested call has nothing to do.
        IF pg_trigger_depth() > 1 THEN
          RETURN NULL;
        END IF;
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
          PERFORM folder_counts_apply(-1, (SELECT coalesce(array_agg(o::folders), '{}') FROM old_folders AS o));
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
          PERFORM folder_counts_apply(1, (SELECT coalesce(array_agg(n::folders), '{}') FROM new_folders AS n));
        END IF;
        RETURN NULL;
      END;
      $$;

      CREATE TRIGGER folders_counts_insert AFTER INSERT ON folders
        REFERENCING NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folder_counts_trigger();
      CREATE TRIGGER folders_counts_update AFTER UPDATE ON folders
        REFERENCING OLD TABLE AS old_folders NEW TABLE AS new_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folder_counts_trigger();
      CREATE TRIGGER folders_counts_delete AFTER DELETE ON folders
        REFERENCING OLD TABLE AS old_folders
        FOR EACH STATEMENT EXECUTE FUNCTION folder_counts_trigger();
    `,
} satisfies SqlMigration
