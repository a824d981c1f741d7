/**
 * The SQL of the change log and listing generations that live code needs: the import
 * replays the lifted triggers with it (sqlite-import.ts) and the generation-cost bench
 * makes the triggers again without the log. It is what the migrations left in the schema
 * (006, 008, 010 and 015 in migrations/); those keep their own copy as it ran, since a
 * migration is history (migrations/index.ts), and test/unit/migration-steps.test.ts checks
 * that the triggers made here are the migrated ones.
 */

/**
 * Now in microseconds since the epoch, in what every writer's SQLite has: julianday() (the
 * command line of Debian 12 and Ubuntu 22.04 lacks unixepoch('subsec'), 3.42, and returns
 * NULL for it). SQLite's clock counts milliseconds: rounding to the millisecond removes the
 * floating-point error of the Julian day (about 40 microseconds today), so the value is the
 * clock's own.
 */
const NOW_MICROS = "CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000"

/**
 * An owner's next listing generation: above the previous one and at least the clock, so a
 * value never repeats for an owner, not even after a restored backup.
 */
const NEXT_GENERATION = `max(listing_generation + 1, ${NOW_MICROS})`

/**
 * The first generation of a user inserted (or imported): also above the last one of a
 * deleted user with the same id, which SQLite's millisecond clock alone would not ensure
 * for a user deleted and made again within one millisecond.
 */
export const FIRST_GENERATION = `max(${NEXT_GENERATION},
  coalesce((SELECT generation + 1 FROM retired_generations WHERE owner_id = users.id), 0))`

/**
 * The message of a write refused because SQLite would delete a row without firing its
 * triggers, so counts, generations and the change log would miss it.
 */
const replaceRefused = (table: string) =>
  `${table}: INSERT OR REPLACE of an existing row is refused (it deletes the old row without ` +
  `firing triggers); use INSERT ... ON CONFLICT (id) DO UPDATE`

/**
 * Log row of `folder` (OLD or NEW) under its owner and parent, at the owner's generation.
 * Its id is its place in that generation: every trigger run bumps the generation of each
 * owner it logs for, so a generation holds one row, or two for a move (the old place 0,
 * the new place 1). The old state's row carries the whole state the folder had (migration
 * 015): the tree feed reads the tree as it was at a position from it.
 */
const logFolder = (row: 'OLD' | 'NEW', extra = '') =>
  row === 'OLD'
    ? `
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id, live, name, created_at, updated_at)
    SELECT id, listing_generation, 0, 'folder', OLD.folder_id, OLD.id, OLD.is_deleted = 0, OLD.name, OLD.created_at, OLD.updated_at
      FROM users WHERE id = OLD.owner_id ${extra};`
    : `
  INSERT INTO folder_changes (owner_id, generation, id, kind, parent_id, folder_id)
    SELECT id, listing_generation, 1, 'folder', NEW.folder_id, NEW.id
      FROM users WHERE id = NEW.owner_id ${extra};`

/** The 'owner' (or 'reset') row of the users matching `where`, at their generation. */
export const logOwners = (kind: 'owner' | 'reset', where: string) => `
  INSERT INTO folder_changes (owner_id, generation, id, kind)
    SELECT id, listing_generation, 0, '${kind}' FROM users WHERE ${where};`

/** An update changed a column a listing shows, or that decides whether and where a folder is listed. */
const FOLDER_CHANGED = ['id', 'name', 'folder_id', 'owner_id', 'is_deleted', 'created_at', 'updated_at']
  .map((column) => `OLD.${column} IS NOT NEW.${column}`)
  .join(' OR ')

/**
 * The folder has a place it was not in before: moved, given to another owner, new id, or
 * undeleted (so the log tells an undelete, whose subtree comes back into every tree that
 * holds its parent, from a rename, which changes the folder alone).
 */
const NEW_PLACE =
  'OLD.owner_id IS NOT NEW.owner_id OR OLD.folder_id IS NOT NEW.folder_id OR OLD.id IS NOT NEW.id' +
  ' OR (OLD.is_deleted = 1 AND NEW.is_deleted = 0)'

/**
 * The five triggers that bump listing generations and write the change log, as the
 * migrations left them. `log` false leaves the log out: the bench measures what the log
 * costs a writer with it. One trigger per event, so the bump always precedes the log row
 * that reads it.
 */
export function changeTriggers({ log }: { log: boolean }): string {
  const bump = (ids: string, generation = NEXT_GENERATION) =>
    `UPDATE users SET listing_generation = ${generation} WHERE id IN (${ids});`
  const when = (sql: string) => (log ? sql : '')
  return `
    CREATE TRIGGER folders_changes_insert AFTER INSERT ON folders
    BEGIN
      SELECT RAISE(ABORT, '${replaceRefused('folders')}')
       WHERE EXISTS (SELECT 1 FROM replaced_rows WHERE tbl = 'folders' AND id = NEW.id);
      ${bump('NEW.owner_id')}
      ${when(logFolder('NEW'))}
    END;

    CREATE TRIGGER folders_changes_delete AFTER DELETE ON folders
    BEGIN
      ${bump('OLD.owner_id')}
      ${when(logFolder('OLD'))}
    END;

    CREATE TRIGGER users_changes_insert AFTER INSERT ON users
    BEGIN
      SELECT RAISE(ABORT, '${replaceRefused('users')}')
       WHERE EXISTS (SELECT 1 FROM replaced_rows WHERE tbl = 'users' AND id = NEW.id);
      ${bump('NEW.id', FIRST_GENERATION)}
      ${when(logOwners('owner', 'id = NEW.id'))}
    END;

    CREATE TRIGGER users_changes_update AFTER UPDATE OF id, username, avatar_url ON users
      WHEN OLD.id IS NOT NEW.id OR OLD.username IS NOT NEW.username OR OLD.avatar_url IS NOT NEW.avatar_url
    BEGIN
      ${bump('NEW.id')}
      ${when(logOwners('owner', 'id = NEW.id'))}
    END;

    CREATE TRIGGER folders_changes_update
      AFTER UPDATE OF id, name, folder_id, owner_id, is_deleted, created_at, updated_at ON folders
      WHEN ${FOLDER_CHANGED}
    BEGIN
      UPDATE users SET listing_generation = ${NEXT_GENERATION}
       WHERE id IN (OLD.owner_id, NEW.owner_id);
      ${when(logFolder('OLD'))}
      ${when(logFolder('NEW', `AND (${NEW_PLACE})`))}
    END;
  `
}
