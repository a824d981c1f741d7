import type { Folder } from '../client/index.js'

/**
 * The short sentence a screen reader hears when the open page changes live (a polite
 * announcement): what appeared on the page, what left it, what was renamed, and the new
 * total. "Now listed" rather than "added": a folder created before this page pushes one
 * from the page's end onto the next page, and that folder was not deleted.
 */

/** Names read out in one part before "and N more". */
const NAMED = 3

function some(items: readonly string[]): string {
  const shown = items.slice(0, NAMED)
  const more = items.length - shown.length
  return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ')
}

const names = (folders: readonly Folder[]) => some(folders.map((folder) => folder.name))

/** The summary of a page listed again, or null when nothing a reader sees changed. */
export function describeChanges(
  before: { folders: readonly Folder[]; total: number },
  after: { folders: readonly Folder[]; total: number },
): string | null {
  const old = new Map(before.folders.map((folder) => [folder.id, folder]))
  const now = new Set(after.folders.map((folder) => folder.id))
  const listed = after.folders.filter((folder) => !old.has(folder.id))
  const gone = before.folders.filter((folder) => !now.has(folder.id))
  const renamed = after.folders.flatMap((folder) => {
    const was = old.get(folder.id)
    return was !== undefined && was.name !== folder.name ? [`${was.name} to ${folder.name}`] : []
  })
  const parts: string[] = []
  if (listed.length > 0) parts.push(`Now listed: ${names(listed)}.`)
  if (renamed.length > 0) parts.push(`Renamed: ${some(renamed)}.`)
  if (gone.length > 0) parts.push(`No longer listed: ${names(gone)}.`)
  if (after.total !== before.total) parts.push(`${after.total} ${after.total === 1 ? 'folder' : 'folders'}.`)
  return parts.length === 0 ? null : parts.join(' ')
}
