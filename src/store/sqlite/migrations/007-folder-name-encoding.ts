import type { SqlMigration } from '../../run-migrations.js'

/**
 * Names as PostgreSQL already holds them (it refuses bytes that are not UTF-8 and NUL
 * on input): a name the service cannot read back exactly cannot be listed reliably.
 */
export default {
  name: '007-folder-name-encoding',
  refuseRows: {
    query: `WITH RECURSIVE folder_name_positions(i) AS (
  SELECT 1 UNION ALL SELECT i + 1 FROM folder_name_positions WHERE i < 255)
        SELECT id FROM folders f WHERE (instr(CAST(f.name AS BLOB), x'00') > 0 OR EXISTS (
     SELECT 1 FROM folder_name_positions p
      WHERE p.i <= length(f.name) AND substr(f.name, p.i, 1) NOT IN ('', char(65534), char(65535))
        AND CAST(substr(f.name, p.i, 1) AS BLOB) <> CAST(char(unicode(substr(f.name, p.i, 1))) AS BLOB))) ORDER BY id LIMIT 20`,
    rule: `a folder name must be text in valid UTF-8, without NUL`,
  },
  sql: `
      CREATE TABLE folder_name_positions (i INTEGER PRIMARY KEY NOT NULL) STRICT;
      INSERT INTO folder_name_positions (i)
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 255) SELECT i FROM n;
      CREATE TRIGGER folders_name_encoding_insert BEFORE INSERT ON folders
      WHEN (instr(CAST(NEW.name AS BLOB), x'00') > 0 OR EXISTS (
     SELECT 1 FROM folder_name_positions p
      WHERE p.i <= length(NEW.name) AND substr(NEW.name, p.i, 1) NOT IN ('', char(65534), char(65535))
        AND CAST(substr(NEW.name, p.i, 1) AS BLOB) <> CAST(char(unicode(substr(NEW.name, p.i, 1))) AS BLOB)))
      BEGIN
        SELECT RAISE(ABORT, 'folders: a folder name must be text in valid UTF-8, without NUL');
      END;
      CREATE TRIGGER folders_name_encoding_update BEFORE UPDATE OF name ON folders
      WHEN (instr(CAST(NEW.name AS BLOB), x'00') > 0 OR EXISTS (
     SELECT 1 FROM folder_name_positions p
      WHERE p.i <= length(NEW.name) AND substr(NEW.name, p.i, 1) NOT IN ('', char(65534), char(65535))
        AND CAST(substr(NEW.name, p.i, 1) AS BLOB) <> CAST(char(unicode(substr(NEW.name, p.i, 1))) AS BLOB)))
      BEGIN
        SELECT RAISE(ABORT, 'folders: a folder name must be text in valid UTF-8, without NUL');
      END;
    `,
} satisfies SqlMigration
