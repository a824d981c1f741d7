import type { SqlMigration } from '../../run-migrations.js'

export default {
  name: '001-initial-schema',
  sql: `
      CREATE TABLE users (
        id            TEXT PRIMARY KEY NOT NULL,
        username      TEXT NOT NULL UNIQUE,
        email         TEXT,
        avatar_url    TEXT,
        password_hash TEXT,
        is_suspended  INTEGER NOT NULL DEFAULT 0 CHECK (is_suspended IN (0, 1)),
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;

      CREATE TABLE sessions (
        id         TEXT PRIMARY KEY NOT NULL,
        user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX sessions_by_user ON sessions (user_id);

      -- A parent must belong to the same owner: the composite foreign key says so.
      CREATE TABLE folders (
        id         TEXT PRIMARY KEY NOT NULL,
        name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255 AND name = trim(name)),
        folder_id  TEXT,
        owner_id   TEXT NOT NULL REFERENCES users (id),
        is_deleted INTEGER NOT NULL DEFAULT 0 CHECK (is_deleted IN (0, 1)),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (id, owner_id),
        FOREIGN KEY (folder_id, owner_id) REFERENCES folders (id, owner_id)
      ) STRICT, WITHOUT ROWID;

      -- Serves the listing page and its count from the index alone (it covers every
      -- returned column) and only ever touches the one owner's live children of one parent.
      CREATE INDEX folders_listing
        ON folders (owner_id, folder_id, name, created_at, id, updated_at)
        WHERE is_deleted = 0;

      CREATE TABLE files (
        id         TEXT PRIMARY KEY NOT NULL,
        name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255 AND name = trim(name)),
        folder_id  TEXT,
        owner_id   TEXT NOT NULL REFERENCES users (id),
        size       INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
        is_deleted INTEGER NOT NULL DEFAULT 0 CHECK (is_deleted IN (0, 1)),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        FOREIGN KEY (folder_id, owner_id) REFERENCES folders (id, owner_id)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX files_by_folder ON files (owner_id, folder_id);
    `,
} satisfies SqlMigration
