import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import type { QueryConfig } from 'pg'
import { from as copyFrom, type CopyStreamQuery } from 'pg-copy-streams'
import { checkStaged, placeFolders, type StagingConnection } from '../staged-import-checks.js'
import type { FolderRecord, ImportCounts, ImportItem, ImportKind, ImportSource } from '../store.js'
import type { Client } from './postgres-connections.js'
import { NEXT_GENERATION } from './change-log-sql.js'
import { importReplay } from '../import-replay.js'
import { naturalKey } from '../../ordering/natural-key.js'
import { traced } from '../../tracing/tracing.js'
import { IMPORT_PHASES } from '../import-phases.js'

/**
 * Store.importStream for PostgreSQL, inside the caller's transaction. Records are streamed
 * with COPY into temporary staging tables (dropped at commit), checked there by set-based
 * queries once the source is exhausted (staged-import-checks.ts), then written with one
 * INSERT ... SELECT per table. Foreign keys are checked at the end of each statement, so
 * a child may precede its parent in the file. The count and generation triggers of folders
 * are disabled for the copy and their work done set-based, touching each parent and owner
 * once (LIFTED_TRIGGERS).
 */

/**
 * The import is one long transaction: the service's statement timeout (meant for requests)
 * would cut its statements and its COPY off. pg's client-side read timer is set per query.
 */
const IMPORT_QUERY_TIMEOUT_MS = 24 * 60 * 60 * 1000

/** COPY text (tab-separated) of a staged record: seq, then the record's columns. */
const STAGING = `
  CREATE TEMP TABLE import_users (
    seq int8 NOT NULL, id uuid NOT NULL, username text COLLATE "C" NOT NULL, email text,
    avatar_url text, password_hash text, is_suspended boolean NOT NULL,
    created_at int8 NOT NULL, updated_at int8 NOT NULL) ON COMMIT DROP;
  CREATE TEMP TABLE import_sessions (
    seq int8 NOT NULL, id uuid NOT NULL, user_id uuid NOT NULL,
    created_at int8 NOT NULL, expires_at int8) ON COMMIT DROP;
  CREATE TEMP TABLE import_folders (
    seq int8 NOT NULL, id uuid NOT NULL, name text COLLATE "C" NOT NULL, folder_id uuid,
    owner_id uuid NOT NULL, is_deleted boolean NOT NULL,
    created_at int8 NOT NULL, updated_at int8 NOT NULL, name_key bytea NOT NULL) ON COMMIT DROP;
  CREATE TEMP TABLE import_files (
    seq int8 NOT NULL, id uuid NOT NULL, name text COLLATE "C" NOT NULL, folder_id uuid,
    owner_id uuid NOT NULL, is_deleted boolean NOT NULL,
    created_at int8 NOT NULL, updated_at int8 NOT NULL, size int8 NOT NULL) ON COMMIT DROP;
`

/**
 * Built after the load, then analysed: autovacuum never analyses temporary tables, and
 * without statistics the planner takes them for tiny.
 */
const STAGING_INDEXES = `
  CREATE INDEX ON import_users (id);
  CREATE INDEX ON import_users (username);
  CREATE INDEX ON import_sessions (id);
  CREATE INDEX ON import_folders (id, owner_id);
  CREATE INDEX ON import_folders (folder_id);
  CREATE INDEX ON import_files (id);
  ANALYZE import_users, import_sessions, import_folders, import_files;
`

/** Epoch milliseconds (staged as int8, cheaper to write than text) as timestamptz(3). */
const at = (column: string) => `'epoch'::timestamptz + ${column} * interval '1 millisecond'`

/** The counts, generations and change log of the copy, set-based (import-replay.ts). */
const REPLAY = importReplay({
  live: (alias) => `NOT ${alias}.is_deleted`,
  nextGeneration: NEXT_GENERATION,
  logOwners: (kind, where) => `
    INSERT INTO folder_changes (owner_id, generation, kind)
      SELECT id, listing_generation, '${kind}' FROM users WHERE ${where} ORDER BY id;`,
})

const COPY_INTO_TABLES = `
  INSERT INTO users (id, username, email, avatar_url, password_hash, is_suspended, created_at, updated_at)
    SELECT id, username, email, avatar_url, password_hash, is_suspended, ${at('created_at')}, ${at('updated_at')}
      FROM import_users;
  INSERT INTO sessions (id, user_id, created_at, expires_at)
    SELECT id, user_id, ${at('created_at')}, ${at('expires_at')} FROM import_sessions;
  -- The lifted triggers' work (LIFTED_TRIGGERS, REPLAY): a new folder's count is taken as it
  -- is copied. In the listing index's order: that index has the widest entries, and rows in
  -- its order are appended to it (1,000,000 folders: 14.6 s against 17.8 s in primary key order).
  INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at, child_count, name_key)
    SELECT f.id, f.name, f.folder_id, f.owner_id, f.is_deleted, ${at('f.created_at')}, ${at('f.updated_at')},
           coalesce(c.n, 0), f.name_key
      FROM import_folders AS f LEFT JOIN (${REPLAY.stagedChildCounts}) AS c ON c.folder_id = f.id
     ORDER BY f.owner_id, f.folder_id, f.name, f.created_at, f.id;
  ${REPLAY.afterCopy}
  INSERT INTO files (id, name, folder_id, owner_id, size, is_deleted, created_at, updated_at)
    SELECT id, name, folder_id, owner_id, size, is_deleted, ${at('created_at')}, ${at('updated_at')}
      FROM import_files;
`

/**
 * The triggers an import would fire, per table: the statement-level ones of folders feed
 * every new row to an array (count triggers) and a transition table, and the count updates
 * of stored parents would fire the update ones; the row-level ones of users would log each
 * new user. COPY_INTO_TABLES does their work set-based instead (for 200,000 folders the
 * insert took 3.3 s without them, 4.0 s with). Disabling a trigger takes SHARE ROW
 * EXCLUSIVE, which the import already holds (readers go on), and is undone by the commit's
 * ENABLE or the rollback.
 */
const LIFTED_TRIGGERS = {
  folders: [
    'folders_counts_insert',
    'folders_changes_insert',
    'folders_counts_update',
    'folders_changes_update',
  ],
  users: ['users_generation_insert', 'users_changes_insert'],
}

const NEEDS_ESCAPE = /[\\\n\r\t]/
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** A text value in COPY's text format: backslash escapes, `\N` for null. */
function text(value: string | null): string {
  if (value === null) return '\\N'
  return NEEDS_ESCAPE.test(value) ? value.replace(/[\\\n\r\t]/g, (c) => ESCAPES[c] ?? c) : value
}

const bool = (value: boolean) => (value ? 't' : 'f')
const num = (value: number | null) => (value === null ? '\\N' : String(value))

/** What folders and files share (a file is a FolderRecord with a size), without the line end. */
function placedLine(index: number, f: FolderRecord): string {
  return `${index}\t${f.id}\t${text(f.name)}\t${f.folder_id ?? '\\N'}\t${f.owner_id}\t${bool(f.is_deleted)}\t${f.created_at}\t${f.updated_at}`
}

function copyLine(item: ImportItem): string {
  switch (item.kind) {
    case 'users': {
      const u = item.row
      return `${item.index}\t${u.id}\t${text(u.username)}\t${text(u.email)}\t${text(u.avatar_url)}\t${text(u.password_hash)}\t${bool(u.is_suspended)}\t${u.created_at}\t${u.updated_at}\n`
    }
    case 'sessions': {
      const s = item.row
      return `${item.index}\t${s.id}\t${s.user_id}\t${s.created_at}\t${num(s.expires_at)}\n`
    }
    case 'folders':
      // the natural order's key, computed as the row streams by; bytea's hex form, its
      // backslash escaped for COPY's text format
      return `${placedLine(item.index, item.row)}\t\\\\x${Buffer.from(naturalKey(item.row.name)).toString('hex')}\n`
    case 'files':
      return `${placedLine(item.index, item.row)}\t${item.row.size}\n`
  }
}

/**
 * One COPY at a time on the connection: a run of records of one kind goes into one COPY;
 * when the kind changes (records of several arrays interleaved), the COPY ends and the next
 * begins. Writes wait for the socket to drain, so memory stays bounded.
 */
class StagingWriter {
  private current: { kind: ImportKind; stream: CopyStreamQuery; done: Promise<void> } | null = null
  readonly counts: ImportCounts = { users: 0, sessions: 0, folders: 0, files: 0 }

  constructor(private readonly client: Client) {}

  async write(batch: readonly ImportItem[]): Promise<void> {
    let start = 0
    while (start < batch.length) {
      const kind = (batch[start] as ImportItem).kind
      let end = start
      let chunk = ''
      while (end < batch.length && (batch[end] as ImportItem).kind === kind) {
        chunk += copyLine(batch[end] as ImportItem)
        end++
      }
      this.counts[kind] += end - start
      const stream = await this.streamFor(kind)
      if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), this.current?.done])
      start = end
    }
  }

  private async streamFor(kind: ImportKind): Promise<CopyStreamQuery> {
    if (this.current?.kind === kind) return this.current.stream
    await this.end()
    const stream = copyFrom(`COPY import_${kind} FROM STDIN`)
    // pg reads the client-side timeout from the submitted query (see IMPORT_QUERY_TIMEOUT_MS).
    Object.assign(stream, { query_timeout: IMPORT_QUERY_TIMEOUT_MS })
    const done = finished(stream)
    // Awaited later (end, abort, drain); until then a failure must not count as unhandled.
    done.catch(() => undefined)
    this.client.query(stream)
    this.current = { kind, stream, done }
    return stream
  }

  /** Ends the COPY in progress; resolves once PostgreSQL has taken its rows. */
  async end(): Promise<void> {
    const current = this.current
    this.current = null
    if (current === null) return
    current.stream.end()
    await current.done
  }

  /** Abandons the COPY in progress (CopyFail): PostgreSQL discards it and fails the transaction. */
  async abort(reason: unknown): Promise<void> {
    const current = this.current
    this.current = null
    if (current === null) return
    current.stream.destroy(reason instanceof Error ? reason : new Error(String(reason)))
    await current.done.catch(() => undefined)
  }
}

function stagingConnection(client: Client): StagingConnection {
  const query = (sql: string, values: unknown[] = []) => {
    let n = 0
    // pg reads query_timeout from the query config (its types omit it).
    const config: QueryConfig & { query_timeout: number } = {
      text: sql.replace(/\?/g, () => `$${++n}`),
      values,
      query_timeout: IMPORT_QUERY_TIMEOUT_MS,
    }
    return client.query(config)
  }
  return {
    exec: async (sql) => void (await query(sql)),
    first: async <T>(sql: string, params?: unknown[]) => (await query(sql, params)).rows[0] as T | undefined,
  }
}

/** Disables or enables those of `names` that are enabled on `table` now. */
async function triggerToggle(
  client: Client,
  db: StagingConnection,
  table: 'folders' | 'users',
  names: string[],
): Promise<(state: 'ENABLE' | 'DISABLE') => Promise<void>> {
  const { rows } = await client.query<{ name: string }>({
    text: "SELECT tgname AS name FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = ANY($2) AND tgenabled <> 'D'",
    values: [table, names],
  })
  const lifted = rows.map(({ name }) => `"${name}"`)
  return (state) =>
    lifted.length === 0
      ? Promise.resolve()
      : db.exec(`ALTER TABLE ${table} ${lifted.map((name) => `${state} TRIGGER ${name}`).join(', ')}`)
}

export async function importIntoPostgres(client: Client, source: ImportSource): Promise<ImportCounts> {
  const db = stagingConnection(client)
  await db.exec("SET LOCAL statement_timeout = '0'")
  // Server memory for this transaction's sorts, hashes and index builds; the default 4 MB
  // sent the checks' joins to disk (1,000,000 folders: checks and cycle walk from 4.9 s to 3.0 s).
  await db.exec("SET LOCAL work_mem = '64MB'")
  await db.exec("SET LOCAL maintenance_work_mem = '256MB'")
  // Writers wait until the import commits (readers do not), so nothing stored between the
  // checks and the inserts can make an insert fail; a second import waits its turn.
  await db.exec('LOCK TABLE users, sessions, folders, files IN SHARE ROW EXCLUSIVE MODE')
  await db.exec(STAGING)
  const writer = new StagingWriter(client)
  await traced(IMPORT_PHASES.stage, async () => {
    try {
      for await (const batch of source) await writer.write(batch)
      await writer.end()
    } catch (error) {
      await writer.abort(error)
      throw error
    }
    await db.exec(STAGING_INDEXES)
  })
  await traced(IMPORT_PHASES.check, () => checkStaged(db))
  await traced(IMPORT_PHASES.place, () => placeFolders(db))
  await traced(IMPORT_PHASES.write, async () => {
    const toggles = await Promise.all(
      (['folders', 'users'] as const).map((table) =>
        triggerToggle(client, db, table, LIFTED_TRIGGERS[table]),
      ),
    )
    for (const toggle of toggles) await toggle('DISABLE')
    await db.exec(COPY_INTO_TABLES)
    for (const toggle of toggles) await toggle('ENABLE')
  })
  return writer.counts
}
