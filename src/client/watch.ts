import type {
  ChangesParams,
  Folder,
  FolderChange,
  FolderChanges,
  FolderPage,
  ListingOrder,
  RequestOptions,
  WalkOptions,
} from './folder-service-client.js'
import { FolderServiceError, nonsenseAnswer } from './folder-service-error.js'
import { folderComparator } from './listing-order.js'

/**
 * `client.watch()`: a folder's listing kept current by the change feed, as the replay
 * guarantee of docs/api.md ("Changes") describes it: list every page, then apply every
 * changes answer from the first page's cursor on; whenever an answer says has_more: false,
 * the replayed set is exactly the listing.
 */

/**
 * What `watch` yields. `folders` is always the whole current listing of the folder (every
 * page), sorted as the listing, exactly as GET /v1/folders returns it at the moment the
 * batch was read; it is a new array each time.
 * - `snapshot`: the folder was listed (at the start, and again after a 410 CURSOR_EXPIRED):
 *   replace whatever was shown.
 * - `changes`: the entries of one or more changes answers, in commit order, up to one that
 *   reached the present (has_more: false); never empty. A folder may appear more than once
 *   when the entries span answers (its last entry is its state).
 */
export type WatchBatch =
  { kind: 'snapshot'; folders: Folder[] } | { kind: 'changes'; changes: FolderChange[]; folders: Folder[] }

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
export class FolderReplica {
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

const isExpired = (error: unknown) => error instanceof FolderServiceError && error.code === 'CURSOR_EXPIRED'

export async function* watchFolder(
  source: WatchSource,
  folderId: string | null,
  options: WatchOptions,
): AsyncGenerator<WatchBatch> {
  const wait = options.wait ?? 30
  // wait 0 would make the loop below ask again at once, forever, while nothing changes.
  if (!Number.isInteger(wait) || wait < 1 || wait > 60) throw new RangeError('wait must be 1 to 60 seconds')
  const request = options.signal === undefined ? {} : { signal: options.signal }
  const changesLimit = options.changesLimit === undefined ? {} : { limit: options.changesLimit }
  /** 410s in a row right after a listing: a second one means the service cannot resume us. */
  let expiredAfterListing = 0
  for (;;) {
    const replica = new FolderReplica(folderComparator(options.order))
    let cursor: string | null = null
    const pageOptions = {
      ...request,
      ...(options.limit === undefined ? {} : { limit: options.limit }),
      ...(options.order === undefined ? {} : { order: options.order }),
    }
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
    try {
      // The pages were read one after another: catch up to the present before the first batch.
      cursor = (await drain(0)).cursor
      expiredAfterListing = 0
      yield { kind: 'snapshot', folders: replica.sorted() }
      for (;;) {
        const batch = await drain(wait)
        cursor = batch.cursor
        if (batch.changes.length > 0)
          yield { kind: 'changes', changes: batch.changes, folders: replica.sorted() }
      }
    } catch (error) {
      if (!isExpired(error) || ++expiredAfterListing > 1) throw error
      // The changes after the cursor are no longer kept: list again.
    }

    /** Reads and applies answers from `cursor` until one reaches the present. */
    async function drain(firstWait: number): Promise<{ changes: FolderChange[]; cursor: string }> {
      const changes: FolderChange[] = []
      let from = cursor ?? ''
      let body = await source.changes({ folderId, cursor: from, wait: firstWait, ...changesLimit }, request)
      for (;;) {
        replica.apply(body.changes)
        changes.push(...body.changes)
        if (!body.has_more) return { changes, cursor: body.cursor }
        if (body.cursor === from) {
          throw nonsenseAnswer(
            'a changes answer with has_more: true returned the cursor it was asked for',
            '',
          )
        }
        from = body.cursor
        body = await source.changes({ folderId, cursor: from, ...changesLimit }, request)
      }
    }
  }
}
