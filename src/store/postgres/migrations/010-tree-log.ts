import type { SqlMigration } from '../../run-migrations.js'

/**
 * The folder tree feed (docs/api.md "Folder tree") needs the side of each logged place:
 * a folder's parent before a move (its old place), and an undelete told from a rename.
 * Rows logged before have no side (null).
 */
export default {
  name: '010-tree-log',
  sql: `
      ALTER TABLE folder_changes ADD COLUMN place smallint CHECK (place IN (0, 1));
      
    CREATE OR REPLACE FUNCTION folders_changes_trigger() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN 
        IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id, 1 AS place FROM new_folders) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id, place)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id, c.place
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.place, c.parent_id, c.folder_id;
      ELSIF TG_OP = 'DELETE' THEN 
        IF NOT EXISTS (SELECT 1 FROM old_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id, 0 AS place FROM old_folders) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id, place)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id, c.place
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.place, c.parent_id, c.folder_id;
      ELSE 
        IF NOT EXISTS (SELECT 1 FROM new_folders) THEN RETURN NULL; END IF;
        WITH changed AS (SELECT DISTINCT * FROM (SELECT owner_id, folder_id AS parent_id, id AS folder_id, 0 AS place FROM (
        SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders EXCEPT SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders) AS was
      UNION ALL
      SELECT n.owner_id, n.folder_id, n.id, 1 FROM (
        SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM new_folders EXCEPT SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM old_folders) AS n
       WHERE NOT EXISTS (SELECT 1 FROM old_folders AS o
                          WHERE o.id = n.id AND o.owner_id = n.owner_id
                            AND o.folder_id IS NOT DISTINCT FROM n.folder_id
                            AND (n.is_deleted OR NOT o.is_deleted))) AS p),
      bumped AS (UPDATE users SET listing_generation = greatest(listing_generation + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::int8)
       WHERE id IN (SELECT owner_id FROM changed) RETURNING id, listing_generation)
    INSERT INTO folder_changes (owner_id, generation, kind, parent_id, folder_id, place)
    SELECT c.owner_id, b.listing_generation, 'folder', c.parent_id, c.folder_id, c.place
      FROM changed AS c JOIN bumped AS b ON b.id = c.owner_id
     ORDER BY b.listing_generation, c.place, c.parent_id, c.folder_id;
      END IF;
      RETURN NULL;
    END;
    $$;
  
    `,
} satisfies SqlMigration
