import type { QueryConfig } from 'pg'
import { ALL_ROWS, type FolderRow, type TreeQuery, type TreeResult } from '../store.js'
import { treeAnswer } from '../tree-answer.js'
import { readEach, type ChildAt, type FolderHistory, type LoggedRow, type TreeRead } from '../tree-reads.js'
import { ms } from './postgres-statements.js'

/**
 * The folder tree's reads on PostgreSQL (Store.readTree): the reads of
 * src/store/tree-reads.ts, a statement each, all in one repeatable-read transaction (the
 * adapter's), so they read one snapshot. Each is a seek or a short range: the owner's rows
 * after a position on folder_changes_by_position, a folder's first row after a position on
 * folder_changes_by_folder (migration 015), the old states under a parent on
 * folder_changes_by_old_parent (migration 016), children on folders_tree.
 */

/**
 * How an answer's transaction begins: one snapshot, and plans made of index seeks. Every
 * read here is a seek or a short range on an index made for it, and its cost must not grow
 * with the backlog behind a cursor; but the planner judges by statistics, which lag a burst
 * of writes (the owner's rows after a position were estimated at 1 where there were 20,000,
 * and read whole and sorted). Scans of a whole table or index, and hash and merge joins
 * (which read one side whole), are therefore ruled out for this transaction alone.
 */
export const TREE_TRANSACTION = `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
  SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
  SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off`

/** Runs one statement in the answer's transaction. */
export type SnapshotQuery = <R>(statement: QueryConfig) => Promise<R[]>

const NIL = `'00000000-0000-0000-0000-000000000000'::uuid`

/** $1 owner, $2 root, $3 the cursor's generation (null: a new download). */
const STATE: QueryConfig = {
  name: 'folder_service_tree_state',
  text: `SELECT u.username, u.avatar_url, u.listing_generation::text AS present,
         ($2::uuid IS NULL OR EXISTS (
           SELECT 1 FROM folders WHERE id = $2::uuid AND owner_id = $1 AND NOT is_deleted)) AS root_ok,
         ($3::int8 IS NULL OR (
           EXISTS (SELECT 1 FROM folder_changes WHERE generation = $3::int8 AND owner_id = $1)
           AND NOT EXISTS (SELECT 1 FROM folder_changes WHERE owner_id = $1
                            AND kind = 'reset' AND generation > $3::int8))) AS valid
    FROM users AS u WHERE u.id = $1`,
}

/**
 * $1 owner, $2 and $3 the position, $4 rows. Ordered by the table's columns: the output's
 * `generation` is text, and ordering by it sorted every row of the owner after the position.
 * No 'reset' row follows a valid position (STATE, in the same snapshot), and none is named
 * by kind: a list of kinds let the planner take folder_changes_by_owner and sort.
 */
const LOG: QueryConfig = {
  name: 'folder_service_tree_log',
  text: `SELECT id::text AS row_id, generation::text AS generation, kind, parent_id, folder_id, place
    FROM folder_changes
   WHERE owner_id = $1 AND (generation, id) > ($2::int8, $3::int8) AND kind <> 'reset'
   ORDER BY folder_changes.generation, folder_changes.id LIMIT $4::int8`,
}

/**
 * Whether an old state after ($2, $3) names `folder` as the parent, as `alias`.named (null:
 * none): one seek on folder_changes_by_old_parent per folder. A join, not EXISTS, which the
 * planner may turn into one hashed read of every old state after the position.
 */
const oldStateParent = (folder: string, alias: string) => `LEFT JOIN LATERAL (
      SELECT true AS named FROM folder_changes AS o
       WHERE o.owner_id = $1 AND o.kind = 'folder' AND o.place = 0 AND o.parent_id = ${folder}
         AND (o.generation, o.id) > ($2::int8, $3::int8)
       LIMIT 1) AS ${alias} ON true`

/** $1 owner, $2 and $3 the position, $4 the ids: each one's first row after it and its row now. */
const STATES: QueryConfig = {
  name: 'folder_service_tree_states',
  text: `SELECT i.id::text AS id, c.generation IS NOT NULL AS has_first, c.place, c.parent_id, c.live, c.name,
         ${ms('c.created_at')}::text AS created_at, ${ms('c.updated_at')}::text AS updated_at,
         f.owner_id, f.is_deleted, f.name AS now_name, f.folder_id AS now_parent,
         ${ms('f.created_at')}::text AS now_created_at, ${ms('f.updated_at')}::text AS now_updated_at,
         f.child_count, p.named IS NOT NULL AS parent_of_old_state
    FROM unnest($4::uuid[]) AS i(id)
    LEFT JOIN LATERAL (
      SELECT generation, place, parent_id, live, name, created_at, updated_at FROM folder_changes
       WHERE owner_id = $1 AND kind = 'folder' AND folder_id = i.id AND (generation, id) > ($2::int8, $3::int8)
       ORDER BY generation, id LIMIT 1) AS c ON true
    LEFT JOIN folders AS f ON f.id = i.id
    ${oldStateParent('i.id', 'p')}`,
}

/**
 * $1 owner, $2 and $3 the position, $4 the ids: those a new place at or before the position
 * names as its parent (folder_changes_by_owner; rows from before migration 010, without a
 * place, count as new places).
 */
const PLACED_UNDER: QueryConfig = {
  name: 'folder_service_tree_placed_under',
  text: `SELECT i.id::text AS id FROM unnest($4::uuid[]) AS i(id)
    JOIN LATERAL (
      SELECT 1 FROM folder_changes AS n
       WHERE n.owner_id = $1 AND n.kind = 'folder' AND n.parent_id = i.id AND n.place IS DISTINCT FROM 0
         AND (n.generation, n.id) <= ($2::int8, $3::int8)
       LIMIT 1) AS placed ON true`,
}

/**
 * The children of a parent at ($2, $3): $4 the parent (its own statement for the user's
 * root, since "IS NOT DISTINCT FROM" cannot use an index), $5 after this id (null: all), $6
 * the tree's root, $7 rows. Those unchanged since (live children now with no log row after
 * the position), and those changed since (an old state under the parent, live, that is its
 * folder's first row after the position).
 */
const children = (rootParent: boolean): QueryConfig => {
  // $4 is null for the user's root: named, so that its type is known.
  const parent = (column: string) =>
    rootParent ? `${column} IS NULL AND $4::uuid IS NULL` : `${column} = $4::uuid`
  return {
    name: rootParent ? 'folder_service_tree_root_children' : 'folder_service_tree_children',
    text: `SELECT page.id::text AS id, name, folder_id, created_at::text AS created_at,
           updated_at::text AS updated_at, child_count > 0 OR p.named IS NOT NULL AS may_have_children
      FROM (SELECT * FROM ((
        SELECT f.id, f.name, f.folder_id, ${ms('f.created_at')} AS created_at, ${ms('f.updated_at')} AS updated_at,
               f.child_count FROM folders AS f
         WHERE f.owner_id = $1 AND ${parent('f.folder_id')} AND NOT f.is_deleted
           AND f.id >= coalesce($5::uuid, ${NIL}) AND f.id IS DISTINCT FROM $5::uuid AND f.id IS DISTINCT FROM $6::uuid
           AND NOT EXISTS (SELECT 1 FROM folder_changes AS e
                            WHERE e.owner_id = $1 AND e.kind = 'folder' AND e.folder_id = f.id
                              AND (e.generation, e.id) > ($2::int8, $3::int8))
         ORDER BY f.id LIMIT $7::int8)
      UNION ALL (
        SELECT c.folder_id, c.name, c.parent_id, ${ms('c.created_at')}, ${ms('c.updated_at')},
               coalesce(n.child_count, 0) FROM folder_changes AS c LEFT JOIN folders AS n ON n.id = c.folder_id
         WHERE c.owner_id = $1 AND c.kind = 'folder' AND ${parent('c.parent_id')} AND c.place = 0 AND c.live
           AND (c.generation, c.id) > ($2::int8, $3::int8)
           AND c.folder_id >= coalesce($5::uuid, ${NIL}) AND c.folder_id IS DISTINCT FROM $5::uuid
           AND c.folder_id IS DISTINCT FROM $6::uuid
           AND NOT EXISTS (SELECT 1 FROM folder_changes AS e
                            WHERE e.owner_id = $1 AND e.kind = 'folder' AND e.folder_id = c.folder_id
                              AND (e.generation, e.id) > ($2::int8, $3::int8)
                              AND (e.generation, e.id) < (c.generation, c.id))
         ORDER BY c.folder_id LIMIT $7::int8)) AS both_kinds
       ORDER BY id LIMIT $7::int8) AS page
      ${oldStateParent('page.id', 'p')}
     ORDER BY page.id`,
  }
}
const CHILDREN = children(false)
const ROOT_CHILDREN = children(true)

interface RawState {
  username: string
  avatar_url: string | null
  present: string
  root_ok: boolean
  valid: boolean
}

interface RawLogRow {
  row_id: string
  generation: string
  kind: 'folder' | 'owner'
  parent_id: string | null
  folder_id: string | null
  place: number | null
}

interface RawStates {
  id: string
  has_first: boolean
  place: number | null
  parent_id: string | null
  live: boolean | null
  name: string | null
  created_at: string | null
  updated_at: string | null
  owner_id: string | null
  is_deleted: boolean | null
  now_name: string | null
  now_parent: string | null
  now_created_at: string | null
  now_updated_at: string | null
  child_count: number | null
  parent_of_old_state: boolean
}

interface RawChild {
  id: string
  name: string
  folder_id: string | null
  created_at: string
  updated_at: string
  may_have_children: boolean
}

const num = (value: string | null) => (value === null ? null : Number(value))

function history(row: RawStates): FolderHistory {
  // Rows logged before migration 010 have no place: taken as a new place.
  const first: FolderHistory['first'] = !row.has_first
    ? null
    : row.place === 0
      ? {
          side: 0,
          live: row.live,
          parentId: row.parent_id,
          name: row.name,
          created_at: num(row.created_at),
          updated_at: num(row.updated_at),
        }
      : { side: 1 }
  const now: FolderHistory['now'] =
    row.owner_id === null
      ? null
      : {
          folder: {
            id: row.id,
            name: row.now_name as string,
            folder_id: row.now_parent,
            created_at: Number(row.now_created_at),
            updated_at: Number(row.now_updated_at),
          },
          ownerId: row.owner_id,
          deleted: row.is_deleted === true,
          childCount: row.child_count ?? 0,
        }
  return { first, now, parentOfOldState: row.parent_of_old_state }
}

/** Answers the reads of tree-reads.ts for one owner and root. */
function answerer(query: SnapshotQuery, ownerId: string, rootId: string | null) {
  return async (read: TreeRead) => {
    switch (read.read) {
      case 'log': {
        const rows = await query<RawLogRow>({
          ...LOG,
          values: [ownerId, read.after.generation, read.after.row, read.limit],
        })
        return rows.map((row): LoggedRow => {
          const position = { generation: Number(row.generation), row: Number(row.row_id) }
          if (row.kind === 'owner') return { kind: 'owner', position }
          // Rows logged before migration 010 have no place: taken as a new place.
          const side = row.place === 0 ? 0 : 1
          return { kind: 'folder', position, id: row.folder_id as string, side, parentId: row.parent_id }
        })
      }
      case 'states': {
        const rows = await query<RawStates>({
          ...STATES,
          values: [ownerId, read.at.generation, read.at.row, read.ids],
        })
        return new Map(rows.map((row) => [row.id, history(row)]))
      }
      case 'placedUnder': {
        const rows = await query<{ id: string }>({
          ...PLACED_UNDER,
          values: [ownerId, read.at.generation, read.at.row, read.ids],
        })
        return new Set(rows.map((row) => row.id))
      }
      case 'children': {
        const rows = await query<RawChild>({
          ...(read.parent === null ? ROOT_CHILDREN : CHILDREN),
          values: [
            ownerId,
            read.at.generation,
            read.at.row,
            read.parent,
            read.after === '' ? null : read.after,
            rootId,
            read.limit,
          ],
        })
        return rows.map((row): ChildAt => ({
          folder: {
            id: row.id,
            name: row.name,
            folder_id: row.folder_id,
            created_at: Number(row.created_at),
            updated_at: Number(row.updated_at),
          } satisfies FolderRow,
          mayHaveChildren: row.may_have_children,
        }))
      }
    }
  }
}

export async function readTree(query: SnapshotQuery, q: TreeQuery): Promise<TreeResult> {
  const [state] = await query<RawState>({
    ...STATE,
    values: [q.ownerId, q.rootId, q.from?.position.generation ?? null],
  })
  if (state === undefined || !state.root_ok) return { outcome: 'parent-not-found' }
  if (!state.valid) return { outcome: 'expired' }
  const present = { generation: Number(state.present), row: ALL_ROWS }
  const answer = await readEach(
    treeAnswer({ ownerId: q.ownerId, rootId: q.rootId, from: q.from, limit: q.limit, present }),
    answerer(query, q.ownerId, q.rootId),
  )
  if (answer.outcome !== 'answer') return answer
  return {
    ...answer,
    owner: { id: q.ownerId, username: state.username, avatar_url: state.avatar_url },
    present,
  }
}
