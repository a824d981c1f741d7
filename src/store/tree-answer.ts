import { ALL_ROWS, type ChangePosition, type FolderRow, type TreePath } from './store.js'
import { ask, type LoggedRow, type Reading } from './tree-reads.js'
import { StateUnknown, TreeAt } from './tree-states.js'
import { walkTree } from './tree-walk.js'

/**
 * One answer of the tree feed (docs/api.md "Folder tree"), decided from the owner's log
 * alone, so exactly, whatever is written meanwhile. The cursor is a position x and, while a
 * subtree is being sent, that subtree's top and the path of the last folder sent. The
 * client holds exactly the tree at x (tree-states.ts), minus, while a subtree is being sent,
 * the part of it after that path; every answer keeps that true:
 *
 * - A download is the walk of the whole tree at the position d where it began
 *   (tree-walk.ts); the cursor stays at d until the walk ends, then the follow reads the log
 *   after d.
 * - A follow answer covers the log range (x, q]: q is the present when every folder changed
 *   since x fits in `limit` entries, else the end of an earlier generation. Each folder F
 *   changed in the range gets ONE entry from comparing the tree at x with the tree at q: in
 *   the tree at q, an upsert of its state at q, with `previous_folder_id` its parent at x
 *   when it was in the tree at x under another parent; in at x and not at q, a remove
 *   naming its parent at x (where the client holds it), unless that parent left too (a
 *   remove above takes it along); in at neither, nothing. So changes outside the tree,
 *   below a folder that left it and of the root's own row send nothing.
 * - A folder in the tree at x that moves to another parent and leaves the tree later in
 *   the range ends the range right after that move: this answer moves it (an upsert with
 *   `previous_folder_id`), the next removes it from the parent it had when it left, where
 *   the client then holds it; or, when that parent left with it, says nothing of it.
 * - A folder that came into the tree in the range and may hold at q folders that did not
 *   change in it (walked(): an undeleted folder, one moved in from outside the tree) has its
 *   subtree at q sent next, as a walk at q: the range ends where a second such folder would
 *   enter it (so one per cursor), and the cursor moves to q with that subtree to send; the
 *   folders below it that arrived in the range get their one entry from the walk. Every
 *   other folder's membership changes only through its first changed ancestor, which is
 *   removed (its subtree goes with it), enters (its subtree is sent) or stays. A folder
 *   inserted or given to the user in the range holds only folders that changed in it too:
 *   no walk, each of them has its own entry, so such a burst goes on at `limit` a range.
 *
 * Upserts come before removes: a folder moved out from under one that then left is in its
 * new place, with its subtree, before the remove takes the rest. Cost: the log rows read
 * (at most ROW_CAP) and a seek per folder and ancestor at x and at q, not the backlog.
 */

/** Log rows read per answer at most; an answer whose rows add few entries ends there, has_more. */
const ROW_CAP = 4000

/** A subtree being sent: `top` null is the whole tree; `after` null: nothing sent yet. */
export interface Expansion {
  top: string | null
  after: TreePath | null
}

export type AnswerEntry =
  | { type: 'owner' }
  | { type: 'upsert'; folder: FolderRow; previousParent?: string | null }
  | { type: 'remove'; id: string; parentId: string | null }

export type TreeAnswer =
  /** a position whose states the log no longer holds whole (rows older than migration 015) */
  | { outcome: 'expired' }
  | {
      outcome: 'answer'
      entries: AnswerEntry[]
      /** the cursor's new position and expansion */
      position: ChangePosition
      expansion: Expansion | null
      more: boolean
    }

export interface TreeAnswerQuery {
  ownerId: string
  rootId: string | null
  /** null: a new download */
  from: { position: ChangePosition; expansion: Expansion | null } | null
  /** most entries */
  limit: number
  /** the owner's present position in the read's snapshot */
  present: ChangePosition
}

export function* treeAnswer(q: TreeAnswerQuery): Reading<TreeAnswer> {
  try {
    const from = q.from ?? { position: q.present, expansion: { top: null, after: null } }
    if (from.expansion !== null) return yield* expand(q, from.position, from.expansion)
    return yield* follow(q, from.position)
  } catch (error) {
    if (error instanceof StateUnknown) return { outcome: 'expired' }
    throw error
  }
}

/** A page of the subtree being sent, walked at the cursor's position x. */
function* expand(q: TreeAnswerQuery, x: ChangePosition, expansion: Expansion): Reading<TreeAnswer> {
  const tree = new TreeAt(x, q.ownerId, q.rootId)
  const page = yield* walkTree(tree, expansion.top ?? q.rootId, expansion.after, q.limit)
  const entries: AnswerEntry[] = page.folders.map((folder) => ({ type: 'upsert', folder }))
  if (page.more)
    return {
      outcome: 'answer',
      entries,
      position: x,
      expansion: { ...expansion, after: page.last },
      more: true,
    }
  // Walked: the follow goes on from x; with nothing logged after x, x is the present.
  const next = yield* ask({ read: 'log', after: x, limit: 1 })
  const more = next.length > 0
  return { outcome: 'answer', entries, position: more ? x : q.present, expansion: null, more }
}

/** The rows' index where a row's generation begins, when that is after 0; else `i`. */
function generationStart(rows: readonly LoggedRow[], i: number): number {
  let start = i
  while (start > 0 && rows[start - 1]?.position.generation === rows[i]?.position.generation) start--
  return start > 0 ? start : i
}

/** How many of the rows the first range takes: the folders they name (and the owner) fit in `limit`. */
function firstRange(rows: readonly LoggedRow[], q: TreeAnswerQuery): number {
  const named = new Set<string>()
  for (let end = 0; end < rows.length; end++) {
    const row = rows[end] as LoggedRow
    const key = row.kind === 'owner' ? '' : row.id
    if (key === q.rootId || named.has(key)) continue
    if (named.size === q.limit) return generationStart(rows, end)
    named.add(key)
  }
  return rows.length
}

/**
 * Where the range must end so that each folder leaving the tree leaves from the parent the
 * client holds it under: right after the generation of the first move, in the range, of a
 * folder in `leaving` (id -> its parent at x) to another parent; `end` when none moved.
 */
function endAfterMove(
  rows: readonly LoggedRow[],
  end: number,
  leaving: ReadonlyMap<string, string | null>,
): number {
  for (let i = 0; i < end; i++) {
    const row = rows[i] as LoggedRow
    if (
      row.kind !== 'folder' ||
      row.side !== 1 ||
      !leaving.has(row.id) ||
      leaving.get(row.id) === row.parentId
    )
      continue
    let next = i + 1
    while (next < end && rows[next]?.position.generation === row.position.generation) next++
    return next
  }
  return end
}

/** The folders a range changes, in the order of their first row there, each with that row's index. */
function changedIn(rows: readonly LoggedRow[], end: number, rootId: string | null) {
  const folders = new Map<string, number>()
  let owner = false
  rows.slice(0, end).forEach((row, i) => {
    if (row.kind === 'owner') owner = true
    // The root is not in its own tree: its own row changes nothing in it.
    else if (row.id !== rootId && !folders.has(row.id)) folders.set(row.id, i)
  })
  return { folders, owner }
}

/**
 * The log rows after x that the first range may take, read in chunks (the first of `limit` + 1
 * rows, then twice as many each time) until they name more folders than `limit`, pass
 * ROW_CAP, or reach the log's end. So an answer reads about as many rows as it has entries,
 * however long the log behind it; and when the rows read end before the log does, one row
 * at least lies past where the first range can end.
 */
function* logAfter(q: TreeAnswerQuery, x: ChangePosition): Reading<LoggedRow[]> {
  const rows: LoggedRow[] = []
  for (let chunk = q.limit + 1; ; chunk *= 2) {
    const want = Math.min(chunk, ROW_CAP + 1 - rows.length)
    const read = yield* ask({ read: 'log', after: rows.at(-1)?.position ?? x, limit: want })
    rows.push(...read)
    if (read.length < want || rows.length > ROW_CAP || firstRange(rows, q) < rows.length) return rows
  }
}

/**
 * The folders arriving in the range (in the tree at q, not at x) whose subtree at q is
 * walked: those that may hold at q a folder that changed nothing in the range (it has no
 * entry of its own), which was their child at x already. A folder that was the owner's at
 * x may have had children then. One that was not (inserted, or given to the owner, in the
 * range) had none: each folder below it at q changed in the range and has its entry, so a
 * subtree given to the user arrives once, folder by folder. Unless x lies inside the
 * statement that made or gave it with its children (an answer may end between their rows):
 * the log then names it as the parent of a new place at or before x.
 */
function* walked(arriving: readonly string[], before: TreeAt, after: TreeAt): Reading<Set<string>> {
  const walks = new Set<string>()
  const unknown: string[] = []
  for (const id of arriving) {
    if (after.state(id)?.mayHaveChildren !== true) continue
    const was = before.state(id)
    if (was === null) unknown.push(id)
    else if (was.mayHaveChildren) walks.add(id)
  }
  if (unknown.length > 0)
    for (const id of yield* ask({ read: 'placedUnder', ids: unknown, at: before.at })) walks.add(id)
  return walks
}

/** Whether a folder walked at q is above `id` (in the tree at q): the walk sends it. */
function underWalk(after: TreeAt, walks: ReadonlySet<string>, id: string): boolean {
  for (let at = after.state(id)?.parent ?? null; at !== null; at = after.state(at)?.parent ?? null) {
    if (walks.has(at)) return true
    if (after.liveParent(at) === undefined) return false
  }
  return false
}

function* follow(q: TreeAnswerQuery, x: ChangePosition): Reading<TreeAnswer> {
  const rows = yield* logAfter(q, x)
  const readable = Math.min(rows.length, ROW_CAP)
  let end = Math.min(firstRange(rows, q), readable)
  const before = new TreeAt(x, q.ownerId, q.rootId)
  for (;;) {
    const complete = end === rows.length
    const position: ChangePosition = complete
      ? { generation: q.present.generation, row: ALL_ROWS }
      : (rows[end - 1] as LoggedRow).position
    const after = new TreeAt(position, q.ownerId, q.rootId)
    const { folders, owner } = changedIn(rows, end, q.rootId)
    const ids = [...folders.keys()]
    yield* before.load(ids)
    yield* after.load(ids)
    // Where the client holds a folder that may leave: a remove there is covered when that parent left too.
    yield* after.load(ids.filter((id) => before.has(id)).map((id) => before.state(id)?.parent ?? null))

    const upserts: AnswerEntry[] = []
    const removes: AnswerEntry[] = []
    /** in the tree at q, not at x */
    const arriving: string[] = []
    /** in the tree at x, not at q: each with its parent at x */
    const leaving = new Map<string, string | null>()
    for (const id of ids) {
      const [held, inTree] = [before.has(id), after.has(id)]
      if (inTree) {
        const state = after.state(id) as NonNullable<ReturnType<TreeAt['state']>>
        const entry: AnswerEntry = { type: 'upsert', folder: state.folder }
        const was = before.state(id)?.parent
        if (held && was !== state.parent) entry.previousParent = was ?? null
        else if (!held) arriving.push(id)
        upserts.push(entry)
      } else if (held) {
        const parent = before.state(id)?.parent ?? null
        leaving.set(id, parent)
        if (parent === q.rootId || (parent !== null && after.has(parent)))
          removes.push({ type: 'remove', id, parentId: parent })
      }
    }
    const walks = yield* walked(arriving, before, after)
    const sentByWalk = new Set(arriving.filter((id) => underWalk(after, walks, id)))
    const tops = arriving.filter((id) => walks.has(id) && !sentByWalk.has(id))
    if (tops.length > 1) {
      // One subtree to send per cursor: the range ends before the second one's first row.
      end = generationStart(rows, folders.get(tops[1] as string) as number)
      continue
    }
    const moved = endAfterMove(rows, end, leaving)
    if (moved < end) {
      end = moved
      continue
    }
    // A folder the walk sends gets its one entry there.
    const own = upserts.filter((entry) => entry.type !== 'upsert' || !sentByWalk.has(entry.folder.id))
    const entries = [...(owner ? [{ type: 'owner' as const }] : []), ...own, ...removes]
    const top = tops[0]
    if (top !== undefined)
      return { outcome: 'answer', entries, position, expansion: { top, after: null }, more: true }
    return { outcome: 'answer', entries, position, expansion: null, more: !complete }
  }
}
