import type { QueryConfig } from 'pg'
import {
  ALL_ROWS,
  type ChangePosition,
  type FolderRow,
  type OwnerInfo,
  type TreeLogQuery,
  type TreeLogResult,
  type TreeLogRow,
  type TreePageQuery,
  type TreePageResult,
  type TreePath,
} from '../store.js'
import { FULL_PATH_LEVELS, HEAD_LEVELS } from '../tree-walk.js'
import { ms } from './postgres-statements.js'

/**
 * The folder tree's statements on PostgreSQL (Store.readTreePage, Store.readTreeLog): each
 * ONE statement, so one snapshot, with the owner's generation as `present` for the read
 * router. A folder is in the tree of $2 when it is live, the owner's ($1), not $2 itself, and
 * its parent is $2 (NULL: the user's root) or in the tree.
 */

const ROOT_OK = `($2::uuid IS NULL OR EXISTS (
  SELECT 1 FROM folders WHERE id = $2::uuid AND owner_id = $1 AND NOT is_deleted))`

/**
 * Walks up from each folder of `starts` through live folders of the owner until a parent is
 * $2: `up` holds (start, parent) steps. UNION drops a repeated step, so a parent cycle
 * written by hand ends the walk instead of looping.
 */
const walkUp = (starts: string) => `up(start, parent) AS (
    SELECT id, folder_id FROM folders
     WHERE id IN (${starts}) AND owner_id = $1 AND NOT is_deleted AND id IS DISTINCT FROM $2::uuid
    UNION
    SELECT up.start, p.folder_id FROM up JOIN folders AS p ON p.id = up.parent
     WHERE p.owner_id = $1 AND NOT p.is_deleted AND up.parent IS DISTINCT FROM $2::uuid
  )`

/**
 * The tree walk (src/store/tree-walk.ts) as one statement, so one snapshot and one round
 * trip per page. $1 owner, $2 root (null: the user's root), $3 subtree top (null: the whole
 * tree), $4 the cursor path's head ids, $5 its depth (0: from the first), $6 and $7 a deeper
 * path's last id and digest, $8 folders to read (the page's limit and one more).
 *
 * `head` checks the head level by level; `deep` walks a deeper path's last folder up $5
 * levels; `start` is the resume of tree-walk.ts. `walk` then takes one step per row: from
 * folder x (level `level`, parent px), its first child when `descend`, else its next sibling
 * under px, else back up to px; `descend` only when x has live children (the count kept by
 * migration 002: tree-walk.ts says why a count of 0 is enough); each step one seek on
 * folders_tree ("IS NOT DISTINCT FROM"
 * cannot use an index, so the user's root, a NULL parent, has its own branch), and it stops
 * at the $8th folder: a page reads O($8 + depth) rows. `lastup` gives the path of the
 * ($8 - 1)th folder, where the next page resumes, when an $8th exists.
 */
const NIL = `'00000000-0000-0000-0000-000000000000'::uuid`
const firstChild = (parent: string, after: string) => `(
      SELECT c.id, c.child_count FROM folders AS c
       WHERE c.owner_id = $1 AND c.folder_id = ${parent} AND NOT c.is_deleted
         AND c.id >= coalesce(${after}, ${NIL}) AND c.id IS DISTINCT FROM ${after}
         AND c.id IS DISTINCT FROM $2::uuid
       ORDER BY c.id LIMIT 1)
      UNION ALL (
      SELECT c.id, c.child_count FROM folders AS c
       WHERE ${parent} IS NULL AND c.owner_id = $1 AND c.folder_id IS NULL AND NOT c.is_deleted
         AND c.id >= coalesce(${after}, ${NIL}) AND c.id IS DISTINCT FROM ${after}
         AND c.id IS DISTINCT FROM $2::uuid
       ORDER BY c.id LIMIT 1)`

const TREE_PAGE: QueryConfig = {
  name: 'folder_service_tree_walk',
  text: `WITH RECURSIVE state AS (
      SELECT u.username, u.avatar_url, u.listing_generation::text AS present, ${ROOT_OK} AS root_ok
        FROM users AS u WHERE u.id = $1
    ),
    ${walkUp('$3::uuid')},
    top AS (
      SELECT coalesce((SELECT root_ok FROM state), false)
             AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM up WHERE parent IS NOT DISTINCT FROM $2::uuid)) AS ok,
             coalesce($3::uuid, $2::uuid) AS base
    ),
    head(level, id) AS (
      SELECT 1, f.id FROM folders AS f
       WHERE f.id = ($4::uuid[])[1] AND f.owner_id = $1 AND NOT f.is_deleted AND f.id IS DISTINCT FROM $2::uuid
         AND f.folder_id IS NOT DISTINCT FROM (SELECT base FROM top)
      UNION ALL
      SELECT head.level + 1, f.id FROM head JOIN folders AS f ON f.id = ($4::uuid[])[head.level + 1]
       WHERE f.folder_id = head.id AND f.owner_id = $1 AND NOT f.is_deleted AND f.id IS DISTINCT FROM $2::uuid
    ),
    deep(level, id, parent) AS (
      SELECT $5::int4, f.id, f.folder_id FROM folders AS f
       WHERE f.id = $6::uuid AND f.owner_id = $1 AND NOT f.is_deleted AND f.id IS DISTINCT FROM $2::uuid
      UNION ALL
      SELECT deep.level - 1, f.id, f.folder_id FROM deep JOIN folders AS f ON f.id = deep.parent
       WHERE deep.level > 1 AND f.owner_id = $1 AND NOT f.is_deleted AND f.id IS DISTINCT FROM $2::uuid
    ),
    resume AS (
      SELECT (SELECT count(*) FROM head)::int4 AS valid,
             coalesce(cardinality($4::uuid[]), 0) AS kept,
             $6::uuid IS NOT NULL
             AND (SELECT count(*) FROM deep) = $5::int4
             AND (SELECT parent FROM deep WHERE level = 1) IS NOT DISTINCT FROM (SELECT base FROM top)
             AND (SELECT substring(sha256(string_agg(uuid_send(id), ''::bytea ORDER BY level)) FROM 1 FOR 16)
                    FROM deep) = $7::bytea AS deep_ok
    ),
    start(x, px, level, descend) AS (
      SELECT CASE WHEN r.deep_ok THEN $6::uuid
                  WHEN r.valid = r.kept THEN coalesce(($4::uuid[])[r.kept], t.base)
                  ELSE ($4::uuid[])[r.valid + 1] END,
             CASE WHEN r.deep_ok THEN (SELECT parent FROM deep WHERE level = $5::int4)
                  WHEN r.valid = r.kept THEN coalesce(($4::uuid[])[r.kept - 1], t.base)
                  ELSE coalesce(($4::uuid[])[r.valid], t.base) END,
             CASE WHEN r.deep_ok THEN $5::int4 WHEN r.valid = r.kept THEN r.kept ELSE r.valid + 1 END,
             r.deep_ok OR r.valid = r.kept
        FROM resume AS r CROSS JOIN top AS t WHERE t.ok
    ),
    walk(x, px, level, descend, emitted, n) AS (
      SELECT x, px, level, descend, NULL::uuid, 0 FROM start
      UNION ALL
      SELECT CASE WHEN nx.id IS NOT NULL THEN nx.id WHEN w.descend THEN w.x ELSE w.px END,
             CASE WHEN nx.id IS NOT NULL THEN (CASE WHEN w.descend THEN w.x ELSE w.px END)
                  WHEN w.descend THEN w.px
                  ELSE (SELECT p.folder_id FROM folders AS p WHERE p.id = w.px) END,
             CASE WHEN nx.id IS NOT NULL THEN w.level + (CASE WHEN w.descend THEN 1 ELSE 0 END)
                  WHEN w.descend THEN w.level ELSE w.level - 1 END,
             nx.id IS NOT NULL AND nx.child_count > 0,
             nx.id,
             w.n + (CASE WHEN nx.id IS NOT NULL THEN 1 ELSE 0 END)
        FROM walk AS w
        LEFT JOIN LATERAL (
          SELECT id, child_count FROM (${firstChild(
            'CASE WHEN w.descend THEN w.x ELSE w.px END',
            'CASE WHEN w.descend THEN NULL::uuid ELSE w.x END',
          )}) AS one ORDER BY id LIMIT 1
        ) AS nx ON true
       WHERE (w.descend OR w.level > 0) AND w.n < $8::int4
    ),
    page AS (SELECT emitted AS id, n, level FROM walk WHERE emitted IS NOT NULL),
    lastup(level, id, parent) AS (
      SELECT p.level, f.id, f.folder_id FROM page AS p JOIN folders AS f ON f.id = p.id
       WHERE p.n = $8::int4 - 1 AND EXISTS (SELECT 1 FROM page WHERE n = $8::int4)
      UNION ALL
      SELECT lastup.level - 1, f.id, f.folder_id FROM lastup JOIN folders AS f ON f.id = lastup.parent
       WHERE lastup.level > 1
    ),
    lastpath AS (
      SELECT max(level) AS depth,
             (array_agg(id::text ORDER BY level) FILTER (WHERE level <= ${FULL_PATH_LEVELS}))::text[] AS ids,
             (array_agg(id::text ORDER BY level DESC))[1] AS last_id,
             substring(sha256(string_agg(uuid_send(id), ''::bytea ORDER BY level)) FROM 1 FOR 16) AS digest
        FROM lastup
    )
  SELECT s.username, s.avatar_url, s.present, s.root_ok, l.depth AS last_depth, l.ids AS last_ids,
         l.last_id, l.digest AS last_digest, p.n, f.id, f.name, f.folder_id,
         ${ms('f.created_at')} AS created_at, ${ms('f.updated_at')} AS updated_at
    FROM state AS s CROSS JOIN lastpath AS l LEFT JOIN (page AS p JOIN folders AS f ON f.id = p.id) ON true
   ORDER BY p.n`,
}

/**
 * $1 owner, $2 root, $3 and $4 the position, $5 rows to read. Validity as readChanges: a log
 * row of the owner at exactly the position's generation, and no reset after it. `deferred`:
 * the rows whose folder is below one that comes to a new place (`later`) after the row, so
 * in the tree now only through a change not followed yet: read as out of it (Store.readTreeLog).
 */
const TREE_LOG: QueryConfig = {
  name: 'folder_service_tree_log',
  text: `WITH RECURSIVE state AS (
      SELECT u.username, u.avatar_url, u.listing_generation::text AS present, ${ROOT_OK} AS root_ok,
             EXISTS (SELECT 1 FROM folder_changes WHERE generation = $3::int8 AND owner_id = $1)
             AND NOT EXISTS (SELECT 1 FROM folder_changes WHERE owner_id = $1
                        AND kind = 'reset' AND generation > $3::int8) AS valid
        FROM users AS u WHERE u.id = $1
    ),
    log AS (
      SELECT id, generation, kind, parent_id, folder_id, place FROM folder_changes
       WHERE owner_id = $1 AND kind IN ('folder', 'owner') AND (generation, id) > ($3::int8, $4::int8)
         AND (SELECT root_ok AND valid FROM state)
       ORDER BY generation, id LIMIT $5::int8
    ),
    ${walkUp('SELECT folder_id FROM log')},
    placed AS (SELECT DISTINCT start FROM up WHERE parent IS NOT DISTINCT FROM $2::uuid),
    later AS (
      SELECT folder_id, generation, id FROM folder_changes
       WHERE owner_id = $1 AND kind = 'folder' AND place = 1 AND (generation, id) > ($3::int8, $4::int8)
    ),
    deferred AS (
      SELECT DISTINCT l.id FROM log AS l
        JOIN up ON up.start = l.folder_id AND up.parent IS DISTINCT FROM $2::uuid
        JOIN later AS m ON m.folder_id = up.parent
       WHERE (m.generation, m.id) > (l.generation, l.id)
    )
  SELECT s.username, s.avatar_url, s.present, s.root_ok, s.valid,
         l.id::text AS row_id, l.generation::text AS generation, l.kind, l.parent_id, l.folder_id, l.place,
         f.name, f.folder_id AS parent_now,
         ${ms('f.created_at')} AS created_at, ${ms('f.updated_at')} AS updated_at
    FROM state AS s
    LEFT JOIN (log AS l LEFT JOIN (placed JOIN folders AS f ON f.id = placed.start)
                ON f.id = l.folder_id AND l.id NOT IN (SELECT id FROM deferred)) ON true
   ORDER BY l.generation, l.id`,
}

interface RawState {
  username: string
  avatar_url: string | null
  present: string
  root_ok: boolean
}

interface RawFolderColumns {
  name: string | null
  created_at: string | null
  updated_at: string | null
}

type RawPageRow = RawState &
  RawFolderColumns & {
    id: string | null
    folder_id: string | null
    last_depth: number | null
    last_ids: string[] | null
    last_id: string | null
    last_digest: Buffer | null
  }

type RawLogRow = RawState & {
  valid: boolean
  row_id: string | null
  generation: string | null
  kind: 'folder' | 'owner' | null
  parent_id: string | null
  folder_id: string | null
  place: number | null
  parent_now: string | null
} & RawFolderColumns

/** Runs a statement where readChanges would (a replica that holds minGeneration, else the primary). */
export type RoutedQuery = <R extends RawState>(statement: QueryConfig, minGeneration?: number) => Promise<R[]>

/** The owner and the present position of a statement's first row. */
const stateOf = (ownerId: string, row: RawState): { owner: OwnerInfo; present: ChangePosition } => ({
  owner: { id: ownerId, username: row.username, avatar_url: row.avatar_url },
  present: { generation: Number(row.present), row: ALL_ROWS },
})

/** A folder's columns (int8 times as strings) as the Store gives them; null when absent. */
function folderOf(id: string, parentId: string | null, row: RawFolderColumns): FolderRow | null {
  if (row.name === null) return null
  return {
    id,
    name: row.name,
    folder_id: parentId,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  }
}

export async function readTreePage(query: RoutedQuery, q: TreePageQuery): Promise<TreePageResult> {
  const after = q.after
  const values = [
    q.ownerId,
    q.rootId,
    q.subtreeOf,
    after?.head ?? [],
    after?.depth ?? 0,
    after?.tail?.id ?? null,
    after?.tail?.digest ?? null,
    q.limit + 1,
  ]
  const rows = await query<RawPageRow>({ ...TREE_PAGE, values }, q.minGeneration)
  const first = rows[0]
  if (first === undefined || !first.root_ok) return { outcome: 'parent-not-found' }
  const folders = rows.flatMap((row) => {
    const folder = row.id === null ? null : folderOf(row.id, row.folder_id, row)
    return folder === null ? [] : [folder]
  })
  const more = folders.length > q.limit
  return {
    outcome: 'page',
    folders: folders.slice(0, q.limit),
    last: more ? lastPath(first) : null,
    more,
    ...stateOf(q.ownerId, first),
  }
}

/** The path where the next page resumes, as the statement gave it. */
function lastPath(row: RawPageRow): TreePath {
  const depth = Number(row.last_depth)
  const ids = row.last_ids ?? []
  if (depth <= FULL_PATH_LEVELS) return { depth, head: ids, tail: null }
  return {
    depth,
    head: ids.slice(0, HEAD_LEVELS),
    tail: { id: row.last_id as string, digest: row.last_digest as Buffer },
  }
}

export async function readTreeLog(query: RoutedQuery, q: TreeLogQuery): Promise<TreeLogResult> {
  const values = [q.ownerId, q.rootId, q.after.generation, q.after.row, q.limit + 1]
  const rows = await query<RawLogRow>({ ...TREE_LOG, values }, q.minGeneration)
  const first = rows[0]
  if (first === undefined || !first.root_ok) return { outcome: 'parent-not-found' }
  if (!first.valid) return { outcome: 'expired' }
  const read = rows.flatMap((row): TreeLogRow[] => {
    if (row.row_id === null || row.kind === null) return []
    const position = { generation: Number(row.generation), row: Number(row.row_id) }
    if (row.kind === 'owner') return [{ kind: 'owner', position }]
    const id = row.folder_id as string
    const folder = folderOf(id, row.parent_now, row)
    // Rows logged before migration 010 have no side: taken as a new place, which costs a
    // subtree sent again, never a change missed.
    const side = row.place === 0 ? 0 : 1
    return [{ kind: 'folder', position, id, parentId: row.parent_id, side, folder }]
  })
  return {
    outcome: 'log',
    rows: read.slice(0, q.limit),
    more: read.length > q.limit,
    ...stateOf(q.ownerId, first),
  }
}
