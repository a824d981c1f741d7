/**
 * The SQL of the change log and listing generations that live code needs: the import bumps
 * generations with it (postgres-import.ts) and the generation-cost bench makes the change
 * trigger function again without the log. It is what the migrations left in the schema
 * (006, 010 and 015 in migrations/); those keep their own copy as it ran, since a migration is
 * history (migrations/index.ts), and test/unit/migration-steps.test.ts checks that the
 * function made here is the migrated one.
 */

/** Now in microseconds since the epoch. */
const NOW_MICROS = '(extract(epoch FROM clock_timestamp()) * 1000000)::int8'

/**
 * An owner's next listing generation: above the previous one and at least the clock, so a
 * value never repeats for an owner, not even after a restored backup. Writers of one owner
 * take its users row lock to bump it, so per owner the order is commit order.
 */
export const NEXT_GENERATION = `greatest(listing_generation + 1, ${NOW_MICROS})`

const LISTED = 'id, name, folder_id, owner_id, is_deleted, created_at, updated_at'

/**
 * The whole old state a row of place 0 carries (migration 015), from which the tree feed
 * reads the tree as it was at a position; a row of place 1 carries none.
 */
const OLD_STATE = 'NOT is_deleted AS live, name, created_at, updated_at'
const NO_STATE =
  'NULL::boolean AS live, NULL::text AS name, NULL::timestamptz AS created_at, NULL::timestamptz AS updated_at'

/**
 * The (owner, parent, folder) places a statement changed, per trigger operation, with the
 * side of the change each describes: `place` 0 for the folder's old state, 1 for a place it
 * was not in before: inserted, moved, given to another owner, or undeleted (so the log
 * tells an undelete, after which the folder's subtree is back in the trees that hold its
 * parent, from a rename, which changes the folder alone). Only rows whose listed columns
 * changed: the count triggers' own updates (child_count alone) and no-op updates change no
 * place.
 */
const PLACED_CHANGES = {
  INSERT: `SELECT owner_id, folder_id AS parent_id, id AS folder_id, 1 AS place, ${NO_STATE} FROM new_folders`,
  DELETE: `SELECT owner_id, folder_id AS parent_id, id AS folder_id, 0 AS place, ${OLD_STATE} FROM old_folders`,
  UPDATE: `SELECT owner_id, folder_id AS parent_id, id AS folder_id, 0 AS place, ${OLD_STATE} FROM (
        SELECT ${LISTED} FROM old_folders EXCEPT SELECT ${LISTED} FROM new_folders) AS was
      UNION ALL
      SELECT n.owner_id, n.folder_id, n.id, 1, ${NO_STATE} FROM (
        SELECT ${LISTED} FROM new_folders EXCEPT SELECT ${LISTED} FROM old_folders) AS n
       WHERE NOT EXISTS (SELECT 1 FROM old_folders AS o
                          WHERE o.id = n.id AND o.owner_id = n.owner_id
                            AND o.folder_id IS NOT DISTINCT FROM n.folder_id
                            AND (n.is_deleted OR NOT o.is_deleted))`,
}

type Operation = keyof typeof PLACED_CHANGES

/** One statement: bump each owner with a changed place once, then log the places (`log`). */
function recordChanges(places: string, log: boolean): string {
  const bump = `UPDATE users SET listing_generation = ${NEXT_GENERATION}
       WHERE id IN (SELECT owner_id FROM changed)`
  if (!log) return `WITH changed AS (${places}) ${bump};`
  return `WITH changed AS (SELECT DISTINCT * FROM (${places}) AS p),
      bumped AS (${bump} RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id, place, live, name, created_at, updated_at)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id, c.place, c.live, c.name, c.created_at, c.updated_at
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.place, c.parent_id, c.folder_id;`
}

/**
 * The statement-level trigger function of folders that bumps listing generations and writes
 * the change log, as the migrations left it; `log` false leaves the log out. A statement that
 * changed no row returns at once: an UPDATE fires its statement triggers even when it
 * matches nothing, so without this a trigger whose own update matches nothing would fire
 * itself forever.
 */
export function changesFunction({ log }: { log: boolean }): string {
  const branch = (operation: Operation, rows: string) => `
        IF NOT EXISTS (SELECT 1 FROM ${rows}) THEN RETURN NULL; END IF;
        ${recordChanges(PLACED_CHANGES[operation], log)}`
  return `
    CREATE OR REPLACE FUNCTION folders_changes_trigger() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN ${branch('INSERT', 'new_folders')}
      ELSIF TG_OP = 'DELETE' THEN ${branch('DELETE', 'old_folders')}
      ELSE ${branch('UPDATE', 'new_folders')}
      END IF;
      RETURN NULL;
    END;
    $$;
  `
}
