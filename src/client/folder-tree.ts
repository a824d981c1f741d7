import type { Folder, TreeEntry } from './types.js'
import { compareFolders } from './listing-order.js'

/**
 * A user's folder tree (or one subtree) as the tree feed builds it (docs/api.md "The folder
 * tree"): folders by id, and the ids of each parent's children, so a pane can render one
 * level without scanning the rest. An upsert puts the folder and, when it held it under
 * another parent (the move that `previous_folder_id` announces), takes it out of that
 * parent's children; a remove takes the folder and everything below it; an owner entry
 * sets the owner of every folder. A folder whose parent has not arrived yet is kept under
 * that parent's id until it does (the feed allows this between two answers at the present).
 */
export class FolderTree {
  readonly #folders = new Map<string, Folder>()
  /** parent id (null: the root) -> ids of its children */
  readonly #children = new Map<string | null, Set<string>>()

  /** how many folders the tree holds */
  get size(): number {
    return this.#folders.size
  }

  get(id: string): Folder | undefined {
    return this.#folders.get(id)
  }

  /** The children of `parentId` (the tree's root folder id, or null for the user's root), sorted as the listing. */
  children(parentId: string | null): Folder[] {
    const ids = this.#children.get(parentId)
    if (ids === undefined) return []
    const folders: Folder[] = []
    for (const id of ids) {
      const folder = this.#folders.get(id)
      if (folder !== undefined) folders.push(folder)
    }
    return folders.sort(compareFolders)
  }

  /** Every folder held, in no particular order. */
  folders(): IterableIterator<Folder> {
    return this.#folders.values()
  }

  apply(entries: readonly TreeEntry[]): void {
    for (const entry of entries) {
      if (entry.type === 'upsert') this.#put(entry.folder)
      else if (entry.type === 'remove') this.#remove(entry.id, entry.folder_id)
      else for (const [id, folder] of this.#folders) this.#folders.set(id, { ...folder, owner: entry.owner })
    }
  }

  #put(folder: Folder): void {
    const held = this.#folders.get(folder.id)
    if (held !== undefined && held.folder_id !== folder.folder_id) this.#detach(folder.id, held.folder_id)
    this.#folders.set(folder.id, folder)
    let siblings = this.#children.get(folder.folder_id)
    if (siblings === undefined) this.#children.set(folder.folder_id, (siblings = new Set()))
    siblings.add(folder.id)
  }

  /** Takes the folder and its whole subtree out; iterative, so a deep tree cannot overflow the stack. */
  #remove(id: string, parentId: string | null): void {
    this.#detach(id, this.#folders.get(id)?.folder_id ?? parentId)
    const pending = [id]
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      this.#folders.delete(next)
      const children = this.#children.get(next)
      if (children === undefined) continue
      this.#children.delete(next)
      for (const child of children) pending.push(child)
    }
  }

  #detach(id: string, parentId: string | null): void {
    const siblings = this.#children.get(parentId)
    siblings?.delete(id)
    if (siblings?.size === 0) this.#children.delete(parentId)
  }
}
