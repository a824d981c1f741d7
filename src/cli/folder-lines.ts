import { printable } from '../printable.js'
import type { FolderRecord } from '../store/store.js'

/** How `folder tree` and `folder list` print folders as text: one `Name/  id` line each. */

export function folderLine(folder: Pick<FolderRecord, 'name' | 'id'>): string {
  return `${printable(folder.name)}/  ${folder.id}`
}

/** Past this depth a line is indented no further and shows its depth as a number instead. */
const MAX_INDENTED_DEPTH = 20

/**
 * The tree as lines, depth first, written as they come: a 25,000-deep chain is 25,000 short
 * lines, not one string of indentation that grows with the square of the depth.
 */
function* treeLines(folders: FolderRecord[]): Generator<string> {
  const children = new Map<string | null, FolderRecord[]>()
  for (const folder of folders) {
    const siblings = children.get(folder.folder_id) ?? []
    siblings.push(folder)
    children.set(folder.folder_id, siblings)
  }
  // Iterative depth-first walk: a folder chain may be deeper than the call stack.
  const stack: { folder: FolderRecord; depth: number }[] = (children.get(null) ?? [])
    .map((folder) => ({ folder, depth: 0 }))
    .reverse()
  while (stack.length > 0) {
    const { folder, depth } = stack.pop() as { folder: FolderRecord; depth: number }
    const indent =
      depth <= MAX_INDENTED_DEPTH ? '  '.repeat(depth) : `${'  '.repeat(MAX_INDENTED_DEPTH)}[depth ${depth}] `
    yield `${indent}${folderLine(folder)}`
    for (const child of [...(children.get(folder.id) ?? [])].reverse())
      stack.push({ folder: child, depth: depth + 1 })
  }
}

/** Writes the lines to stdout in chunks of about 64 KB; `(no folders)` when there are none. */
export function writeFolderLines(lines: Iterable<string>): void {
  let chunk = ''
  let any = false
  for (const line of lines) {
    any = true
    chunk += `${line}\n`
    if (chunk.length >= 65_536) {
      process.stdout.write(chunk)
      chunk = ''
    }
  }
  process.stdout.write(any ? chunk : '(no folders)\n')
}

export function writeTree(folders: FolderRecord[]): void {
  writeFolderLines(treeLines(folders))
}
