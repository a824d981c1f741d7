import { createHash } from 'node:crypto'
import type { FolderRow, TreePath } from './store.js'
import { ask, type Reading } from './tree-reads.js'
import type { TreeAt } from './tree-states.js'

/**
 * The walk that sends a subtree (Store.readTree): the whole tree on a download, or the
 * subtree of a folder that came into the tree. Shared by both backends: a pre-order
 * depth-first walk from the subtree's top, siblings by id, so a parent always comes before
 * its children. A folder's place in that order is its path: the ids from the top down to
 * it, compared level by level (a path comes before its extensions). A page resumes after
 * the path of the last folder sent.
 *
 * Every page of one walk reads the tree as it was at ONE log position (tree-reads.ts): the
 * position where the download began, or where the folder came in. The tree at a position
 * never changes, so the pages together send exactly that tree, each folder once, whatever
 * is written meanwhile; the follow then goes on from that same position, and the client
 * holds, throughout, the tree at the cursor's position minus the part of the subtree not
 * walked yet. Each level is one keyset range read "the children of P at x with ids greater
 * than C, by id", left at the first child that may have children of its own, where the walk
 * goes down, or at its end, where it climbs: a page costs O(limit + depth) rows and one read
 * per folder with children or level climbed. A folder without children at x (its count now
 * is 0 and no old state after x names it as parent) has no read below it.
 *
 * Resuming: the cursor's head ids are checked level by level at x, each a live folder of the
 * owner whose parent is the level above (the top for level 1); they all hold, since the tree
 * at x is the same as when the path was sent. A path deeper than FULL_PATH_LEVELS keeps
 * HEAD_LEVELS ids, its last id and a digest of every id on it: the last folder is walked up
 * to the top and its digest compared. The cursor stays under 256 characters at any depth.
 * (Were a check to fail, the walk would go on after the last level that holds, or below the
 * last head level again: an upsert is put by id, so folders sent twice change nothing.)
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

/** The parent of `id` at the walk's position when it was a live folder of the owner and not the root. */
function* parentOf(tree: TreeAt, id: string): Reading<string | null | undefined> {
  yield* tree.load([id])
  return tree.liveParent(id)
}

/** How many of `head` still form a path down from `top`. */
function* validLevels(tree: TreeAt, top: string | null, head: readonly string[]): Reading<number> {
  let parent = top
  let level = 0
  for (const id of head) {
    if ((yield* parentOf(tree, id)) !== parent) break
    parent = id
    level++
  }
  return level
}

/** The whole path of `id`, when it is `depth` levels below `top`; else null. */
function* pathUp(tree: TreeAt, top: string | null, id: string, depth: number): Reading<string[] | null> {
  const path: string[] = []
  let at: string | null = id
  while (path.length < depth) {
    if (at === null || at === top) return null
    const parent: string | null | undefined = yield* parentOf(tree, at)
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

function* resume(tree: TreeAt, top: string | null, after: TreePath | null): Reading<Start> {
  if (after === null) return { path: [], descend: true }
  const { depth, head, tail } = after
  if (tail !== null) {
    const path = yield* pathUp(tree, top, tail.id, depth)
    if (path !== null && pathDigest(path).equals(tail.digest)) return { path, descend: true }
  }
  const valid = yield* validLevels(tree, top, head)
  if (valid === head.length) return { path: head.slice(), descend: true }
  return { path: head.slice(0, valid + 1), descend: false }
}

export interface WalkPage {
  folders: FolderRow[]
  /** the path of the last folder sent when more follow; else null */
  last: TreePath | null
  more: boolean
}

/**
 * Up to `limit` folders after `after` in the walk below `top` (null: the user's root) at the
 * position of `tree`, and whether more follow. Memory: the path of the folder reached.
 */
export function* walkTree(
  tree: TreeAt,
  top: string | null,
  after: TreePath | null,
  limit: number,
): Reading<WalkPage> {
  const { path, descend: below } = yield* resume(tree, top, after)
  const folders: FolderRow[] = []
  let descend = below
  let last: TreePath | null = null
  for (;;) {
    // One read per level entered or climbed to (more when a level is longer than the page):
    // below the path's last folder, or its siblings after it (when its subtree is done).
    let passed = ''
    if (!descend) {
      if (path.length === 0) return { folders, last: null, more: false }
      passed = path.pop() as string
    }
    descend = false
    const parent = path.at(-1) ?? top
    for (let level = true; level && !descend;) {
      // One more than the page has room for: `more` is then known without another read.
      const want = limit - folders.length + 1
      const children = yield* ask({ read: 'children', parent, after: passed, at: tree.at, limit: want })
      level = children.length === want
      for (const child of children) {
        if (folders.length === limit) return { folders, last, more: true }
        path.push(child.folder.id)
        folders.push(child.folder)
        if (folders.length === limit) last = treePathOf(path)
        if (child.mayHaveChildren) {
          descend = true
          break
        }
        passed = path.pop() as string
      }
    }
  }
}
