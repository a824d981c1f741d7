import type { SqlMigration } from '../../run-migrations.js'

/**
 * A row inserted into folders is counted from its own live children, whatever the writer put
 * in child_count (the twin of SQLite's 014). Here the foreign key keeps a parent's row from
 * being deleted under its children, so a new row's children can only come in the same
 * statement, where the deltas count them; but a writer may name child_count in its insert,
 * and the listing trusts the column. New rows with a count other than 0 are recounted whole,
 * as 013 recounts a folder given to a new owner; a plain insert (count 0) costs nothing more.
 * The function is 013's but for that set.
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
/** New rows whose writer set child_count: recounted whole, as a folder given to a new owner is. */
const WRITTEN_BY_HAND = 'SELECT id FROM new_folders WHERE child_count <> 0'

export default {
  name: '014-inserted-row-counts',
  sql: `
      CREATE OR REPLACE FUNCTION folder_counts_trigger() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
          ${applyCounts(MADE, WRITTEN_BY_HAND)}
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
    `,
} satisfies SqlMigration
