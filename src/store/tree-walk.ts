import { createHash } from 'node:crypto'
import type { FolderRow, TreePath } from './store.js'

/**
 * The tree download's walk (Store.readTreePage), shared by both backends: a pre-order
 * depth-first walk from the subtree's top, siblings by id, so a parent always comes before
 * its children. A folder's place in that order is its path: the ids from the top down to
 * it, compared level by level (a path comes before its extensions). A page resumes after
 * the path of the last folder sent. Each level is one keyset range read "the live children
 * of P with ids greater than C, by id" (index folders_tree, migration 012), read row by row
 * and left at the first child that has children of its own (the count kept by migration
 * 002), where the walk goes down, or at its end, where it climbs: a page costs
 * O(limit + depth) rows and one read per folder with children or level climbed, whatever
 * the size of the tree. A folder whose count is 0 has no read below it. (PostgreSQL runs
 * the same steps as one statement, a seek each: postgres-tree.ts.)
 *
 * Resuming (in the page's own snapshot): the cursor's head ids are checked level by level,
 * each a live folder of the owner whose parent is the level above (the top for level 1);
 * say the first m hold.
 * - Every level holds: the walk continues below the last folder sent.
 * - Level m+1 does not (moved, deleted, given away): the walk continues with the children
 *   of level m after that id; nothing below it is read, since it is not there any more.
 * - A path deeper than FULL_PATH_LEVELS keeps HEAD_LEVELS ids, its last id and a digest of
 *   every id on it: the last folder is walked up to the top, and when it is at the same
 *   depth with the same digest, the path holds whole. Otherwise, past the head, the walk
 *   starts again below the last head level: it may send folders a second time (an upsert is
 *   put by id, so the client ends the same), never skip one. The cursor stays under 256
 *   characters at any depth; a download whose deep path moves between every two pages
 *   sends that part again each time, and ends once the moves stop.
 *
 * Why the replay guarantee holds when folders on the cursor's path move or are deleted
 * between pages (docs/api.md "Folder tree"). The log is followed from the position of the
 * download's first page, and the follow sends, for each folder that came to a new place
 * (moved, undeleted, given to the user) and is in the tree, that folder and its whole
 * subtree as they are then. So the download only has to send every folder F of the final
 * tree none of whose path (F and its ancestors) came to a new place since that position:
 * every other folder is sent again by the follow, and any folder sent stale or since
 * removed is overwritten or removed by the log's own rows, which all come after. Such an F
 * had one path throughout, hence one place in the walk's order. Pages send, in that order
 * and each in one snapshot, every folder of the tree after the previous page's last path
 * up to their own last; F is in the tree at every snapshot; so the first page whose last
 * path is not before F's sends F, or, when none is, the last page, which reads to the end,
 * does. Folders on the cursor's path that moved change nothing of this: the resume above
 * reads the same order past the same path, only without the part that left. Nor does
 * skipping a folder whose count was 0 in the page's snapshot: a child it gets later was
 * created, moved, undeleted or given to the user after the download's first page, so it
 * comes to a new place, and the follow sends it with its subtree.
 */

/** Paths of up to this many levels are kept whole in a cursor. */
export const FULL_PATH_LEVELS = 7
/** The ids a deeper path keeps (with its last id and digest): a cursor of 150 bytes before sealing. */
export const HEAD_LEVELS = 5

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex')

/** The first 16 bytes of the SHA-256 of the path's ids (16 bytes each, outermost first). */
function pathDigest(ids: readonly string[]): Buffer {
  const hash = createHash('sha256')
  for (const id of ids) hash.update(uuidBytes(id))
  return hash.digest().subarray(0, 16)
}

/** The cursor's form of a whole path (outermost first). */
export function treePathOf(ids: readonly string[]): TreePath {
  if (ids.length <= FULL_PATH_LEVELS) return { depth: ids.length, head: [...ids], tail: null }
  return {
    depth: ids.length,
    head: ids.slice(0, HEAD_LEVELS),
    tail: { id: ids[ids.length - 1] as string, digest: pathDigest(ids) },
  }
}

/** A child as the walk reads it: the folder, and how many live children of its owner it has (migration 013). */
export interface WalkRow extends FolderRow {
  child_count: number
}

/** The reads the walk makes, each in the page's one snapshot. */
export interface WalkReads {
  /**
   * The live children of `parent` (null: the user's root) of the owner with ids greater than
   * `after` ('' : all), by id, never the tree's root folder. Read lazily: the walk stops
   * early, and makes no other read while it iterates.
   */
  childrenAfter(parent: string | null, after: string): Iterable<WalkRow>
  /** The parent of `id` when it is a live folder of the owner and not the tree's root; else undefined. */
  parentOf(id: string): string | null | undefined
}

/** How many of `head` still form a path down from `top`. */
function validLevels(reads: WalkReads, top: string | null, head: readonly string[]): number {
  let parent = top
  let level = 0
  for (const id of head) {
    if (reads.parentOf(id) !== parent) break
    parent = id
    level++
  }
  return level
}

/** The whole path of `id` now, when it is `depth` levels below `top`; else null. */
function pathUp(reads: WalkReads, top: string | null, id: string, depth: number): string[] | null {
  const path: string[] = []
  let at: string | null = id
  while (path.length < depth) {
    if (at === null || at === top) return null
    const parent = reads.parentOf(at)
    if (parent === undefined) return null
    path.push(at)
    at = parent
  }
  return at === top ? path.reverse() : null
}

/** Where a page starts: the path of the folder reached, and whether to read below it first. */
interface Start {
  path: string[]
  descend: boolean
}

function resume(reads: WalkReads, top: string | null, after: TreePath | null): Start {
  if (after === null) return { path: [], descend: true }
  const { depth, head, tail } = after
  if (tail !== null) {
    const path = pathUp(reads, top, tail.id, depth)
    if (path !== null && pathDigest(path).equals(tail.digest)) return { path, descend: true }
  }
  const valid = validLevels(reads, top, head)
  // Every head level holds: below the last folder sent, or (a deeper path that moved past
  // the head) below the last head level again.
  if (valid === head.length) return { path: head.slice(), descend: true }
  return { path: head.slice(0, valid + 1), descend: false }
}

/**
 * Up to `limit` folders after `after` in the walk below `top`, and whether more follow.
 * Memory: the path of the folder reached (its depth in ids), beside the page.
 */
export function walkTree(
  reads: WalkReads,
  top: string | null,
  after: TreePath | null,
  limit: number,
): { folders: FolderRow[]; last: TreePath | null; more: boolean } {
  const { path, descend: below } = resume(reads, top, after)
  const folders: FolderRow[] = []
  let descend = below
  let last: TreePath | null = null
  for (;;) {
    // One read per level entered or climbed to: below the path's last folder, or its
    // siblings after it (when its subtree is done).
    let passed = ''
    if (!descend) {
      if (path.length === 0) return { folders, last: null, more: false }
      passed = path.pop() as string
    }
    descend = false
    for (const row of reads.childrenAfter(path.at(-1) ?? top, passed)) {
      if (folders.length === limit) return { folders, last, more: true }
      path.push(row.id)
      folders.push(folderOf(row))
      if (folders.length === limit) last = treePathOf(path)
      // A count of 0 in this snapshot: nothing below to read. A child created later is a log
      // row with a new place, which the follow sends with its subtree.
      if (row.child_count > 0) {
        descend = true
        break
      }
      path.pop()
    }
  }
}

const folderOf = ({ id, name, folder_id, created_at, updated_at }: WalkRow): FolderRow => ({
  id,
  name,
  folder_id,
  created_at,
  updated_at,
})
