import type Database from 'better-sqlite3'
import type {
  FolderRow,
  OwnerInfo,
  TreeLogQuery,
  TreeLogResult,
  TreeLogRow,
  TreePageQuery,
  TreePageResult,
} from '../store.js'
import { ALL_ROWS } from '../store.js'
import { walkTree, type WalkReads, type WalkRow } from '../tree-walk.js'

/**
 * The folder tree's reads on SQLite (Store.readTreePage, Store.readTreeLog), each run by the
 * adapter inside one read transaction. A folder is in the tree of $root when it is live, the
 * owner's, not $root itself, and its parent is $root (NULL: the user's root) or in the tree.
 */

/**
 * $id's current state when it is in the tree of $root: walks up from it through live folders
 * of $owner until a parent is $root. UNION drops a repeated (folder, parent) step, so a
 * parent cycle written by hand ends the walk instead of looping.
 */
const IN_TREE = `
  WITH RECURSIVE up(parent) AS (
    SELECT folder_id FROM folders
     WHERE id = $id AND owner_id = $owner AND is_deleted = 0 AND id IS NOT $root
    UNION
    SELECT p.folder_id FROM up CROSS JOIN folders AS p ON p.id = up.parent
     WHERE p.owner_id = $owner AND p.is_deleted = 0 AND up.parent IS NOT $root
  )
  SELECT f.id, f.name, f.folder_id, f.created_at, f.updated_at FROM folders AS f
   WHERE f.id = $id AND EXISTS (SELECT 1 FROM up WHERE parent IS $root)`

/**
 * The tree walk's two reads (src/store/tree-walk.ts): the live children of a parent (NULL:
 * the user's root) with ids after a given one, by id, with their own live-child counts, a
 * range on folders_tree; and the parent of a live folder, a seek. The tree's root is never
 * walked into again (a parent cycle written by hand through it). Positional parameters:
 * faster to bind than named ones.
 */
const CHILDREN_AFTER = `
  SELECT id, name, folder_id, created_at, updated_at, child_count FROM folders
   WHERE owner_id = ? AND folder_id IS ? AND is_deleted = 0 AND id > ? AND id IS NOT ?
   ORDER BY id`

const PARENT = `
  SELECT folder_id FROM folders WHERE id = ? AND owner_id = ? AND is_deleted = 0 AND id IS NOT ?`

const LOG = `
  SELECT generation, id, kind, parent_id, folder_id FROM folder_changes
   WHERE owner_id = $owner AND (generation, id) > ($generation, $row) AND kind IN ('folder', 'owner')
   ORDER BY generation, id LIMIT $limit`

/**
 * The folders that come to a new place (side 1, migration 010) after ($generation, $row), with
 * the position of their last such row: a folder below one of them is in the tree now only
 * through a change the follow has not reached yet (Store.readTreeLog).
 */
const PLACED_LATER = `
  SELECT folder_id, max(generation) AS generation FROM folder_changes
   WHERE owner_id = $owner AND (generation, id) > ($generation, $row) AND kind = 'folder' AND id = 1
   GROUP BY folder_id`

interface OwnerRow extends OwnerInfo {
  listing_generation: number
}

export interface TreeStatements {
  owner: Database.Statement
  liveFolder: Database.Statement
  inTree: Database.Statement
  childrenAfter: Database.Statement
  parent: Database.Statement
  log: Database.Statement
  placedLater: Database.Statement
  valid: Database.Statement
}

export function prepareTreeStatements(db: Database.Database, valid: Database.Statement): TreeStatements {
  return {
    owner: db.prepare('SELECT id, username, avatar_url, listing_generation FROM users WHERE id = ?'),
    liveFolder: db.prepare('SELECT 1 FROM folders WHERE id = ? AND owner_id = ? AND is_deleted = 0').pluck(),
    inTree: db.prepare(IN_TREE),
    childrenAfter: db.prepare(CHILDREN_AFTER),
    parent: db.prepare(PARENT).pluck(),
    log: db.prepare(LOG),
    placedLater: db.prepare(PLACED_LATER),
    valid,
  }
}

/** The owner, when it exists and the tree's root is a live folder of theirs. */
function treeOwner(s: TreeStatements, ownerId: string, rootId: string | null): OwnerRow | null {
  const owner = s.owner.get(ownerId) as OwnerRow | undefined
  if (owner === undefined) return null
  if (rootId !== null && s.liveFolder.get(rootId, ownerId) === undefined) return null
  return owner
}

const info = ({ id, username, avatar_url }: OwnerRow): OwnerInfo => ({ id, username, avatar_url })
const presentOf = (owner: OwnerRow) => ({ generation: owner.listing_generation, row: ALL_ROWS })

export function readTreePageNow(s: TreeStatements, q: TreePageQuery): TreePageResult {
  const owner = treeOwner(s, q.ownerId, q.rootId)
  if (owner === null) return { outcome: 'parent-not-found' }
  const result = { outcome: 'page' as const, owner: info(owner), present: presentOf(owner) }
  const tree = { owner: q.ownerId, root: q.rootId }
  if (q.subtreeOf !== null && s.inTree.get({ ...tree, id: q.subtreeOf }) === undefined) {
    return { ...result, folders: [], last: null, more: false }
  }
  const reads: WalkReads = {
    childrenAfter: (parent, after) =>
      s.childrenAfter.iterate(q.ownerId, parent, after, q.rootId) as IterableIterator<WalkRow>,
    parentOf: (id) => s.parent.get(id, q.ownerId, q.rootId) as string | null | undefined,
  }
  return { ...result, ...walkTree(reads, q.subtreeOf ?? q.rootId, q.after, q.limit) }
}

interface RawLogRow {
  generation: number
  id: number
  kind: 'folder' | 'owner'
  parent_id: string | null
  folder_id: string | null
}

export function readTreeLogNow(s: TreeStatements, q: TreeLogQuery): TreeLogResult {
  const owner = treeOwner(s, q.ownerId, q.rootId)
  if (owner === null) return { outcome: 'parent-not-found' }
  if (s.valid.get({ owner: q.ownerId, generation: q.after.generation }) !== 1) return { outcome: 'expired' }
  const raw = s.log.all({
    owner: q.ownerId,
    generation: q.after.generation,
    row: q.after.row,
    limit: q.limit + 1,
  }) as RawLogRow[]
  const tree = { owner: q.ownerId, root: q.rootId }
  const after = { owner: q.ownerId, generation: q.after.generation, row: q.after.row }
  // A generation holds one folder's rows on SQLite (a trigger per row), so a side-1 row at a
  // later generation is after every row of an earlier one.
  const placedLater = new Map(
    (s.placedLater.all(after) as { folder_id: string; generation: number }[]).map((r) => [
      r.folder_id,
      r.generation,
    ]),
  )
  const rows = raw.slice(0, q.limit).map((row): TreeLogRow => {
    const position = { generation: row.generation, row: row.id }
    if (row.kind === 'owner') return { kind: 'owner', position }
    const id = row.folder_id as string
    let folder = (s.inTree.get({ ...tree, id }) as FolderRow | undefined) ?? null
    if (folder !== null && placedLater.size > 0 && underLaterPlace(s, q, folder, row.generation, placedLater))
      folder = null
    // A generation's rows are numbered by their side (migration 010): 0 old, 1 new.
    return { kind: 'folder', position, id, parentId: row.parent_id, side: row.id === 0 ? 0 : 1, folder }
  })
  return { outcome: 'log', rows, more: raw.length > q.limit, owner: info(owner), present: presentOf(owner) }
}

/**
 * Whether an ancestor of `folder` (in the tree now) comes to a new place after `generation`:
 * then the folder is reached now only through that later change, and the follow treats it
 * as not in the tree until it reaches that row (Store.readTreeLog).
 */
function underLaterPlace(
  s: TreeStatements,
  q: TreeLogQuery,
  folder: FolderRow,
  generation: number,
  placedLater: ReadonlyMap<string, number>,
): boolean {
  // In the tree now, so its parents lead up to the root without a cycle.
  for (let at = folder.folder_id; at !== null && at !== q.rootId;) {
    if ((placedLater.get(at) ?? 0) > generation) return true
    at = (s.parent.get(at, q.ownerId, q.rootId) as string | null | undefined) ?? null
  }
  return false
}
