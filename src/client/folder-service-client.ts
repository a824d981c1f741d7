import type { Static } from '@sinclair/typebox'
import type { Folder as FolderSchema, FolderList as FolderListSchema } from '../schemas/folder.js'
import { asProblem, FolderServiceError } from './folder-service-error.js'
import { parseLinkHeader, type PageLinks } from './link-header.js'
import { retryAfterMs, sleep } from './retry-after.js'

/**
 * Typed client of GET /v1/folders on the platform `fetch`, for Node 20 and browsers alike
 * (nothing in this module graph imports Node built-ins or runtime packages: the schema
 * imports are types only). Pages come back with their parsed `Link` relations and ETag;
 * `walk` follows `next` exactly as the service wrote it, so whatever the link carries (a
 * continuation cursor included) reaches the service unchanged.
 */

/** A folder as the service serialises it (the server's own TypeBox schema). */
export type Folder = Static<typeof FolderSchema>
/** The body of a listing page (the server's own TypeBox schema). */
export type FolderList = Static<typeof FolderListSchema>

export const LIST_FOLDERS_PATH = '/v1/folders'
const SESSION_ID = /^[0-9A-Fa-f-]{1,64}$/
const CACHED_PAGES = 100

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
   * with the error, whose retryAfterMs says how long the service asked for.
   */
  maxRetryDelayMs?: number
  /**
   * Send If-None-Match with the ETag of the last page fetched from the same URL and reuse
   * that page on 304 (the last 100 pages are kept). Default false.
   */
  conditionalRequests?: boolean
}

export interface ListFoldersParams {
  /** parent folder; absent or null: the root */
  folderId?: string | null
  page?: number
  limit?: number
  /** a continuation token, exactly as found in a `next` or `prev` link */
  cursor?: string
}

export interface RequestOptions {
  signal?: AbortSignal
}

export interface WalkOptions extends RequestOptions {
  /** page size of the walk (the service's default when absent; at most 100) */
  limit?: number
}

export interface FolderPage {
  body: FolderList
  /** the relations of the `Link` header as absolute URLs */
  links: PageLinks
  /** the strong ETag of the body, or null when the service sent none */
  etag: string | null
  /** true when the service answered 304 and this is the page kept from before */
  notModified: boolean
  /** the URL that was requested */
  url: string
}

/** Without an explicit Retry-After: 0.5 s, 1 s, 2 s, ... */
const fallbackDelay = (attempt: number) => 500 * 2 ** attempt

export class FolderServiceClient {
  readonly #base: URL
  readonly #headers: Record<string, string>
  readonly #fetch: typeof fetch
  readonly #maxRetries: number
  readonly #maxRetryDelayMs: number
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
    this.#cache = options.conditionalRequests === true ? new Map() : null
  }

  /** The URL of one listing page. */
  listFoldersUrl(params: ListFoldersParams = {}): string {
    const url = new URL(LIST_FOLDERS_PATH.slice(1), this.#base)
    const query: [string, string | number | null | undefined][] = [
      ['folder_id', params.folderId],
      ['page', params.page],
      ['limit', params.limit],
      ['cursor', params.cursor],
    ]
    for (const [name, value] of query) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value))
    }
    return url.href
  }

  /** One page of the sub-folders of `folderId` (the root when absent). */
  listFolders(params: ListFoldersParams = {}, options: RequestOptions = {}): Promise<FolderPage> {
    return this.#get(this.listFoldersUrl(params), options.signal)
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
    return this.#get(url.href, options.signal)
  }

  /** Every page of `folderId`, following `next` from page 1 until there is none. */
  async *pages(folderId?: string | null, options: WalkOptions = {}): AsyncGenerator<FolderPage> {
    const limit = options.limit
    let page = await this.listFolders(
      { folderId: folderId ?? null, ...(limit === undefined ? {} : { limit }) },
      options,
    )
    yield page
    while (page.links.next !== undefined) {
      page = await this.follow(page.links.next, options)
      yield page
    }
  }

  /** Every sub-folder of `folderId`, in the listing order: `for await (const f of client.walk(id))`. */
  async *walk(folderId?: string | null, options: WalkOptions = {}): AsyncGenerator<Folder> {
    for await (const page of this.pages(folderId, options)) yield* page.body.folders
  }

  async #get(url: string, signal: AbortSignal | undefined): Promise<FolderPage> {
    const cached = this.#cache?.get(url)
    const headers = cached?.etag == null ? this.#headers : { ...this.#headers, 'if-none-match': cached.etag }
    for (let attempt = 0; ; attempt++) {
      const response = await this.#send(url, headers, signal)
      if (response.status === 304 && cached !== undefined) {
        this.#remember(url, cached)
        return { ...cached, notModified: true }
      }
      if (response.status === 200) return this.#remember(url, await readPage(response, url))
      const error = await readError(response, url)
      const retryable = response.status === 429 || response.status === 503
      const delay = error.retryAfterMs ?? fallbackDelay(attempt)
      if (!retryable || attempt >= this.#maxRetries || delay > this.#maxRetryDelayMs) throw error
      await sleep(delay, signal)
    }
  }

  async #send(url: string, headers: Record<string, string>, signal: AbortSignal | undefined) {
    try {
      // Cookies are sent by the browser for the page's own origin; the Cookie header (Node) is ours.
      return await this.#fetch(url, { headers, signal: signal ?? null, credentials: 'same-origin' })
    } catch (cause) {
      if (signal?.aborted) throw signal.reason
      throw new FolderServiceError({
        status: 0,
        code: 'NETWORK_ERROR',
        detail: cause instanceof Error ? cause.message : String(cause),
        requestId: null,
        url,
        cause,
      })
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

async function readPage(response: Response, url: string): Promise<FolderPage> {
  let body: unknown
  try {
    body = await response.json()
  } catch (cause) {
    throw badResponse(response, url, 'the listing is not JSON', cause)
  }
  if (typeof body !== 'object' || body === null || !Array.isArray((body as FolderList).folders)) {
    throw badResponse(response, url, 'the answer has no folders array')
  }
  return {
    body: body as FolderList,
    links: parseLinkHeader(response.headers.get('link'), response.url || url),
    etag: response.headers.get('etag'),
    notModified: false,
    url,
  }
}

async function readError(response: Response, url: string): Promise<FolderServiceError> {
  let body: unknown = null
  try {
    body = await response.json()
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
