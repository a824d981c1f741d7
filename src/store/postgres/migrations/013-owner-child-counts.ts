import type { SqlMigration } from '../../run-migrations.js'

/**
 * A folder's child_count is the number of folders its owner's listing of it pages through:
 * its live children of the same owner (the twin of SQLite's 013). The count trigger of 006
 * summed its deltas per parent and owner, and UPDATE ... FROM applies one matching row per
 * target only: a statement giving a folder away with its children (the one way the foreign
 * key allows) added the new owner's children without taking the old owner's away, and the
 * count doubled. Deltas are now summed per parent, a child counts only under a parent of
 * its owner, and a folder whose own owner changed is counted again (every child's standing
 * changes at once). Statement-level still: one UPDATE per statement however many rows.
 * Every count is then taken again, and only the rows that differ are written; the count
 * updates set child_count alone, which the generation and change-log triggers ignore.
 */
/**
 * The one count statement of the trigger, over `changes` (folder_id, owner_id, d: +1 for a
 * live row the statement made, -1 for one it took away) and `given` (ids of folders whose
 * own owner changed, recounted whole and left out of the deltas).
 */
const applyCounts = (changes: string, given: string) => `
          WITH given AS (${given}),
          changes AS (${changes}),
          delta AS (
            SELECT p.id, sum(c.d)::int AS n FROM changes AS c
              JOIN folders AS p ON p.id = c.folder_id AND p.owner_id = c.owner_id
             WHERE p.id NOT IN (SELECT id FROM given)
             GROUP BY p.id HAVING sum(c.d) <> 0),
          children AS (
            UPDATE folders AS p SET child_count = p.child_count + delta.n
              FROM delta WHERE p.id = delta.id
            RETURNING 1),
          recounted AS (
            UPDATE folders AS p SET child_count = (
              SELECT count(*) FROM folders AS c
               WHERE c.owner_id = p.owner_id AND c.folder_id = p.id AND NOT c.is_deleted)
             WHERE p.id IN (SELECT id FROM given)
            RETURNING 1)
          UPDATE users AS u SET root_folder_count = u.root_folder_count + r.n
            FROM (SELECT owner_id, sum(d)::int AS n FROM changes WHERE folder_id IS NULL
                   GROUP BY owner_id HAVING sum(d) <> 0) AS r
           WHERE u.id = r.owner_id;`

const MADE = 'SELECT folder_id, owner_id, 1 AS d FROM new_folders WHERE NOT is_deleted'
const TAKEN = 'SELECT folder_id, owner_id, -1 AS d FROM old_folders WHERE NOT is_deleted'
const NONE_GIVEN = 'SELECT NULL::uuid AS id WHERE false'

export default {
  name: '013-owner-child-counts',
  sql: `
      CREATE OR REPLACE FUNCTION folder_counts_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
          ${applyCounts(MADE, NONE_GIVEN)}
        ELSIF TG_OP = 'DELETE' THEN
          IF NOT EXISTS (SELECT 1 FROM old_folders) THEN RETURN NULL; END IF;
          ${applyCounts(TAKEN, NONE_GIVEN)}
        ELSE
          IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
          ${applyCounts(
            `${TAKEN} UNION ALL ${MADE}`,
            `SELECT n.id FROM new_folders AS n JOIN old_folders AS o ON o.id = n.id
              WHERE o.owner_id <> n.owner_id`,
          )}
        END IF;
        RETURN NULL;
      END;
      $$;

      UPDATE folders AS p SET child_count = coalesce(c.n, 0)
        FROM folders AS f
        LEFT JOIN (SELECT folder_id, owner_id, count(*)::int AS n FROM folders
                    WHERE NOT is_deleted AND folder_id IS NOT NULL GROUP BY folder_id, owner_id) AS c
          ON c.folder_id = f.id AND c.owner_id = f.owner_id
       WHERE p.id = f.id AND p.child_count <> coalesce(c.n, 0);
    `,
} satisfies SqlMigration
