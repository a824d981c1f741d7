import type { SqlMigration } from '../../run-migrations.js'

/**
 * The listing generation of each owner: a number that changes, in the writing
 * transaction, whenever anything a listing of that owner shows changes (a folder of
 * theirs inserted, deleted, (un)deleted, renamed, moved, re-timed; their username or
 * avatar). Cached answers are keyed on it, so whoever writes (this service, another
 * process, a SQL console) the next listing is right. Values come from one global counter,
 * so a generation is never reused, not even by a user deleted and created again with the
 * same id. The counter row costs a writer nothing extra in contention: SQLite has one
 * writer at a time anyway.
 */
export default {
  name: '003-listing-generations',
  sql: `
      CREATE TABLE listing_generation_seq (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        value INTEGER NOT NULL
      ) STRICT;
      INSERT INTO listing_generation_seq (id, value) VALUES (1, 1);
      ALTER TABLE users ADD COLUMN listing_generation INTEGER NOT NULL DEFAULT 1;

      CREATE TRIGGER users_generation_insert AFTER INSERT ON users
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id = NEW.id;
      END;

      CREATE TRIGGER users_generation_update AFTER UPDATE OF id, username, avatar_url ON users
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id = NEW.id;
      END;

      CREATE TRIGGER folders_generation_insert AFTER INSERT ON folders
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id = NEW.owner_id;
      END;

      CREATE TRIGGER folders_generation_delete AFTER DELETE ON folders
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id = OLD.owner_id;
      END;

      -- Every column a listing shows, or that decides whether and where a folder is listed
      -- (child_count is not one: it changes only with a child's own insert, move or delete).
      CREATE TRIGGER folders_generation_update
        AFTER UPDATE OF id, name, folder_id, owner_id, is_deleted, created_at, updated_at ON folders
      BEGIN
        UPDATE listing_generation_seq SET value = value + 1;
        UPDATE users SET listing_generation = (SELECT value FROM listing_generation_seq)
         WHERE id IN (OLD.owner_id, NEW.owner_id);
      END;
    `,
} satisfies SqlMigration
