import type { SqlMigration } from '../../run-migrations.js'

/**
 * Bounds of what every listing repeats in each folder's owner object: without them one
 * huge username made every page of its owner huge (and past 512 MB, unserialisable).
 * SQLite cannot add a CHECK to an existing table without rebuilding it under its
 * foreign keys, so triggers enforce the same rule on every insert and update.
 */
export default {
  name: '005-user-bounds',
  refuseRows: {
    query: `SELECT id FROM users u WHERE (length(u.username) NOT BETWEEN 1 AND 255 OR instr(u.username, char(0)) > 0
    OR u.username GLOB '*[' || char(1) || '-' || char(31) || char(127) || ']*'
    OR length(u.avatar_url) > 2048) ORDER BY id LIMIT 20`,
    rule: `a username must be 1 to 255 characters without control characters, an avatar_url at most 2,048 characters`,
  },
  sql: `
      CREATE TRIGGER users_bounds_insert BEFORE INSERT ON users
      WHEN (length(NEW.username) NOT BETWEEN 1 AND 255 OR instr(NEW.username, char(0)) > 0
    OR NEW.username GLOB '*[' || char(1) || '-' || char(31) || char(127) || ']*'
    OR length(NEW.avatar_url) > 2048)
      BEGIN
        SELECT RAISE(ABORT, 'users: a username must be 1 to 255 characters without control characters, an avatar_url at most 2,048 characters');
      END;
      CREATE TRIGGER users_bounds_update BEFORE UPDATE OF username, avatar_url ON users
      WHEN (length(NEW.username) NOT BETWEEN 1 AND 255 OR instr(NEW.username, char(0)) > 0
    OR NEW.username GLOB '*[' || char(1) || '-' || char(31) || char(127) || ']*'
    OR length(NEW.avatar_url) > 2048)
      BEGIN
        SELECT RAISE(ABORT, 'users: a username must be 1 to 255 characters without control characters, an avatar_url at most 2,048 characters');
      END;
    `,
} satisfies SqlMigration
