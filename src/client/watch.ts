import type {
  ChangesParams,
  Folder,
  FolderChange,
  FolderChanges,
  FolderPage,
  ListingOrder,
  RequestOptions,
  WalkOptions,
} from './types.js'
import type { Backoff } from './feed-pacing.js'
import { nonsenseAnswer } from './folder-service-error.js'
import { followFeed, followerWait, restartOnExpiry } from './follow-feed.js'
import { folderComparator } from './listing-order.js'

/**
 * `client.watch()`: a folder's listing kept current by the change feed, as the replay
 * guarantee of docs/api.md ("Changes") describes it: list every page, then apply every
 * changes answer from the first page's cursor on; whenever an answer says has_more: false,
 * the replayed set is exactly the listing.
 */

/**
 * What `watch` yields. `folders` is always the whole folder as replayed so far (every
 * page), sorted as the listing; it is a new array each time. When `atPresent` is true it is
 * exactly what GET /v1/folders returns at the moment the batch was read; false means a
 * backlog is being handed over in parts (at most about 10,000 entries each) and more
 * follows at once.
 * - `snapshot`: the folder was listed (at the start, and again after a 410 CURSOR_EXPIRED):
 *   replace whatever was shown.
 * - `changes`: the entries of one or more changes answers, in commit order, up to one that
 *   reached the present (has_more: false) or up to the bound of one part. Empty only when it
 *   just says that a backlog handed over in parts reached the present. A folder may appear
 *   more than once when the entries span answers (its last entry is its state).
 */
export type WatchBatch =
  | { kind: 'snapshot'; folders: Folder[]; atPresent: boolean }
  | { kind: 'changes'; changes: FolderChange[]; folders: Folder[]; atPresent: boolean }

export interface WatchOptions extends RequestOptions {
  /** page size of the listing (the service's default when absent) */
  limit?: number
  /** the order of the listing and of every batch's `folders` (absent: `name`) */
  order?: ListingOrder
  /** most entries per changes answer (the service's default when absent) */
  changesLimit?: number
  /** seconds each changes request may be held while nothing changes: 1 to 60, default 30 */
  wait?: number
}

/** What watch needs of the client. */
export interface WatchSource {
  pages(folderId: string | null, options: WalkOptions): AsyncGenerator<FolderPage>
  changes(params: ChangesParams, options: RequestOptions): Promise<FolderChanges>
}

/** The folders of the listing by id, changed as the feed says (docs/api.md "Changes"). */
class FolderReplica {
  readonly #folders = new Map<string, Folder>()

  constructor(private readonly compare = folderComparator()) {}

  add(folders: readonly Folder[]): void {
    for (const folder of folders) this.#folders.set(folder.id, folder)
  }

  apply(changes: readonly FolderChange[]): void {
    for (const change of changes) {
      if (change.type === 'upsert') this.#folders.set(change.folder.id, change.folder)
      else if (change.type === 'remove') this.#folders.delete(change.id)
      else for (const [id, folder] of this.#folders) this.#folders.set(id, { ...folder, owner: change.owner })
    }
  }

  sorted(): Folder[] {
    return [...this.#folders.values()].sort(this.compare)
  }
}

export async function* watchFolder(
  source: WatchSource,
  folderId: string | null,
  options: WatchOptions,
): AsyncGenerator<WatchBatch> {
  const wait = followerWait(options.wait)
  const request = options.signal === undefined ? {} : { signal: options.signal }
  const changesLimit = options.changesLimit === undefined ? {} : { limit: options.changesLimit }
  const pageOptions = {
    ...request,
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    ...(options.order === undefined ? {} : { order: options.order }),
  }

  /** One listing and the follow of its changes, until a 410 ends it. */
  async function* listAndFollow(backoff: Backoff): AsyncGenerator<WatchBatch> {
    const replica = new FolderReplica(folderComparator(options.order))
    let cursor: string | null = null
    for await (const page of source.pages(folderId, pageOptions)) {
      if (cursor === null) {
        if (page.changesCursor === null) {
          throw nonsenseAnswer(
            'the listing has no rel="changes" link: this service has no change feed',
            page.url,
          )
        }
        cursor = page.changesCursor
      }
      replica.add(page.body.folders)
    }
    if (cursor === null) throw new TypeError('the walk yielded no page') // pages() always yields one
    const ask = (from: string | null, wait: number) =>
      source.changes({ folderId, cursor: from ?? '', wait, ...changesLimit }, request)
    // The pages were read one after another: the first batch (wait 0) catches up to the
    // present, and only then is the snapshot shown.
    let listed = true
    for await (const batch of followFeed(ask, cursor, { wait, firstWait: 0, backoff, ...request })) {
      replica.apply(batch.changes)
      const folders = replica.sorted()
      if (listed) yield { kind: 'snapshot', folders, atPresent: batch.atPresent }
      else yield { kind: 'changes', changes: batch.changes, folders, atPresent: batch.atPresent }
      listed = false
    }
  }

  yield* restartOnExpiry(listAndFollow, options.signal)
}
