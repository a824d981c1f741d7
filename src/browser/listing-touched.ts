import type { TreeEntry } from '../client/index.js'

/**
 * Whether entries of the tree feed (docs/api.md "The folder tree") change what the listing
 * of `folderId` (null: the root) shows, so that the page lists it again: a folder put under
 * it or moved away from it (`previous_folder_id`), one removed from it, the open folder
 * itself removed (the listing is now 404), or the owner's name or avatar (on every row).
 */
export function touchesListing(changes: readonly TreeEntry[], folderId: string | null): boolean {
  return changes.some((entry) => {
    if (entry.type === 'owner') return true
    if (entry.type === 'remove') return entry.folder_id === folderId || entry.id === folderId
    return entry.folder.folder_id === folderId || entry.previous_folder_id === folderId
  })
}
