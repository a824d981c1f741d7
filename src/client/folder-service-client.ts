import type { Static } from '@sinclair/typebox'
import type { FolderChanges as FolderChangesSchema } from '../schemas/changes.js'
import type { Folder as FolderSchema, FolderList as FolderListSchema } from '../schemas/folder.js'
import type { FolderTreeBody as TreeBody } from '../schemas/tree.js'
import type { ListingOrder } from '../ordering/listing-orders.js'
import { FOLDER_CHANGES_PATH, FOLDER_TREE_PATH, LIST_FOLDERS_PATH } from '../api/paths.js'
import { readBoundedText } from './bounded-body.js'
import { asProblem, FolderServiceError, nonsenseAnswer } from './folder-service-error.js'
import { parseLinkHeader, type PageLinks } from './link-header.js'
import { MAX_TIMER_MS, retryAfterMs, sleep } from './retry-after.js'
import { followTree, type TreeBatch, type TreeOptions } from './tree.js'
import { watchFolder, type WatchBatch, type WatchOptions } from './watch.js'

/**
 * Typed client of GET /v1/folders and GET /v1/folders/changes on the platform `fetch`, for
 * Node 20 and browsers alike (nothing in this module graph imports Node built-ins or runtime
 * packages: the schema imports are types only). Pages come back with their parsed `Link`
 * relations and ETag; `walk` follows `next` exactly as the service wrote it, so whatever the
 * link carries (a continuation cursor included) reaches the service unchanged.
 *
 * Every request is bounded: in time (`timeoutMs`), in body size (`maxResponseBytes`), and a
 * walk never follows a `next` link twice.
 */

/** A folder as the service serialises it (the server's own TypeBox schema). */
export type Folder = Static<typeof FolderSchema>
/** The body of a listing page (the server's own TypeBox schema). */
export type FolderList = Static<typeof FolderListSchema>
/** The body of a changes answer (the server's own TypeBox schema). */
export type FolderChanges = Static<typeof FolderChangesSchema>
/** One entry of a changes answer: `upsert`, `remove` or `owner`. */
export type FolderChange = FolderChanges['changes'][number]
/** The body of a tree answer (the server's own TypeBox schema). */
export type FolderTreeBody = TreeBody
/** One entry of a tree answer: `upsert` (with `previous_folder_id` after a move), `remove` (with its subtree) or `owner`. */
export type TreeEntry = TreeBody['changes'][number]

export { FOLDER_CHANGES_PATH, FOLDER_TREE_PATH, LIST_FOLDERS_PATH }
const SESSION_ID = /^[0-9A-Fa-f-]{1,64}$/
const CACHED_PAGES = 100
/** The service's bound on `wait` (seconds). */
export const MAX_WAIT_SECONDS = 60

export interface FolderServiceClientOptions {
  /** where the service is, e.g. `http://127.0.0.1:3000` (a path prefix is kept) */
  baseUrl: string | URL
  /**
   * Sent as the `session_id` cookie. Leave it out in a browser: there the page's own cookie
   * goes with every same-origin request, and scripts may not set a Cookie header.
   */
  sessionId?: string
  /** defaults to the global fetch */
  fetch?: typeof fetch
  /** retries of a 429 or 503 answer, each after its Retry-After; default 2 */
  maxRetries?: number
  /**
   * The longest Retry-After worth waiting for (ms, default 30 000); a longer one fails at once
   * with the error, whose retryAfterMs says how long the service asked for. A retry never
   * comes sooner than the service asked, however long that is.
   */
  maxRetryDelayMs?: number
  /**
   * Send If-None-Match with the ETag of the last page fetched from the same URL and reuse
   * that page on 304 (the last 100 pages are kept). Default false.
   */
  conditionalRequests?: boolean
  /**
   * How long one request may take, answer and body (ms, default 30 000; `Infinity`: no
   * limit). A changes request with `wait` gets the wait on top. Past it: error TIMEOUT.
   */
  timeoutMs?: number
  /**
   * The largest answer body read (bytes, default 8 MiB: a full page of changes is well
   * below 4 MiB). A larger one is BAD_RESPONSE, and no more of it is read.
   */
  maxResponseBytes?: number
}

export interface ListFoldersParams {
  /** parent folder; absent or null: the root */
  folderId?: string | null
  page?: number
  limit?: number
  /** a continuation token, exactly as found in a `next` or `prev` link */
  cursor?: string
  /** absent: `name` (code point order); `name_natural`: a file manager's order */
  order?: ListingOrder
}

export type { ListingOrder }

export interface ChangesParams {
  /** the folder whose direct sub-folders are followed; absent or null: the root */
  folderId?: string | null
  /** from a changes answer or a page's `changesCursor`; absent: start now (no changes, a fresh cursor) */
  cursor?: string
  /** most entries in one answer (the service's default 100 when absent; at most 1000) */
  limit?: number
  /** seconds (0 to 60) the service may hold the answer while nothing follows the cursor */
  wait?: number
}

export interface TreeParams {
  /** the folder whose subtree is followed; absent or null: the user's whole tree */
  root?: string | null
  /** from a tree answer; absent: start a new download */
  cursor?: string
  /** most entries in one answer (the service's default 100 when absent; at most 1000) */
  limit?: number
  /** seconds (0 to 60) the service may hold the answer while nothing is pending */
  wait?: number
}

export interface RequestOptions {
  signal?: AbortSignal
}

export interface WalkOptions extends RequestOptions {
  /** page size of the walk (the service's default when absent; at most 100) */
  limit?: number
  /** the order of the walk (absent: the service's default, `name`) */
  order?: ListingOrder
}

export interface FolderPage {
  body: FolderList
  /** the relations of the `Link` header as absolute URLs */
  links: PageLinks
  /**
   * The cursor of the page's `rel="changes"` link: `changes()` from it gives what changed in
   * the folder since this page was read. Null when the service sent no such link.
   */
  changesCursor: string | null
  /** the strong ETag of the body, or null when the service sent none */
  etag: string | null
  /** true when the service answered 304 and this is the page kept from before */
  notModified: boolean
  /** the URL that was requested */
  url: string
}

/** Without an explicit Retry-After: 0.5 s, 1 s, 2 s, ... */
const fallbackDelay = (attempt: number) => 500 * 2 ** attempt

/** An answer whose body was read within the bounds (null body: a 304). */
interface Answer {
  response: Response
  text: string | null
}

export class FolderServiceClient {
  readonly #base: URL
  readonly #headers: Record<string, string>
  readonly #fetch: typeof fetch
  readonly #maxRetries: number
  readonly #maxRetryDelayMs: number
  readonly #timeoutMs: number
  readonly #maxResponseBytes: number
  readonly #cache: Map<string, FolderPage> | null

  constructor(options: FolderServiceClientOptions) {
    const base = new URL(options.baseUrl)
    if (!base.pathname.endsWith('/')) base.pathname += '/'
    this.#base = base
    this.#headers = { accept: 'application/json, application/problem+json' }
    if (options.sessionId !== undefined) {
      // Checked here so that a value can never smuggle another cookie or header in.
      if (!SESSION_ID.test(options.sessionId)) throw new TypeError('sessionId must be a UUID')
      this.#headers.cookie = `session_id=${options.sessionId}`
    }
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
    this.#maxRetries = options.maxRetries ?? 2
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000
    this.#timeoutMs = positive('timeoutMs', options.timeoutMs ?? 30_000)
    this.#maxResponseBytes = positive('maxResponseBytes', options.maxResponseBytes ?? 8 * 1024 * 1024)
    this.#cache = options.conditionalRequests === true ? new Map() : null
  }

  /** The URL of one listing page. */
  listFoldersUrl(params: ListFoldersParams = {}): string {
    return this.#url(LIST_FOLDERS_PATH, [
      ['folder_id', params.folderId],
      ['page', params.page],
      ['limit', params.limit],
      ['cursor', params.cursor],
      ['order', params.order],
    ])
  }

  /** The URL of one changes request. */
  changesUrl(params: ChangesParams = {}): string {
    return this.#url(FOLDER_CHANGES_PATH, [
      ['folder_id', params.folderId],
      ['cursor', params.cursor],
      ['limit', params.limit],
      ['wait', params.wait],
    ])
  }

  /** The URL of one tree request. */
  treeUrl(params: TreeParams = {}): string {
    return this.#url(FOLDER_TREE_PATH, [
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
    const url = new URL(href, this.#base)
    if (url.origin !== this.#base.origin) {
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
    const answer = await this.#request(url, this.#headers, signal, this.#timeoutMs + (wait ?? 0) * 1000)
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

  #url(path: string, query: [string, string | number | null | undefined][]): string {
    const url = new URL(path.slice(1), this.#base)
    for (const [name, value] of query) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value))
    }
    return url.href
  }

  async #getPage(url: string, signal: AbortSignal | undefined): Promise<FolderPage> {
    const cached = this.#cache?.get(url)
    const headers = cached?.etag == null ? this.#headers : { ...this.#headers, 'if-none-match': cached.etag }
    const answer = await this.#request(url, headers, signal, this.#timeoutMs)
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

  /** One GET, retried on 429/503 after their Retry-After; any other problem is thrown typed. */
  async #request(
    url: string,
    headers: Record<string, string>,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      const answer = await this.#exchange(url, headers, signal, timeoutMs)
      const status = answer.response.status
      if (status === 200 || (status === 304 && headers['if-none-match'] !== undefined)) return answer
      const error = readError(answer, url)
      const retryable = status === 429 || status === 503
      const delay = error.retryAfterMs ?? fallbackDelay(attempt)
      if (!retryable || attempt >= this.#maxRetries || delay > this.#maxRetryDelayMs) throw error
      await sleep(delay, signal)
    }
  }

  /** One request and its body, within timeoutMs and maxResponseBytes. */
  async #exchange(
    url: string,
    headers: Record<string, string>,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<Answer> {
    // One controller for the caller's abort and the time limit (AbortSignal.any is too new
    // for some browsers still in use).
    const controller = new AbortController()
    const onAbort = () => controller.abort(signal?.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    if (signal?.aborted) onAbort()
    const timer =
      timeoutMs === Infinity
        ? undefined
        : setTimeout(() => controller.abort(new Error('timeout')), Math.min(timeoutMs, MAX_TIMER_MS))
    const fail = (cause: unknown): FolderServiceError | Error => {
      if (signal?.aborted) return signal.reason as Error
      const timedOut = controller.signal.aborted
      return new FolderServiceError({
        status: 0,
        code: timedOut ? 'TIMEOUT' : 'NETWORK_ERROR',
        detail: timedOut
          ? `no complete answer within ${timeoutMs} ms`
          : cause instanceof Error
            ? cause.message
            : String(cause),
        requestId: null,
        url,
        cause,
      })
    }
    try {
      let response: Response
      try {
        // Cookies are sent by the browser for the page's own origin; the Cookie header (Node) is ours.
        response = await this.#fetch(url, { headers, signal: controller.signal, credentials: 'same-origin' })
      } catch (cause) {
        throw fail(cause)
      }
      if (response.status === 304) {
        await response.body?.cancel().catch(() => undefined)
        return { response, text: null }
      }
      let text: string | null
      try {
        text = await readBoundedText(response, this.#maxResponseBytes)
      } catch (cause) {
        throw fail(cause)
      }
      if (text === null) {
        throw badResponse(
          response,
          url,
          `the answer is larger than ${this.#maxResponseBytes} bytes (maxResponseBytes)`,
        )
      }
      return { response, text }
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
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

function positive(name: string, value: number): number {
  if (!(value > 0)) throw new RangeError(`${name} must be a positive number`)
  return value
}

function changesCursorOf(links: PageLinks): string | null {
  return links.changes === undefined ? null : new URL(links.changes).searchParams.get('cursor')
}

function parseJson(answer: Answer, url: string, what: string): unknown {
  try {
    return JSON.parse(answer.text ?? '') as unknown
  } catch (cause) {
    throw badResponse(answer.response, url, `${what} is not JSON`, cause)
  }
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

function readError({ response, text }: Answer, url: string): FolderServiceError {
  let body: unknown = null
  try {
    body = JSON.parse(text ?? '')
  } catch {
    // not JSON: reported as BAD_RESPONSE below
  }
  const problem = asProblem(body)
  if (problem === null) return badResponse(response, url, `HTTP ${response.status} without problem details`)
  return new FolderServiceError({
    status: response.status,
    code: problem.code,
    detail: problem.detail,
    requestId: problem.request_id ?? response.headers.get('x-request-id'),
    url,
    retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
  })
}

function badResponse(response: Response, url: string, detail: string, cause?: unknown): FolderServiceError {
  return new FolderServiceError({
    status: response.status,
    code: 'BAD_RESPONSE',
    detail,
    requestId: response.headers.get('x-request-id'),
    url,
    cause,
  })
}
