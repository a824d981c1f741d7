import type { SqlMigration } from '../../run-migrations.js'

/**
 * The key that seals continuation tokens (src/tokens/listing-cursor.ts), made here from
 * SQLite's cryptographic generator and kept with the data: whoever opens this
 * database opens its tokens, and a token of another database never opens.
 */
export default {
  name: '004-cursor-key',
  sql: `
      CREATE TABLE service_keys (
        name  TEXT PRIMARY KEY NOT NULL,
        value BLOB NOT NULL CHECK (length(value) = 32)
      ) STRICT;
      INSERT INTO service_keys (name, value) VALUES ('cursor', randomblob(32));
    `,
} satisfies SqlMigration
