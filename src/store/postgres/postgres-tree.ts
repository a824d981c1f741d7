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
} from '../store.js'
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
 * $1 owner, $2 root (null: the user's root), $3 subtree top (null: the whole tree), $4 and $5
 * the (depth, id) to read after, $6 rows to read. Descendants of a folder in the tree cannot
 * form a cycle (each one's parents lead up to it); $2 is never walked into again.
 */
const TREE_PAGE: QueryConfig = {
  name: 'folder_service_tree_page',
  text: `WITH RECURSIVE state AS (
      SELECT u.username, u.avatar_url, u.listing_generation::text AS present, ${ROOT_OK} AS root_ok
        FROM users AS u WHERE u.id = $1
    ),
    ${walkUp('$3::uuid')},
    top AS (
      SELECT coalesce((SELECT root_ok FROM state), false)
             AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM up WHERE parent IS NOT DISTINCT FROM $2::uuid)) AS ok
    ),
    down(id, depth) AS (
      SELECT id, 1 FROM folders
       WHERE folder_id IS NOT DISTINCT FROM coalesce($3::uuid, $2::uuid) AND owner_id = $1 AND NOT is_deleted
         AND id IS DISTINCT FROM $2::uuid AND (SELECT ok FROM top)
      UNION ALL
      SELECT c.id, down.depth + 1 FROM down JOIN folders AS c ON c.folder_id = down.id
       WHERE c.owner_id = $1 AND NOT c.is_deleted AND c.id IS DISTINCT FROM $2::uuid
    ),
    page AS (
      SELECT id, depth FROM down WHERE (depth, id) > ($4::int4, $5::uuid) ORDER BY depth, id LIMIT $6::int8
    )
  SELECT s.username, s.avatar_url, s.present, s.root_ok, p.depth, f.id, f.name, f.folder_id,
         ${ms('f.created_at')} AS created_at, ${ms('f.updated_at')} AS updated_at
    FROM state AS s LEFT JOIN (page AS p JOIN folders AS f ON f.id = p.id) ON true
   ORDER BY p.depth, p.id`,
}

/**
 * $1 owner, $2 root, $3 and $4 the position, $5 rows to read. Validity as readChanges: a log
 * row of the owner at exactly the position's generation, and no reset after it.
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
    placed AS (SELECT DISTINCT start FROM up WHERE parent IS NOT DISTINCT FROM $2::uuid)
  SELECT s.username, s.avatar_url, s.present, s.root_ok, s.valid,
         l.id::text AS row_id, l.generation::text AS generation, l.kind, l.parent_id, l.folder_id, l.place,
         f.name, f.folder_id AS parent_now,
         ${ms('f.created_at')} AS created_at, ${ms('f.updated_at')} AS updated_at
    FROM state AS s
    LEFT JOIN (log AS l LEFT JOIN (placed JOIN folders AS f ON f.id = placed.start) ON f.id = l.folder_id) ON true
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
  RawFolderColumns & { id: string | null; depth: number | null; folder_id: string | null }

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

const NO_ID = '00000000-0000-0000-0000-000000000000'

export async function readTreePage(query: RoutedQuery, q: TreePageQuery): Promise<TreePageResult> {
  const values = [q.ownerId, q.rootId, q.subtreeOf, q.after?.depth ?? 0, q.after?.id ?? NO_ID, q.limit + 1]
  const rows = await query<RawPageRow>({ ...TREE_PAGE, values }, q.minGeneration)
  const first = rows[0]
  if (first === undefined || !first.root_ok) return { outcome: 'parent-not-found' }
  const folders = rows.flatMap((row) => {
    const folder = row.id === null ? null : folderOf(row.id, row.folder_id, row)
    return folder === null ? [] : [{ ...folder, depth: Number(row.depth) }]
  })
  return {
    outcome: 'page',
    folders: folders.slice(0, q.limit),
    more: folders.length > q.limit,
    ...stateOf(q.ownerId, first),
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
