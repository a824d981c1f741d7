import {
  CHECKS_BY_KIND,
  cycleFault,
  firstFault,
  ruleNumber,
  type StagedCheck,
  type StagedFault,
} from './import-faults.js'
import type { ImportKind } from './store.js'

/**
 * The checks of an import that span records, run by the database on the staging tables both
 * adapters fill (import_users, import_sessions, import_folders, import_files: the records'
 * columns plus `seq`, the record's index; indexed on id, username and folder_id). The
 * statements are plain SQL that SQLite and PostgreSQL read alike, so the two backends find
 * the same record at fault by the same rules; each adapter owns its staging DDL, its load
 * and its copy into the real tables.
 */

/** What a check needs of a connection inside the import's transaction. */
export interface StagingConnection {
  exec(sql: string): Promise<void>
  /** The first row of `sql`, whose parameters are written `?`. */
  first<T>(sql: string, params?: unknown[]): Promise<T | undefined>
}

/**
 * The record at fault for one check: (seq, value, other) of the lowest seq, or no row.
 * `{t}` is the staging table, `{real}` the stored table of the same kind.
 */
const CHECK_SQL: Record<StagedCheck, string> = {
  duplicateId: `
    WITH dup AS (SELECT id, min(seq) AS first FROM {t} GROUP BY id HAVING count(*) > 1)
    SELECT (SELECT min(s.seq) FROM {t} AS s WHERE s.id = dup.id AND s.seq > dup.first) AS seq,
           dup.id AS value, dup.first AS other
      FROM dup ORDER BY seq LIMIT 1`,
  duplicateUsername: `
    WITH dup AS (SELECT username, min(seq) AS first FROM {t} GROUP BY username HAVING count(*) > 1)
    SELECT (SELECT min(s.seq) FROM {t} AS s WHERE s.username = dup.username AND s.seq > dup.first) AS seq,
           dup.username AS value, dup.first AS other
      FROM dup ORDER BY seq LIMIT 1`,
  usernameTaken: `
    SELECT s.seq, s.username AS value, NULL AS other FROM {t} AS s
     WHERE EXISTS (SELECT 1 FROM users AS u WHERE u.username = s.username)
     ORDER BY s.seq LIMIT 1`,
  idTaken: `
    SELECT s.seq, s.id AS value, NULL AS other FROM {t} AS s
     WHERE EXISTS (SELECT 1 FROM {real} AS r WHERE r.id = s.id)
     ORDER BY s.seq LIMIT 1`,
  unknownUser: `
    SELECT s.seq, s.user_id AS value, NULL AS other FROM {t} AS s
     WHERE NOT EXISTS (SELECT 1 FROM users AS u WHERE u.id = s.user_id)
       AND NOT EXISTS (SELECT 1 FROM import_users AS u WHERE u.id = s.user_id)
     ORDER BY s.seq LIMIT 1`,
  unknownOwner: `
    SELECT s.seq, s.owner_id AS value, NULL AS other FROM {t} AS s
     WHERE NOT EXISTS (SELECT 1 FROM users AS u WHERE u.id = s.owner_id)
       AND NOT EXISTS (SELECT 1 FROM import_users AS u WHERE u.id = s.owner_id)
     ORDER BY s.seq LIMIT 1`,
  parentOfOtherOwner: `
    SELECT s.seq, s.folder_id AS value, NULL AS other FROM {t} AS s
     WHERE s.folder_id IS NOT NULL
       AND EXISTS (SELECT 1 FROM import_folders AS p WHERE p.id = s.folder_id AND p.owner_id <> s.owner_id)
     ORDER BY s.seq LIMIT 1`,
  // A stored parent may be deleted: the foreign key only asks for the same owner.
  badParent: `
    SELECT s.seq, s.folder_id AS value, NULL AS other FROM {t} AS s
     WHERE s.folder_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM import_folders AS p WHERE p.id = s.folder_id)
       AND NOT EXISTS (SELECT 1 FROM folders AS p WHERE p.id = s.folder_id AND p.owner_id = s.owner_id)
     ORDER BY s.seq LIMIT 1`,
}

const KINDS: readonly ImportKind[] = ['users', 'sessions', 'folders', 'files']

interface FoundRow {
  seq: number | string
  value: string
  other: number | string | null
}

/** Throws ImportError for the first record at fault: users, then sessions, folders, files. */
export async function checkStaged(db: StagingConnection): Promise<void> {
  for (const kind of KINDS) {
    const faults: StagedFault[] = []
    for (const check of CHECKS_BY_KIND[kind]) {
      const sql = CHECK_SQL[check].replaceAll('{t}', `import_${kind}`).replaceAll('{real}', kind)
      const found = await db.first<FoundRow>(sql)
      if (found === undefined) continue
      // PostgreSQL returns int8 as text.
      const other = found.other === null ? null : Number(found.other)
      faults.push({ seq: Number(found.seq), value: found.value, other, rule: ruleNumber(check) })
    }
    const error = firstFault(kind, faults)
    if (error !== null) throw error
  }
}

/**
 * The staged folders reachable from a parent outside the file (stored, or the root), walking
 * down the tree. `{select}` is what the query returns of them.
 */
const PLACED = `
  WITH RECURSIVE placed (seq, id) AS (
    SELECT s.seq, s.id FROM import_folders AS s
     WHERE s.folder_id IS NULL
        OR NOT EXISTS (SELECT 1 FROM import_folders AS p WHERE p.id = s.folder_id)
    UNION ALL
    SELECT c.seq, c.id FROM placed JOIN import_folders AS c ON c.folder_id = placed.id
  )
  {select}`

/**
 * Checks that every staged folder is reachable from a parent outside the file: one that is
 * not hangs under a parent cycle. ImportError names the first folder found twice on the way
 * up from the first such folder (a member of the cycle). The walk only counts: the folders
 * it reached are written down (import_depth) only when some were not.
 */
export async function placeFolders(db: StagingConnection): Promise<void> {
  const counts = await db.first<{ placed: number | string; staged: number | string }>(
    PLACED.replace(
      '{select}',
      'SELECT (SELECT count(*) FROM placed) AS placed, (SELECT count(*) FROM import_folders) AS staged',
    ),
  )
  if (counts === undefined || Number(counts.placed) === Number(counts.staged)) return
  await db.exec(`CREATE TEMP TABLE import_depth AS ${PLACED.replace('{select}', 'SELECT seq FROM placed')}`)
  await db.exec('CREATE INDEX import_depth_seq ON import_depth (seq)')
  const unplaced = await db.first<{ seq: number | string | null }>(
    `SELECT min(seq) AS seq FROM import_folders AS f
      WHERE NOT EXISTS (SELECT 1 FROM import_depth AS d WHERE d.seq = f.seq)`,
  )
  if (unplaced?.seq == null) return
  // Only on failure, and only along one chain of parents.
  const seen = new Set<number>()
  let current = Number(unplaced.seq)
  while (!seen.has(current)) {
    seen.add(current)
    const parent = await db.first<{ seq: number | string }>(
      `SELECT p.seq FROM import_folders AS c JOIN import_folders AS p ON p.id = c.folder_id WHERE c.seq = ?`,
      [current],
    )
    if (parent === undefined) break
    current = Number(parent.seq)
  }
  throw cycleFault(current)
}
