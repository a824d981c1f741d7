import { Option, type Command } from 'commander'
import { normaliseName, validateImport } from '../../import/validate-import.js'
import { DEFAULT_ORDER, LISTING_ORDERS, type ListingOrder } from '../../ordering/listing-orders.js'
import { compareKeys, naturalKey } from '../../ordering/natural-key.js'
import type { FolderRecord, FolderRow, MoveOutcome, Store } from '../../store/store.js'
import { folderLine, writeFolderLines, writeTree } from '../folder-lines.js'
import { requireUser, requireUuid } from '../lookups.js'
import { ownRecords, print, UsageError, withStore, type DbOptions } from '../run-command.js'

/**
 * folder add, delete, rename, move, list and tree (README "Command line"). Every write is
 * plain SQL on the folders table through the admin store, so the database's triggers keep
 * the counts, generations and change log right exactly as for any other writer.
 */

type JsonOption = DbOptions & { json?: boolean }
type ListOptions = JsonOption & { user: string; order: ListingOrder }

/** `--order`, as GET /v1/folders takes `order` (docs/api.md "Natural order"). */
const orderOption = () =>
  new Option(
    '--order <order>',
    'name (by code point) or name_natural (numbers by value, case and accents folded)',
  )
    .choices(LISTING_ORDERS)
    .default(DEFAULT_ORDER)

/**
 * Folders given in the name order (name, created_at, id), put in `order`. The natural order
 * is its sort key first, then those same tie-breaks, so a stable sort by the key alone gives it.
 */
function inOrder<T extends Pick<FolderRow, 'name'>>(folders: T[], order: ListingOrder): T[] {
  if (order === 'name') return folders
  return folders
    .map((folder) => ({ folder, key: naturalKey(folder.name) }))
    .sort((a, b) => compareKeys(a.key, b.key))
    .map(({ folder }) => folder)
}

/** `folder list` reads the listing in slices of this many, by seeking the listing index. */
const LIST_BATCH = 1000

/** A folder as `--json` shows it: what a listing shows of it, without the owner. */
const shown = (folder: Pick<FolderRow, 'id' | 'name' | 'folder_id'>) => ({
  id: folder.id,
  name: folder.name,
  folder_id: folder.folder_id,
})

/** The same rules as `folder add` (an imported folder's): trimmed, 1 to 255 characters. */
function requireName(raw: string): string {
  const result = normaliseName(raw)
  if ('reason' in result) throw new UsageError(`folder ${result.reason}`)
  return result.name
}

/** Every direct live sub-folder of `parentId` in listing order; null when it is not a live folder of the owner. */
async function directSubfolders(
  store: Store,
  ownerId: string,
  parentId: string | null,
  order: ListingOrder,
): Promise<FolderRow[] | null> {
  const first = await store.listFolders({ ownerId, parentId, page: 1, limit: LIST_BATCH, order })
  if (first === null) return null
  const folders = [...first.folders]
  for (let batch = first.folders; batch.length === LIST_BATCH;) {
    const last = batch[batch.length - 1] as FolderRow
    const next = await store.listFolders({
      ownerId,
      parentId,
      page: 1,
      limit: LIST_BATCH,
      order,
      seek: { direction: 'after', key: { name: last.name, created_at: last.created_at, id: last.id } },
    })
    // The parent went away meanwhile: what was read is still an answer.
    batch = next?.folders ?? []
    folders.push(...batch)
  }
  return folders
}

const MOVE_REFUSED: Record<Exclude<MoveOutcome, 'moved'>, (id: string, parentId: string) => string> = {
  'no-folder': (id) => `no live folder ${id}`,
  'no-parent': (_, parentId) => `--parent ${parentId} is not a live folder of the same user`,
  'into-itself': (id, parentId) =>
    `cannot move folder ${id} into ${parentId === id ? 'itself' : `its own sub-folder ${parentId}`}`,
}

function registerAdd(folder: Command): void {
  folder
    .command('add')
    .description('create a folder; prints its id')
    .requiredOption('--user <user>', 'owner: username or user id')
    .requiredOption('--name <name>', 'folder name (trimmed; 1 to 255 characters)')
    .option('--parent <id>', 'parent folder id (default: the root)')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the folder as JSON')
    .action((options: JsonOption & { user: string; name: string; parent?: string }) =>
      withStore(options, async (store) => {
        const owner = await requireUser(store, options.user)
        const parentId = options.parent === undefined ? null : requireUuid(options.parent, '--parent')
        if (parentId !== null) {
          const parent = await store.findFolder(parentId)
          if (parent === null || parent.is_deleted || parent.owner_id !== owner.id) {
            throw new UsageError(`no live folder ${parentId} of ${owner.username}`)
          }
        }
        const data = await ownRecords(() =>
          validateImport(
            { folders: [{ name: requireName(options.name), folder_id: parentId, owner_id: owner.id }] },
            Date.now(),
          ),
        )
        const created = data.folders[0]?.row as FolderRecord
        // One change of its parent for the feed's followers; an import would reset the feed.
        await store.addFolder(created)
        print(options.json, { ...shown(created), owner_id: created.owner_id }, () => created.id)
      }),
    )
}

function registerDelete(folder: Command): void {
  folder
    .command('delete')
    .description('mark a folder deleted (logical; it and the folders under it leave the listings)')
    .argument('<id>', 'folder id')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the outcome as JSON')
    .action((id: string, options: JsonOption) =>
      withStore(options, async (store) => {
        const folderId = requireUuid(id, 'folder id')
        const deleted = await store.deleteFolder(folderId, Date.now())
        if (deleted === null) throw new UsageError(`no live folder ${folderId}`)
        const hidden = deleted.hiddenFolders
        print(options.json, { id: folderId, hidden_subfolders: hidden }, () =>
          hidden === 0
            ? 'folder deleted (it had no live sub-folders)'
            : `folder deleted, and with it ${hidden} live sub-folder${hidden === 1 ? '' : 's'} (any depth) no longer listed`,
        )
      }),
    )
}

function registerRename(folder: Command): void {
  folder
    .command('rename')
    .description('rename a live folder (same name rules as folder add)')
    .argument('<id>', 'folder id')
    .requiredOption('--name <name>', 'new name (trimmed; 1 to 255 characters)')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the folder as JSON')
    .action((id: string, options: JsonOption & { name: string }) =>
      withStore(options, async (store) => {
        const folderId = requireUuid(id, 'folder id')
        const name = requireName(options.name)
        if (!(await store.renameFolder(folderId, name, Date.now()))) {
          throw new UsageError(`no live folder ${folderId}`)
        }
        const renamed = await store.findFolder(folderId)
        print(
          options.json,
          renamed === null ? { id: folderId, name } : shown(renamed),
          () => 'folder renamed',
        )
      }),
    )
}

function registerMove(folder: Command): void {
  folder
    .command('move')
    .description('move a live folder under another live folder of the same user, or to the root')
    .argument('<id>', 'folder id')
    .option('--parent <id>', 'the new parent folder id')
    .addOption(new Option('--root', 'move it to the root').conflicts('parent'))
    .option('--db <url>', 'database URL')
    .option('--json', 'print the folder as JSON')
    .action((id: string, options: JsonOption & { parent?: string; root?: boolean }) =>
      withStore(options, async (store) => {
        const folderId = requireUuid(id, 'folder id')
        if (options.parent === undefined && options.root !== true) {
          throw new UsageError('folder move needs --parent ID or --root')
        }
        const parentId = options.parent === undefined ? null : requireUuid(options.parent, '--parent')
        const outcome = await store.moveFolder(folderId, parentId, Date.now())
        if (outcome !== 'moved') throw new UsageError(MOVE_REFUSED[outcome](folderId, parentId ?? ''))
        const moved = await store.findFolder(folderId)
        print(
          options.json,
          moved === null ? { id: folderId, folder_id: parentId } : shown(moved),
          () => `folder moved to ${parentId === null ? 'the root' : parentId}`,
        )
      }),
    )
}

function registerList(folder: Command): void {
  folder
    .command('list')
    .description("print a folder's direct sub-folders (default: the user's root) in listing order")
    .requiredOption('--user <user>', 'username or user id')
    .option('--parent <id>', 'the folder whose sub-folders are listed (default: the root)')
    .addOption(orderOption())
    .option('--db <url>', 'database URL')
    .option('--json', 'print the folders as JSON')
    .action((options: ListOptions & { parent?: string }) =>
      withStore(options, async (store) => {
        const owner = await requireUser(store, options.user)
        const parentId = options.parent === undefined ? null : requireUuid(options.parent, '--parent')
        const folders = await directSubfolders(store, owner.id, parentId, options.order)
        if (folders === null) throw new UsageError(`no live folder ${parentId} of ${owner.username}`)
        if (options.json) print(true, folders.map(shown), () => '')
        else writeFolderLines(folders.map(folderLine))
      }),
    )
}

function registerTree(folder: Command): void {
  folder
    .command('tree')
    .description("print a user's live folder tree")
    .requiredOption('--user <user>', 'username or user id')
    .addOption(orderOption())
    .option('--db <url>', 'database URL')
    .option('--json', 'print the folders as JSON')
    .action((options: ListOptions) =>
      withStore(options, async (store) => {
        const owner = await requireUser(store, options.user)
        const folders = inOrder(await store.listLiveFolders(owner.id), options.order)
        if (options.json) print(true, folders.map(shown), () => '')
        else writeTree(folders)
      }),
    )
}

export function registerFolderCommands(program: Command): void {
  const folder = program.command('folder').description('manage folders')
  for (const register of [
    registerAdd,
    registerDelete,
    registerRename,
    registerMove,
    registerList,
    registerTree,
  ]) {
    register(folder)
  }
}
