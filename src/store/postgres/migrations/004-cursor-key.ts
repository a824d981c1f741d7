import type { SqlMigration } from '../../run-migrations.js'

/**
 * The key that seals continuation tokens (src/tokens/listing-cursor.ts), kept with the data so
 * that every instance on this database shares it unconfigured. gen_random_uuid() draws
 * from PostgreSQL's cryptographic generator (no extension needed); two of them carry
 * 244 random bits, which SHA-256 folds into the 32-byte key.
 */
export default {
  name: '004-cursor-key',
  sql: `
      CREATE TABLE service_keys (
        name  text PRIMARY KEY,
        value bytea NOT NULL CHECK (octet_length(value) = 32)
      );
      INSERT INTO service_keys (name, value)
      VALUES ('cursor', sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')));
    `,
} satisfies SqlMigration
