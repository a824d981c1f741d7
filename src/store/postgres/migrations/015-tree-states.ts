import type { SqlMigration } from '../../run-migrations.js'

/**
 * The tree feed (docs/api.md "Folder tree") reads the tree as it was at a cursor's position:
 * a folder's state at a position is the old state of its first log row after it (place 0),
 * "not the owner's" when that row is a new place (place 1), else its row now (the twin of
 * SQLite's 015). So a row of an old state now carries the whole state: whether the folder
 * was live, its name and times (NULL on rows logged before: a cursor that needs them is
 * expired). One index finds a folder's first row after a position with one seek; another
 * reads an owner's rows of every parent after a position, in order.
 */
export default {
  name: '015-tree-states',
  sql: `
      ALTER TABLE folder_changes ADD COLUMN live boolean;
      ALTER TABLE folder_changes ADD COLUMN name text COLLATE "C";
      ALTER TABLE folder_changes ADD COLUMN created_at timestamptz(3);
      ALTER TABLE folder_changes ADD COLUMN updated_at timestamptz(3);
      CREATE INDEX folder_changes_by_folder ON folder_changes (owner_id, folder_id, generation, id)
        WHERE kind = 'folder';
      CREATE INDEX folder_changes_by_position ON folder_changes (owner_id, generation, id);

    CREATE OR REPLACE FUNCTION folders_changes_trigger() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN 
        IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id, 1 AS place, NULL::boolean AS live, NULL::text AS name, NULL::timestamptz AS created_at, NULL::timestamptz AS updated_at FROM new_folders) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id, place, live, name, created_at, updated_at)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id, c.place, c.live, c.name, c.created_at, c.updated_at
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.place, c.parent_id, c.folder_id;
      ELSIF TG_OP = 'DELETE' THEN 
        IF NOT EXISTS (SELECT 1 FROM old_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id, 0 AS place, NOT is_deleted AS live, name, created_at, updated_at FROM old_folders) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id, place, live, name, created_at, updated_at)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id, c.place, c.live, c.name, c.created_at, c.updated_at
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.place, c.parent_id, c.folder_id;
      ELSE 
        IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id, 0 AS place, NOT is_deleted AS live, name, created_at, updated_at FROM (
        SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders EXCEPT SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders) AS was
      UNION ALL
      SELECT n.owner_id, n.folder_id, n.id, 1, NULL::boolean AS live, NULL::text AS name, NULL::timestamptz AS created_at, NULL::timestamptz AS updated_at FROM (
        SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders EXCEPT SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders) AS n
       WHERE NOT EXISTS (SELECT 1 FROM old_folders AS o
                          WHERE o.id = n.id AND o.owner_id = n.owner_id
                            AND o.folder_id IS NOT DISTINCT FROM n.folder_id
                            AND (n.is_deleted OR NOT o.is_deleted))) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id, place, live, name, created_at, updated_at)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id, c.place, c.live, c.name, c.created_at, c.updated_at
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.place, c.parent_id, c.folder_id;
      END IF;
      RETURN NULL;
    END;
    $$;
    `,
} satisfies SqlMigration
