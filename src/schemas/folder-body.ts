import type { FolderRow, OwnerInfo } from '../store/store.js'
import { formatTimestamp } from '../time.js'

/**
 * A folder's wire shape (the `Folder` schema of folder.ts) built from a Store row: the
 * listing's folders and the upserts of the changes and tree feeds are the same objects.
 * Beside folder.ts rather than in it: the folder browser loads folder.ts as it is, and this
 * module brings the server's time formatting and Store types.
 */
export function toFolderBody(row: FolderRow, owner: OwnerInfo) {
  return {
    id: row.id,
    name: row.name,
    folder_id: row.folder_id,
    owner,
    created_at: formatTimestamp(row.created_at),
    updated_at: formatTimestamp(row.updated_at),
  }
}
