import type Database from 'better-sqlite3'
import type { ChangePosition, FolderRow, OwnerInfo, TreeQuery, TreeResult } from '../store.js'
import { ALL_ROWS } from '../store.js'
import { limitSlot } from './limit-slot.js'
import { treeAnswer } from '../tree-answer.js'
import { readNow, type ChildAt, type FolderHistory, type LoggedRow, type TreeRead } from '../tree-reads.js'

/**
 * The folder tree's reads on SQLite (Store.readTree), run by the adapter inside one read
 * transaction: the reads of src/store/tree-reads.ts, each a seek or a short range on the
 * indexes of migration 015. A generation's rows are numbered by their side (migration 010):
 * 0 the old state, 1 a new place; so a side-0 row is after (g, r) exactly when its
 * generation is after g.
 *
 * Each read names its index (INDEXED BY): SQLite keeps no statistics here, and its planner
 * took the primary key's range "the owner's rows after the position" for a folder's first
 * row after it, a read of the whole backlog behind the cursor for every folder of an answer
 * (6 s for an answer of 1,000 at 20,000 commits behind). A seek on the named index costs
 * the same at any distance; a statement whose index is gone fails to prepare, loudly.
 */

const LOG = `
  SELECT generation, id, kind, parent_id, folder_id FROM folder_changes
   WHERE owner_id = $owner AND (generation, id) > ($generation, $row) AND kind IN ('folder', 'owner')
   ORDER BY generation, id LIMIT ${limitSlot('$limit')}`

/** A folder's first log row after a position (index folder_changes_by_folder). */
const FIRST_AFTER = `
  SELECT id AS side, parent_id, live, name, created_at, updated_at
    FROM folder_changes INDEXED BY folder_changes_by_folder
   WHERE owner_id = $owner AND kind = 'folder' AND folder_id = $id AND (generation, id) > ($generation, $row)
   ORDER BY generation, id LIMIT 1`

/** An old state after a position names the folder as parent (index folder_changes_by_old_parent). */
const PARENT_OF_OLD_STATE = `
  SELECT 1 FROM folder_changes INDEXED BY folder_changes_by_old_parent
   WHERE owner_id = $owner AND parent_id = $id AND kind = 'folder' AND id = 0 AND generation > $generation
   LIMIT 1`

/**
 * A new place at or before a position is under the folder (index folder_changes_by_new_parent,
 * migration 017); its generation at most the position's, a superset of "at or before".
 */
const PLACED_UNDER = `
  SELECT 1 FROM folder_changes INDEXED BY folder_changes_by_new_parent
   WHERE owner_id = $owner AND parent_id = $id AND kind = 'folder' AND id = 1 AND generation <= $generation
   LIMIT 1`

const NOW = `
  SELECT id, name, folder_id, created_at, updated_at, owner_id, is_deleted, child_count FROM folders WHERE id = ?`

/**
 * A folder's history after a position (tree-reads.ts FolderHistory) in one statement, a
 * seek on each of three indexes: its first log row after the position, its row now, and
 * whether an old state after the position names it as the parent. An answer reads one per
 * folder and ancestor at each of its two positions: one statement, not three.
 */
const HISTORY = `
  SELECT c.side, c.parent_id, c.live, c.name, c.created_at, c.updated_at,
         f.name AS now_name, f.folder_id AS now_parent, f.created_at AS now_created_at,
         f.updated_at AS now_updated_at, f.owner_id, f.is_deleted, f.child_count,
         EXISTS (${PARENT_OF_OLD_STATE}) AS parent_of_old_state
    FROM (SELECT 1) AS one
    LEFT JOIN (${FIRST_AFTER}) AS c ON 1
    LEFT JOIN folders AS f ON f.id = $id`

/**
 * The children of a parent at a position that have not changed since: its live children now
 * with no log row after the position; by id, on folders_tree.
 */
const UNCHANGED_CHILDREN = `
  SELECT f.id, f.name, f.folder_id, f.created_at, f.updated_at, f.child_count FROM folders AS f
   WHERE f.owner_id = $owner AND f.folder_id IS $parent AND f.is_deleted = 0 AND f.id > $after
     AND f.id IS NOT $root
     AND NOT EXISTS (SELECT 1 FROM folder_changes AS c INDEXED BY folder_changes_by_folder
                      WHERE c.owner_id = $owner AND c.kind = 'folder' AND c.folder_id = f.id
                        AND (c.generation, c.id) > ($generation, $row))
   ORDER BY f.id LIMIT ${limitSlot('$limit')}`

/**
 * The children of a parent at a position that changed since: an old state after the
 * position, live under that parent, that is its folder's first row after it. Read by parent
 * and generation (not by folder id, which would read every row of the owner's log).
 */
const CHANGED_CHILDREN = `
  SELECT c.folder_id AS id, c.name, c.parent_id AS folder_id, c.created_at, c.updated_at
    FROM folder_changes AS c INDEXED BY folder_changes_by_old_parent
   WHERE c.owner_id = $owner AND c.parent_id IS $parent AND c.kind = 'folder' AND c.id = 0
     AND c.generation > $generation AND c.live = 1 AND c.folder_id > $after AND c.folder_id IS NOT $root
     AND NOT EXISTS (SELECT 1 FROM folder_changes AS e INDEXED BY folder_changes_by_folder
                      WHERE e.owner_id = $owner AND e.kind = 'folder' AND e.folder_id = c.folder_id
                        AND (e.generation, e.id) > ($generation, $row)
                        AND (e.generation, e.id) < (c.generation, c.id))
   ORDER BY c.folder_id LIMIT ${limitSlot('$limit')}`

interface OwnerRow extends OwnerInfo {
  listing_generation: number
}

export interface TreeStatements {
  owner: Database.Statement
  liveFolder: Database.Statement
  log: Database.Statement
  history: Database.Statement
  parentOfOldState: Database.Statement
  placedUnder: Database.Statement
  now: Database.Statement
  unchangedChildren: Database.Statement
  changedChildren: Database.Statement
  valid: Database.Statement
}

export function prepareTreeStatements(db: Database.Database, valid: Database.Statement): TreeStatements {
  return {
    owner: db.prepare('SELECT id, username, avatar_url, listing_generation FROM users WHERE id = ?'),
    liveFolder: db.prepare('SELECT 1 FROM folders WHERE id = ? AND owner_id = ? AND is_deleted = 0').pluck(),
    log: db.prepare(LOG),
    history: db.prepare(HISTORY),
    parentOfOldState: db.prepare(PARENT_OF_OLD_STATE).pluck(),
    placedUnder: db.prepare(PLACED_UNDER).pluck(),
    now: db.prepare(NOW),
    unchangedChildren: db.prepare(UNCHANGED_CHILDREN),
    changedChildren: db.prepare(CHANGED_CHILDREN),
    valid,
  }
}

interface RawLogRow {
  generation: number
  id: number
  kind: 'folder' | 'owner'
  parent_id: string | null
  folder_id: string | null
}

interface RawHistory {
  side: number | null
  parent_id: string | null
  live: number | null
  name: string | null
  created_at: number | null
  updated_at: number | null
  now_name: string | null
  now_parent: string | null
  now_created_at: number | null
  now_updated_at: number | null
  owner_id: string | null
  is_deleted: number | null
  child_count: number | null
  parent_of_old_state: number
}

interface RawNow extends FolderRow {
  owner_id: string
  is_deleted: number
  child_count: number
}

type RawChild = FolderRow & { child_count?: number }

const folderOf = ({ id, name, folder_id, created_at, updated_at }: FolderRow): FolderRow => ({
  id,
  name,
  folder_id,
  created_at,
  updated_at,
})

/** Answers the reads of tree-reads.ts for one owner and root. */
function answerer(s: TreeStatements, ownerId: string, rootId: string | null) {
  const at = ({ generation, row }: ChangePosition) => ({ owner: ownerId, generation, row })
  const parentOfOldState = (id: string, position: ChangePosition) =>
    s.parentOfOldState.get({ owner: ownerId, id, generation: position.generation }) !== undefined
  const history = (id: string, position: ChangePosition): FolderHistory => {
    const h = s.history.get({ ...at(position), id }) as RawHistory
    return {
      first:
        h.side === null
          ? null
          : h.side === 1
            ? { side: 1 }
            : {
                side: 0,
                live: h.live === null ? null : h.live === 1,
                parentId: h.parent_id,
                name: h.name,
                created_at: h.created_at,
                updated_at: h.updated_at,
              },
      now:
        h.owner_id === null
          ? null
          : {
              folder: {
                id,
                name: h.now_name as string,
                folder_id: h.now_parent,
                created_at: h.now_created_at as number,
                updated_at: h.now_updated_at as number,
              },
              ownerId: h.owner_id,
              deleted: h.is_deleted !== 0,
              childCount: h.child_count ?? 0,
            },
      parentOfOldState: h.parent_of_old_state === 1,
    }
  }
  const children = (read: Extract<TreeRead, { read: 'children' }>): ChildAt[] => {
    const params = { ...at(read.at), parent: read.parent, after: read.after, root: rootId, limit: read.limit }
    const unchanged = s.unchangedChildren.all(params) as RawChild[]
    const changed = s.changedChildren.all(params) as RawChild[]
    return [...unchanged, ...changed]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, read.limit)
      .map((row) => ({
        folder: folderOf(row),
        mayHaveChildren:
          (row.child_count ?? (s.now.get(row.id) as RawNow | undefined)?.child_count ?? 0) > 0 ||
          parentOfOldState(row.id, read.at),
      }))
  }
  return (read: TreeRead) => {
    switch (read.read) {
      case 'log':
        return (s.log.all({ ...at(read.after), limit: read.limit }) as RawLogRow[]).map((row): LoggedRow =>
          row.kind === 'owner'
            ? { kind: 'owner', position: { generation: row.generation, row: row.id } }
            : {
                kind: 'folder',
                position: { generation: row.generation, row: row.id },
                id: row.folder_id as string,
                side: row.id === 0 ? 0 : 1,
                parentId: row.parent_id,
              },
        )
      case 'states':
        return new Map(read.ids.map((id) => [id, history(id, read.at)]))
      case 'children':
        return children(read)
      case 'placedUnder':
        return new Set(
          read.ids.filter(
            (id) => s.placedUnder.get({ owner: ownerId, id, generation: read.at.generation }) !== undefined,
          ),
        )
    }
  }
}

export function readTreeNow(s: TreeStatements, q: TreeQuery): TreeResult {
  const owner = s.owner.get(q.ownerId) as OwnerRow | undefined
  if (owner === undefined) return { outcome: 'parent-not-found' }
  if (q.rootId !== null && s.liveFolder.get(q.rootId, q.ownerId) === undefined)
    return { outcome: 'parent-not-found' }
  if (q.from !== null && s.valid.get({ owner: q.ownerId, generation: q.from.position.generation }) !== 1)
    return { outcome: 'expired' }
  const present = { generation: owner.listing_generation, row: ALL_ROWS }
  const answer = readNow(
    treeAnswer({ ownerId: q.ownerId, rootId: q.rootId, from: q.from, limit: q.limit, present }),
    answerer(s, q.ownerId, q.rootId),
  )
  if (answer.outcome !== 'answer') return answer
  const { id, username, avatar_url } = owner
  return { ...answer, owner: { id, username, avatar_url }, present }
}
