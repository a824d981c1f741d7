import { formatTimestamp } from '../../time.js'
import {
  ImportError,
  type FileRecord,
  type FolderRecord,
  type ImportCounts,
  type ImportData,
  type ImportEntry,
  type SessionRecord,
  type UserRecord,
} from '../store.js'
import type { Client } from './postgres-connections.js'
import { importFaults } from '../import-faults.js'

/**
 * Store.importData for PostgreSQL, run inside the caller's transaction. Rows are written
 * with a few bulk statements (INSERT ... SELECT FROM unnest of one array per column)
 * instead of one round trip each. A bulk statement cannot say which row broke a rule, so
 * everything the database could refuse is checked first, with = ANY(array) look-ups, and
 * reported as the SQLite adapter reports it: the first record at fault, in insertion order
 * (users, sessions, folders parents first, files), with the same wording.
 */

/** Rows per INSERT and ids per look-up: large enough to amortise a round trip, small
 * enough to keep one statement well under statement_timeout and the parameter small. */
export const IMPORT_CHUNK_SIZE = 5000

export async function importRecords(client: Client, data: ImportData): Promise<ImportCounts> {
  // Writers wait until the import commits (readers do not), so nothing stored between the
  // checks and the inserts can make an insert fail; a second import waits its turn.
  await client.query('LOCK TABLE users, sessions, folders, files IN SHARE ROW EXCLUSIVE MODE')
  await checkAgainstStored(client, data)
  return {
    users: await insertRows(client, 'users', USER_COLUMNS, data.users),
    sessions: await insertRows(client, 'sessions', SESSION_COLUMNS, data.sessions),
    folders: await insertRows(client, 'folders', FOLDER_COLUMNS, data.folders),
    files: await insertRows(client, 'files', FILE_COLUMNS, data.files),
  }
}

// ---- checks -------------------------------------------------------------------------

const { idTaken } = importFaults

async function checkAgainstStored(client: Client, data: ImportData): Promise<void> {
  const inFile = {
    users: new Set(data.users.map(({ row }) => row.id)),
    folders: new Set(data.folders.map(({ row }) => row.id)),
  }
  const owned = [...data.folders, ...data.files].map(({ row }) => row)
  const referencedUsers = [
    ...data.sessions.map(({ row }) => row.user_id),
    ...owned.map((row) => row.owner_id),
  ]
  const externalParents = owned.flatMap((row) =>
    row.folder_id === null || inFile.folders.has(row.folder_id) ? [] : [row.folder_id],
  )

  const stored = {
    userIds: await storedKeys(client, 'SELECT id AS key FROM users WHERE id = ANY($1::uuid[])', [
      ...inFile.users,
    ]),
    usernames: await storedKeys(
      client,
      'SELECT username AS key FROM users WHERE username = ANY($1::text[])',
      data.users.map(({ row }) => row.username),
    ),
    sessionIds: await storedKeys(
      client,
      'SELECT id AS key FROM sessions WHERE id = ANY($1::uuid[])',
      data.sessions.map(({ row }) => row.id),
    ),
    referencedUsers: await storedKeys(
      client,
      'SELECT id AS key FROM users WHERE id = ANY($1::uuid[])',
      referencedUsers.filter((id) => !inFile.users.has(id)),
    ),
    folderIds: await storedKeys(
      client,
      'SELECT id AS key FROM folders WHERE id = ANY($1::uuid[])',
      data.folders.map(({ row }) => row.id),
    ),
    parentOwners: await storedPairs(
      client,
      'SELECT id AS key, owner_id AS value FROM folders WHERE id = ANY($1::uuid[])',
      externalParents,
    ),
    fileIds: await storedKeys(
      client,
      'SELECT id AS key FROM files WHERE id = ANY($1::uuid[])',
      data.files.map(({ row }) => row.id),
    ),
  }

  const userExists = (id: string) => inFile.users.has(id) || stored.referencedUsers.has(id)
  // An in-file parent precedes its children and has their owner (validate-import checks);
  // a stored one must have the same owner, deleted or not, as the foreign key requires.
  const parentExists = ({ folder_id, owner_id }: { folder_id: string | null; owner_id: string }) =>
    folder_id === null || inFile.folders.has(folder_id) || stored.parentOwners.get(folder_id) === owner_id
  const ownedFault =
    (takenIds: Set<string>) =>
    (row: FolderRecord | FileRecord): string | null => {
      if (takenIds.has(row.id)) return idTaken(row.id)
      if (!userExists(row.owner_id)) return importFaults.unknownOwner(row.owner_id)
      if (row.folder_id !== null && !parentExists(row)) return importFaults.badParent(row.folder_id)
      return null
    }

  throwFirstFault(data.users, (row) => {
    // SQLite checks the username's UNIQUE index before the primary key: same precedence.
    if (stored.usernames.has(row.username)) return importFaults.usernameTaken(row.username)
    if (stored.userIds.has(row.id)) return idTaken(row.id)
    return null
  })
  throwFirstFault(data.sessions, (row) => {
    if (stored.sessionIds.has(row.id)) return idTaken(row.id)
    if (!userExists(row.user_id)) return importFaults.unknownUser(row.user_id)
    return null
  })
  throwFirstFault(data.folders, ownedFault(stored.folderIds))
  throwFirstFault(data.files, ownedFault(stored.fileIds))
}

function throwFirstFault<T>(entries: ImportEntry<T>[], fault: (row: T) => string | null): void {
  for (const { at, row } of entries) {
    const reason = fault(row)
    if (reason !== null) throw new ImportError(at, reason)
  }
}

/** The distinct `values` that `sql` (selecting `key`, filtering on `= ANY($1)`) finds stored. */
async function storedKeys(client: Client, sql: string, values: string[]): Promise<Set<string>> {
  return new Set((await storedPairs(client, sql, values)).keys())
}

/** Like storedKeys, with the `value` column selected alongside each key. */
async function storedPairs(client: Client, sql: string, values: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>()
  for (const chunk of chunks([...new Set(values)])) {
    const { rows } = await client.query<{ key: string; value?: string }>(sql, [chunk])
    for (const { key, value } of rows) found.set(key, value ?? key)
  }
  return found
}

// ---- bulk inserts -------------------------------------------------------------------

/** One column of a bulk insert: its name, its PostgreSQL type and its value in a record. */
interface Column<T> {
  name: string
  type: string
  value: (row: T) => unknown
}

function column<T>(name: keyof T & string, type: string): Column<T> {
  return { name, type, value: (row) => row[name] }
}

/** Store timestamps are epoch ms; PostgreSQL reads the ISO form exactly (ms, `Z`). */
function timestamp<T>(name: keyof T & string, nullable = false): Column<T> {
  return {
    name,
    type: 'timestamptz',
    value: (row) => {
      const ms = row[name] as number | null
      return nullable && ms === null ? null : formatTimestamp(ms as number)
    },
  }
}

const USER_COLUMNS: Column<UserRecord>[] = [
  column('id', 'uuid'),
  column('username', 'text'),
  column('email', 'text'),
  column('avatar_url', 'text'),
  column('password_hash', 'text'),
  column('is_suspended', 'boolean'),
  timestamp('created_at'),
  timestamp('updated_at'),
]

const SESSION_COLUMNS: Column<SessionRecord>[] = [
  column('id', 'uuid'),
  column('user_id', 'uuid'),
  timestamp('created_at'),
  timestamp('expires_at', true),
]

const FOLDER_COLUMNS: Column<FolderRecord>[] = [
  column('id', 'uuid'),
  column('name', 'text'),
  column('folder_id', 'uuid'),
  column('owner_id', 'uuid'),
  column('is_deleted', 'boolean'),
  timestamp('created_at'),
  timestamp('updated_at'),
]

const FILE_COLUMNS: Column<FileRecord>[] = [
  column('id', 'uuid'),
  column('name', 'text'),
  column('folder_id', 'uuid'),
  column('owner_id', 'uuid'),
  column('size', 'bigint'),
  column('is_deleted', 'boolean'),
  timestamp('created_at'),
  timestamp('updated_at'),
]

/**
 * Inserts the rows in chunks, each one statement whose parameters are one array per column.
 * Foreign keys are checked at the end of each statement, and folders arrive parents first,
 * so a parent is always in the same chunk as its child or an earlier one.
 * `table` and the column names are the constants above, never input.
 */
async function insertRows<T>(
  client: Client,
  table: string,
  columns: Column<T>[],
  entries: ImportEntry<T>[],
): Promise<number> {
  const names = columns.map((c) => c.name).join(', ')
  const arrays = columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')
  const text = `INSERT INTO ${table} (${names}) SELECT * FROM unnest(${arrays})`
  for (const chunk of chunks(entries)) {
    await client.query(
      text,
      columns.map((c) => chunk.map(({ row }) => c.value(row))),
    )
  }
  return entries.length
}

function* chunks<T>(items: T[]): Generator<T[]> {
  for (let start = 0; start < items.length; start += IMPORT_CHUNK_SIZE) {
    yield items.slice(start, start + IMPORT_CHUNK_SIZE)
  }
}
