import type { Folder, FolderTree } from '../client/index.js'

/**
 * What the tree pane shows, without the DOM: the rows of the expanded part of a user's
 * folder tree, and where each key of the WAI-ARIA tree pattern leads from a row. Only
 * expanded folders' children become rows, so 10,000 folders cost what is open, not what is
 * held.
 */

/** What the rows need of the client's FolderTree. */
export type TreeSource = Pick<FolderTree, 'get' | 'children'>

export interface TreeRow {
  folder: Folder
  /** 1 for the root's folders (aria-level) */
  level: number
  /** null: the folder has no children (a leaf has no aria-expanded) */
  expanded: boolean | null
  /** 1-based place among its siblings, and their number (aria-posinset, aria-setsize) */
  position: number
  siblings: number
}

/**
 * The rows shown, depth first: the root's folders and the children of every expanded
 * folder, siblings sorted by `compare` (the listing's order). Iterative, so a deep tree
 * cannot overflow the stack.
 */
export function visibleRows(
  tree: TreeSource,
  expanded: ReadonlySet<string>,
  compare: (a: Folder, b: Folder) => number,
): TreeRow[] {
  const rows: TreeRow[] = []
  const levelOf = (parentId: string | null, level: number) => {
    const children = tree.children(parentId).sort(compare)
    return children.map((folder, i) => ({ folder, level, position: i + 1, siblings: children.length }))
  }
  const pending = levelOf(null, 1).reverse()
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const hasChildren = tree.children(next.folder.id).length > 0
    const open = hasChildren && expanded.has(next.folder.id)
    rows.push({ ...next, expanded: hasChildren ? open : null })
    if (open) pending.push(...levelOf(next.folder.id, next.level + 1).reverse())
  }
  return rows
}

/**
 * The ids from the root's folder down to `id`, or null when the tree does not hold the
 * whole chain (the folder, or an ancestor, is not in it).
 */
export function trailOf(tree: TreeSource, id: string): string[] | null {
  const trail: string[] = []
  // Bounded by the tree's depth; a cycle cannot arise from the feed, but would stop here.
  for (let at: string | null = id; at !== null;) {
    const folder = tree.get(at)
    if (folder === undefined || trail.includes(at)) return null
    trail.unshift(at)
    at = folder.folder_id
  }
  return trail
}

/** What a key does from row `at`: move the focus to a row, expand or collapse one, or open one. */
export type TreeAction =
  { focus: number } | { expand: string } | { collapse: string } | { open: string } | null

/**
 * The WAI-ARIA tree pattern's keys: Up and Down move between shown rows, Home and End to
 * the first and last; Right expands a collapsed folder or goes to its first child; Left
 * collapses an expanded folder or goes to its parent; Enter opens the folder.
 */
export function keyAction(rows: readonly TreeRow[], at: number, key: string): TreeAction {
  const row = rows[at]
  if (row === undefined) return null
  switch (key) {
    case 'ArrowDown':
      return at + 1 < rows.length ? { focus: at + 1 } : null
    case 'ArrowUp':
      return at > 0 ? { focus: at - 1 } : null
    case 'Home':
      return { focus: 0 }
    case 'End':
      return { focus: rows.length - 1 }
    case 'ArrowRight':
      if (row.expanded === false) return { expand: row.folder.id }
      return row.expanded === true ? { focus: at + 1 } : null
    case 'ArrowLeft': {
      if (row.expanded === true) return { collapse: row.folder.id }
      const parent = rows.findLastIndex((other, i) => i < at && other.level < row.level)
      return parent < 0 ? null : { focus: parent }
    }
    case 'Enter':
      return { open: row.folder.id }
    default:
      return null
  }
}
