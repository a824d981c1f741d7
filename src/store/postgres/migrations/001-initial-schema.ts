import type { SqlMigration } from '../../run-migrations.js'

export default {
  name: '001-initial-schema',
  sql: `
      CREATE TABLE users (
        id            uuid PRIMARY KEY,
        username      text COLLATE "C" NOT NULL UNIQUE,
        email         text,
        avatar_url    text,
        password_hash text,
        is_suspended  boolean NOT NULL DEFAULT false,
        created_at    timestamptz(3) NOT NULL,
        updated_at    timestamptz(3) NOT NULL
      );

      CREATE TABLE sessions (
        id         uuid PRIMARY KEY,
        user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz(3) NOT NULL,
        expires_at timestamptz(3)
      );
      CREATE INDEX sessions_by_user ON sessions (user_id);

      -- A parent must belong to the same owner: the composite foreign key says so, and
      -- UNIQUE (id, owner_id) is what it references.
      CREATE TABLE folders (
        id         uuid PRIMARY KEY,
        name       text COLLATE "C" NOT NULL
                   CONSTRAINT folders_name_trimmed
                   CHECK (char_length(name) BETWEEN 1 AND 255 AND name = btrim(name)),
        folder_id  uuid,
        owner_id   uuid NOT NULL REFERENCES users (id),
        is_deleted boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        CONSTRAINT folders_id_owner UNIQUE (id, owner_id),
        CONSTRAINT folders_parent_same_owner
          FOREIGN KEY (folder_id, owner_id) REFERENCES folders (id, owner_id)
      );

      -- Serves the listing page and its count as index-only scans (it covers every
      -- returned column) over the one owner's live children of one parent, already in
      -- listing order (name is COLLATE "C"), so LIMIT stops early.
      CREATE INDEX folders_listing
        ON folders (owner_id, folder_id, name, created_at, id) INCLUDE (updated_at)
        WHERE NOT is_deleted;

      CREATE TABLE files (
        id         uuid PRIMARY KEY,
        name       text COLLATE "C" NOT NULL
                   CONSTRAINT files_name_trimmed
                   CHECK (char_length(name) BETWEEN 1 AND 255 AND name = btrim(name)),
        folder_id  uuid,
        owner_id   uuid NOT NULL REFERENCES users (id),
        size       bigint NOT NULL DEFAULT 0 CHECK (size >= 0),
        is_deleted boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        CONSTRAINT files_parent_same_owner
          FOREIGN KEY (folder_id, owner_id) REFERENCES folders (id, owner_id)
      );
      CREATE INDEX files_by_folder ON files (owner_id, folder_id);
    `,
} satisfies SqlMigration
