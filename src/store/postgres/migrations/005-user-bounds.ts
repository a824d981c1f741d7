import type { SqlMigration } from '../../run-migrations.js'

/**
 * Bounds of what every listing repeats in each folder's owner object: without them one
 * huge username made every page of its owner huge (and past 512 MB, unserialisable).
 */
export default {
  name: '005-user-bounds',
  refuseRows: {
    query: `SELECT id::text AS id FROM users WHERE NOT (char_length(username) BETWEEN 1 AND 255 AND username !~ '[\\x01-\\x1f\\x7f]'
  AND (avatar_url IS NULL OR char_length(avatar_url) <= 2048)) ORDER BY id LIMIT 20`,
    rule: `a username must be 1 to 255 characters without control characters, an avatar_url at most 2,048 characters`,
  },
  sql: `ALTER TABLE users ADD CONSTRAINT users_bounds CHECK (char_length(username) BETWEEN 1 AND 255 AND username !~ '[\\x01-\\x1f\\x7f]'
  AND (avatar_url IS NULL OR char_length(avatar_url) <= 2048))`,
} satisfies SqlMigration
