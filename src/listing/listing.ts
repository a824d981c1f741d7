import { normaliseUuid } from '../ids.js'
import { RecencyMap } from '../recency-map.js'
import type { FolderListBody } from '../schemas/folder.js'
import { toFolderBody } from '../schemas/folder-body.js'
import {
  DEFAULT_LIMIT,
  DEFAULT_ORDER,
  MAX_LIMIT,
  type ListFoldersQueryString,
} from '../schemas/list-folders-query.js'
import type {
  FolderKey,
  FolderRow,
  ListFoldersQuery,
  ListingOrder,
  OwnerInfo,
  SessionUser,
  ServingStore,
} from '../store/store.js'
import { ChangesLinkTokens } from '../tokens/generation-tokens.js'
import {
  type CursorSealer,
  cursorBinding,
  nameDigest,
  type OpenedCursor,
  type Seek,
} from '../tokens/listing-cursor.js'
import { DeploymentSealers } from '../tokens/token-sealers.js'
import { adjacentKey } from './adjacent-key.js'
import { naturalPrefixBound } from './natural-seek.js'
import { naturalKey } from '../ordering/natural-key.js'

/**
 * The folder listing, knowing nothing of HTTP: the Store's rows become the page (its body
 * and where it sits among its neighbours, with sealed continuation tokens), or an outcome
 * that is not a page. Every outcome is a value; the route turns them into the 200 (bytes,
 * ETag, Link), 400 and 404, and keeps the finished answers under `listingKey`.
 */

/** What a listing request asks for, after validation: limit clamped, folder id lower-cased. */
export interface ListingQuery {
  /** null: the root */
  parentId: string | null
  page: number
  limit: number
  /** the continuation token as sent; null: a plain offset page */
  cursor: string | null
  /** absent: the name order */
  order?: ListingOrder
}

/**
 * Where a page sits, which is what the links to its neighbours and to the changes feed are
 * made from.
 */
export interface PageNavigation {
  parentId: string | null
  /** absent: the name order */
  order?: ListingOrder
  page: number
  limit: number
  total: number
  /**
   * Continuation tokens of the next and prev pages (null: no such page); absent on an
   * offset page without folders, whose neighbours are plain offset pages.
   */
  cursors?: { next: string | null; prev: string | null }
  /** the changes cursor of the point the page was read at (absent: none offered) */
  changes?: string
}

export interface ListingPage {
  body: FolderListBody
  navigation: PageNavigation
}

export type ListingOutcome =
  | { outcome: 'page'; page: ListingPage }
  /** the parent is not a live folder of the user's: missing, foreign or deleted alike */
  | { outcome: 'parent-not-found' }
  /** a cursor this deployment did not seal for this user and parent */
  | { outcome: 'cursor-invalid' }

const PARENT_NOT_FOUND: ListingOutcome = { outcome: 'parent-not-found' }
const CURSOR_INVALID: ListingOutcome = { outcome: 'cursor-invalid' }

/**
 * What identifies one listing answer: requests with the same key get the same answer, so a
 * finished answer may be kept under it. Correctness rests on the key, not on expiry: it
 * holds the owner's listing generation, which the database changes in the same transaction
 * as any write that a listing of that owner could show (see the generation migrations), and
 * which is read with the session on every request. A write therefore makes every answer kept
 * for that owner under an older generation unreachable at once, on every instance, whoever
 * wrote. The generation is read before the data, so an answer is never older than its key.
 */
export function listingKey(
  user: SessionUser,
  { parentId, page, limit, cursor, order }: ListingQuery,
): string {
  return `${user.id} ${user.generation} ${parentId ?? ''} ${page} ${limit} ${cursor ?? ''} ${order ?? DEFAULT_ORDER}`
}

export function listingQuery({
  folder_id,
  page,
  limit,
  cursor,
  order,
}: ListFoldersQueryString): ListingQuery {
  return {
    parentId: folder_id === undefined ? null : normaliseUuid(folder_id),
    page: page === undefined ? 1 : Number(page),
    limit: limit === undefined ? DEFAULT_LIMIT : Math.min(Number(limit), MAX_LIMIT),
    cursor: cursor ?? null,
    order: order ?? DEFAULT_ORDER,
  }
}

/** Sorts after every character: a name prefix followed by it sorts after all its extensions. */
const LAST_CHARACTER = '\u{10FFFF}'

/** A page row's key as a token holds it (the natural sort key is the name's, made again on opening). */
const keyOf = (row: FolderRow): FolderKey => ({ name: row.name, created_at: row.created_at, id: row.id })

/**
 * Deep offset pages start from a checkpoint: the key of every CHECKPOINT_EVERY-th child,
 * read in one pass of the folder's index entries per listing generation, so a page anywhere
 * in a huge folder is a seek and a skip of fewer than CHECKPOINT_EVERY rows. Without them a
 * middle page of 200,000 children stepped over 100,000 index entries (about 11 ms of the one
 * event loop every user shares); offsets below DEEP_OFFSET are cheap enough as they are.
 */
const CHECKPOINT_EVERY = 200
const DEEP_OFFSET = 2000
/** listings whose checkpoints are kept (a few KB each), least recently used out first */
const CHECKPOINT_LISTINGS = 256

export class Listings {
  /** (owner, generation, parent) -> checkpoint keys; a promise, so concurrent misses share one read */
  private readonly checkpoints = new RecencyMap<string, Promise<FolderKey[] | null>>(CHECKPOINT_LISTINGS)
  /** the rel="changes" cursors, sealed once per folder and generation */
  private readonly changesLinks = new ChangesLinkTokens()

  constructor(
    private readonly store: Pick<
      ServingStore,
      'listFolders' | 'findFolder' | 'cursorKey' | 'listingCheckpoints'
    >,
    private readonly sealers = new DeploymentSealers(store),
  ) {}

  /** Where a deep offset page starts: the checkpoint at or before it and the rows to skip. */
  private async checkpointSeek(
    user: SessionUser,
    parentId: string | null,
    order: ListingOrder,
    offset: number,
  ): Promise<NonNullable<ListFoldersQuery['seek']> | undefined> {
    const key = `${user.id} ${user.generation} ${parentId ?? ''} ${order}`
    let keys = this.checkpoints.touch(key)
    if (keys === undefined) {
      const read = this.store.listingCheckpoints({
        ownerId: user.id,
        parentId,
        every: CHECKPOINT_EVERY,
        minGeneration: user.generation,
        order,
      })
      // A failed read is not kept (unless another read of the key took its place meanwhile).
      read.catch(() => {
        if (this.checkpoints.peek(key) === read) this.checkpoints.delete(key)
      })
      this.checkpoints.set(key, read)
      keys = read
    }
    const found = await keys
    const at = Math.min(Math.floor(offset / CHECKPOINT_EVERY), found?.length ?? 0)
    const checkpoint = found?.[at - 1]
    if (checkpoint === undefined) return undefined
    return { direction: 'after', key: checkpoint, skip: offset - at * CHECKPOINT_EVERY }
  }

  /**
   * `user`'s page of the listing `query` asks for. The cursor is checked before the parent
   * (the check order of docs/api.md: 400 before 404).
   */
  async read(user: SessionUser, query: ListingQuery): Promise<ListingOutcome> {
    const { parentId, page, limit, cursor, order = DEFAULT_ORDER } = query
    const binding = cursorBinding(user.id, parentId, order)
    let seek: ListFoldersQuery['seek']
    if (cursor !== null) {
      const opened = (await this.sealers.get()).listing.open(cursor, binding)
      if (opened === null) return CURSOR_INVALID
      seek = await this.resolve(opened, order)
    } else if ((page - 1) * limit >= DEEP_OFFSET) {
      seek = await this.checkpointSeek(user, parentId, order, (page - 1) * limit)
    }
    // A replica may serve it once it has replayed the session's generation: never older.
    const result = await this.store.listFolders({
      ownerId: user.id,
      parentId,
      page,
      limit,
      seek,
      minGeneration: user.generation,
      order,
    })
    if (result === null) return PARENT_NOT_FOUND
    // Every listed folder belongs to the session's user, so one owner object serves all.
    const owner: OwnerInfo = { id: user.id, username: user.username, avatar_url: user.avatar_url }
    const body: FolderListBody = {
      folders: result.folders.map((row) => toFolderBody(row, owner)),
      total: result.total,
      page,
      limit,
    }
    const first = result.folders[0]
    const last = result.folders.at(-1)
    const sealers = await this.sealers.get()
    // The point this page was read at, as listingKey keys it: following changes from there
    // repairs whatever changed while the client was paging (docs/api.md "Changes").
    const changes = this.changesLinks.cursor(sealers.changes, user.id, parentId, user.generation)
    const navigation: PageNavigation = { parentId, order, page, limit, total: result.total, changes }
    if (first !== undefined && last !== undefined) {
      const sealer = sealers.listing
      // Which neighbours exist: offset pages know from the total; cursor pages from the
      // extra row read in their direction (the other side held the token's boundary).
      const hasNext =
        cursor === null
          ? page < Math.ceil(result.total / limit)
          : seek?.direction === 'before' || result.more === true
      const hasPrev = cursor === null || seek?.direction === 'after' ? page > 1 : result.more === true
      navigation.cursors = {
        next: hasNext ? sealer.seal('after', keyOf(last), binding) : null,
        prev: hasPrev ? sealer.seal('before', keyOf(first), binding) : null,
      }
    } else if (cursor !== null && seek !== undefined) {
      navigation.cursors = this.emptyPageCursors(sealers.listing, seek, binding)
    }
    return { outcome: 'page', page: { body, navigation } }
  }

  /**
   * The neighbours of a page reached by a token that came back empty: nothing lies beyond
   * the boundary in the token's direction, so no neighbour that way; the way back starts
   * right beside the boundary, so it reads the boundary folder too (the page before an empty
   * `next` page ends at the folder the walk last saw). Offset neighbours here would restart
   * the count under data that has changed, and list folders again.
   */
  private emptyPageCursors(
    sealer: CursorSealer,
    { direction, key }: Seek,
    binding: string,
  ): PageNavigation['cursors'] {
    const back = sealer.seal(direction === 'after' ? 'before' : 'after', adjacentKey(key, direction), binding)
    return direction === 'after' ? { next: null, prev: back } : { next: back, prev: null }
  }

  /**
   * A token holds a long boundary name only as a prefix and a digest. The folder, when it
   * still has that name (deleted or not), gives the exact key back. Renamed or gone, the
   * prefix stands in for the name, on the side that repeats folders rather than skips them:
   * only folders whose names share those first 123 bytes can be shown twice.
   */
  private async resolve(opened: OpenedCursor, order: ListingOrder): Promise<Seek> {
    const { direction, key, nameDigest: digest } = opened
    const exact = (name: string): Seek => ({
      direction,
      key: order === 'name' ? { ...key, name } : { ...key, name, naturalKey: naturalKey(name) },
    })
    if (digest === null) return exact(key.name)
    const folder = await this.store.findFolder(key.id)
    if (folder !== null && nameDigest(folder.name).equals(digest)) return exact(folder.name)
    const name = direction === 'after' ? key.name : key.name + LAST_CHARACTER
    if (order === 'name') return { direction, key: { ...key, name } }
    return { direction, key: { ...key, name, naturalKey: naturalPrefixBound(key.name, direction) } }
  }
}
