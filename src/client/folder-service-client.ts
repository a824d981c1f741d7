import { FOLDER_CHANGES_PATH, FOLDER_TREE_PATH, LIST_FOLDERS_PATH } from '../api/paths.js'
import { nonsenseAnswer } from './folder-service-error.js'
import { parseLinkHeader, type PageLinks } from './link-header.js'
import { badResponse, parseJson, Transport, type Answer, type TransportOptions } from './transport.js'
import { followTree, type TreeBatch, type TreeOptions } from './follow-tree.js'
import type {
  ChangesParams,
  Folder,
  FolderChanges,
  FolderList,
  FolderPage,
  FolderTreeBody,
  ListFoldersParams,
  RequestOptions,
  TreeParams,
  WalkOptions,
} from './types.js'
import { watchFolder, type WatchBatch, type WatchOptions } from './watch.js'

/**
 * Typed client of GET /v1/folders, GET /v1/folders/changes and GET /v1/folders/tree, for
 * Node 20 and browsers alike: the API (pages, walks, the feeds and what follows them) on
 * the transport of transport.ts. Pages come back with their parsed `Link` relations and
 * ETag; `walk` follows `next` exactly as the service wrote it, so whatever the link carries
 * (a continuation cursor included) reaches the service unchanged.
 *
 * Every request is bounded: in time (`timeoutMs`), in body size (`maxResponseBytes`), and a
 * walk never follows a `next` link twice.
 */

const CACHED_PAGES = 100

export interface FolderServiceClientOptions extends TransportOptions {
  /**
   * Send If-None-Match with the ETag of the last page fetched from the same URL and reuse
   * that page on 304 (the last 100 pages are kept). Default false.
   */
  conditionalRequests?: boolean
}

export class FolderServiceClient {
  readonly #transport: Transport
  readonly #cache: Map<string, FolderPage> | null

  constructor(options: FolderServiceClientOptions) {
    this.#transport = new Transport(options)
    this.#cache = options.conditionalRequests === true ? new Map() : null
  }

  /** The URL of one listing page. */
  listFoldersUrl(params: ListFoldersParams = {}): string {
    return this.#transport.url(LIST_FOLDERS_PATH, [
      ['folder_id', params.folderId],
      ['page', params.page],
      ['limit', params.limit],
      ['cursor', params.cursor],
      ['order', params.order],
    ])
  }

  /** The URL of one changes request. */
  changesUrl(params: ChangesParams = {}): string {
    return this.#transport.url(FOLDER_CHANGES_PATH, [
      ['folder_id', params.folderId],
      ['cursor', params.cursor],
      ['limit', params.limit],
      ['wait', params.wait],
    ])
  }

  /** The URL of one tree request. */
  treeUrl(params: TreeParams = {}): string {
    return this.#transport.url(FOLDER_TREE_PATH, [
      ['root', params.root],
      ['cursor', params.cursor],
      ['limit', params.limit],
      ['wait', params.wait],
    ])
  }

  /** One page of the sub-folders of `folderId` (the root when absent). */
  listFolders(params: ListFoldersParams = {}, options: RequestOptions = {}): Promise<FolderPage> {
    return this.#getPage(this.listFoldersUrl(params), options.signal)
  }

  /**
   * The page a link of an earlier page points to (e.g. `page.links.next`), requested exactly
   * as written. Only links to the service's own origin are followed: the session cookie
   * must never go anywhere else.
   */
  follow(href: string, options: RequestOptions = {}): Promise<FolderPage> {
    const url = new URL(href, this.#transport.base)
    if (url.origin !== this.#transport.base.origin) {
      return Promise.reject(new TypeError(`refusing to follow a link to another origin: ${url.origin}`))
    }
    return this.#getPage(url.href, options.signal)
  }

  /**
   * Every page of `folderId`, following `next` from page 1 until there is none. A `next`
   * link already followed in this walk ends it with BAD_RESPONSE: following it again would
   * repeat pages forever.
   */
  async *pages(folderId?: string | null, options: WalkOptions = {}): AsyncGenerator<FolderPage> {
    const { limit, order } = options
    let page = await this.listFolders(
      {
        folderId: folderId ?? null,
        ...(limit === undefined ? {} : { limit }),
        ...(order === undefined ? {} : { order }),
      },
      options,
    )
    const followed = new Set([page.url])
    yield page
    while (page.links.next !== undefined) {
      const next = page.links.next
      if (followed.has(next)) {
        throw nonsenseAnswer(`the next link of this page was followed before in this walk: ${next}`, page.url)
      }
      followed.add(next)
      page = await this.follow(next, options)
      yield page
    }
  }

  /** Every sub-folder of `folderId`, in the listing order: `for await (const f of client.walk(id))`. */
  async *walk(folderId?: string | null, options: WalkOptions = {}): AsyncGenerator<Folder> {
    for await (const page of this.pages(folderId, options)) yield* page.body.folders
  }

  /**
   * What changed among the direct sub-folders of `folderId` after `cursor` (GET
   * /v1/folders/changes), as the typed body `{ changes, cursor, has_more }`. A cursor
   * whose changes are no longer kept is the FolderServiceError with code `CURSOR_EXPIRED`
   * (410): list the folder again and follow its page's `changesCursor`. With `wait`, the
   * request's time limit is `timeoutMs` plus the wait.
   */
  changes(params: ChangesParams = {}, options: RequestOptions = {}): Promise<FolderChanges> {
    return this.#feedAnswer<FolderChanges>(this.changesUrl(params), params.wait, options.signal)
  }

  /**
   * One answer of the tree feed (GET /v1/folders/tree): `{ changes, cursor, has_more }`,
   * typed as TreeEntry. Without `cursor` it starts a new download. A cursor whose changes
   * are no longer kept is CURSOR_EXPIRED (410): start a new download. With `wait`, the
   * request's time limit is `timeoutMs` plus the wait.
   */
  treeChanges(params: TreeParams = {}, options: RequestOptions = {}): Promise<FolderTreeBody> {
    return this.#feedAnswer<FolderTreeBody>(this.treeUrl(params), params.wait, options.signal)
  }

  /**
   * Keeps a folder's listing current: lists every page, then follows the changes (long-poll,
   * `wait` seconds per request) from the first page's `changesCursor`, which repairs what
   * changed while paging. Yields batches (see WatchBatch): first a `snapshot`, then one
   * `changes` batch each time the followed changes reach the present (a long backlog comes
   * in parts, `atPresent: false`). On 410 CURSOR_EXPIRED it lists again (after a growing
   * pause when 410s repeat) and yields a new `snapshot`. It ends when the consumer
   * stops iterating (`break`) or `options.signal` aborts (then with the signal's reason);
   * any other error ends it with that error, after the usual retries of a 429 or 503.
   *
   *   for await (const batch of client.watch(folderId, { signal })) render(batch.folders)
   */
  watch(folderId: string | null, options: WatchOptions = {}): AsyncGenerator<WatchBatch> {
    return watchFolder(this, folderId, options)
  }

  /**
   * Keeps a user's folder tree (or the subtree below `root`) current: downloads it, then
   * follows it on the same cursor (long-poll, `wait` seconds per request), and yields a
   * TreeBatch, with the tree kept by id and by parent, for each part of the download and
   * each time changes arrive. On 410 CURSOR_EXPIRED it downloads again (after a growing
   * pause when 410s repeat). It ends when the consumer stops iterating or `options.signal`
   * aborts; any other error ends it with that error, after the usual retries.
   *
   *   for await (const { tree, atPresent } of client.tree({ root })) if (atPresent) render(tree)
   */
  tree(options: TreeOptions = {}): AsyncGenerator<TreeBatch> {
    return followTree(this, options)
  }

  /** One answer of a feed: a JSON object with the `changes` array, `cursor` and `has_more` of both feeds. */
  async #feedAnswer<Body>(
    url: string,
    wait: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Body> {
    const answer = await this.#transport.get(url, { signal, heldMs: (wait ?? 0) * 1000 })
    const body = parseJson(answer, url, 'the changes answer')
    const changes = body as { changes?: unknown; cursor?: unknown; has_more?: unknown } | null
    if (
      !Array.isArray(changes?.changes) ||
      typeof changes.cursor !== 'string' ||
      typeof changes.has_more !== 'boolean'
    ) {
      throw badResponse(answer.response, url, 'the answer is not a changes body')
    }
    return body as Body
  }

  async #getPage(url: string, signal: AbortSignal | undefined): Promise<FolderPage> {
    const cached = this.#cache?.get(url)
    const answer = await this.#transport.get(url, { signal, etag: cached?.etag })
    if (answer.text === null && cached !== undefined) {
      // The body is the one kept; a Link header on the 304 is newer than the kept one (its
      // changes cursor is the present's).
      const link = answer.response.headers.get('link')
      const links = link === null ? cached.links : parseLinkHeader(link, answer.response.url || url)
      this.#remember(url, { ...cached, links, changesCursor: changesCursorOf(links) })
      return { ...cached, links, changesCursor: changesCursorOf(links), notModified: true }
    }
    return this.#remember(url, readPage(answer, url))
  }

  #remember(url: string, page: FolderPage): FolderPage {
    if (this.#cache === null || page.etag === null) return page
    // A Map keeps insertion order: deleting first makes this the most recent entry.
    this.#cache.delete(url)
    this.#cache.set(url, page)
    if (this.#cache.size > CACHED_PAGES) this.#cache.delete(this.#cache.keys().next().value ?? '')
    return page
  }
}

function changesCursorOf(links: PageLinks): string | null {
  return links.changes === undefined ? null : new URL(links.changes).searchParams.get('cursor')
}

function readPage(answer: Answer, url: string): FolderPage {
  const body = parseJson(answer, url, 'the listing')
  if (typeof body !== 'object' || body === null || !Array.isArray((body as FolderList).folders)) {
    throw badResponse(answer.response, url, 'the answer has no folders array')
  }
  const { response } = answer
  const links = parseLinkHeader(response.headers.get('link'), response.url || url)
  return {
    body: body as FolderList,
    links,
    changesCursor: changesCursorOf(links),
    etag: response.headers.get('etag'),
    notModified: false,
    url,
  }
}
