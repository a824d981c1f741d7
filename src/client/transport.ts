import { readBoundedText } from './bounded-body.js'
import { asProblem, FolderServiceError } from './folder-service-error.js'
import { MAX_TIMER_MS, retryAfterMs, sleep } from './retry-after.js'

/**
 * The client's HTTP: one GET on the platform `fetch` (no Node built-ins, so browsers run it
 * too), bounded in time (`timeoutMs`) and body size (`maxResponseBytes`), retried on 429
 * and 503 after their Retry-After, with every other failure a typed FolderServiceError.
 * What the answers mean is the API's (folder-service-client.ts).
 */

export interface TransportOptions {
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

/** An answer whose body was read within the bounds (null body: a 304). */
export interface Answer {
  response: Response
  text: string | null
}

export interface GetOptions {
  signal?: AbortSignal | undefined
  /** sent as If-None-Match; only then is a 304 an answer rather than an error */
  etag?: string | null | undefined
  /** added to `timeoutMs`: how long the service may hold a long-poll (ms) */
  heldMs?: number | undefined
}

type Query = [string, string | number | null | undefined][]

const SESSION_ID = /^[0-9A-Fa-f-]{1,64}$/

/** Without an explicit Retry-After: 0.5 s, 1 s, 2 s, ... */
const fallbackDelay = (attempt: number) => 500 * 2 ** attempt

export class Transport {
  /** the service's base URL, ending in `/` */
  readonly base: URL
  readonly #headers: Record<string, string>
  readonly #fetch: typeof fetch
  readonly #maxRetries: number
  readonly #maxRetryDelayMs: number
  readonly #timeoutMs: number
  readonly #maxResponseBytes: number

  constructor(options: TransportOptions) {
    const base = new URL(options.baseUrl)
    if (!base.pathname.endsWith('/')) base.pathname += '/'
    this.base = base
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
  }

  /** The absolute URL of an API path (e.g. `/v1/folders`) below the base, with the query's present values. */
  url(path: string, query: Query): string {
    const url = new URL(path.slice(1), this.base)
    for (const [name, value] of query) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value))
    }
    return url.href
  }

  /** One GET, retried on 429/503 after their Retry-After; any other problem is thrown typed. */
  async get(url: string, { signal, etag, heldMs = 0 }: GetOptions = {}): Promise<Answer> {
    const headers = etag == null ? this.#headers : { ...this.#headers, 'if-none-match': etag }
    const timeoutMs = this.#timeoutMs + heldMs
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
}

function positive(name: string, value: number): number {
  if (!(value > 0)) throw new RangeError(`${name} must be a positive number`)
  return value
}

/** The answer's body as JSON; anything else is BAD_RESPONSE, naming `what` was expected. */
export function parseJson(answer: Answer, url: string, what: string): unknown {
  try {
    return JSON.parse(answer.text ?? '') as unknown
  } catch (cause) {
    throw badResponse(answer.response, url, `${what} is not JSON`, cause)
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

/** An answer the client cannot use: BAD_RESPONSE with the answer's status and request id. */
export function badResponse(
  response: Response,
  url: string,
  detail: string,
  cause?: unknown,
): FolderServiceError {
  return new FolderServiceError({
    status: response.status,
    code: 'BAD_RESPONSE',
    detail,
    requestId: response.headers.get('x-request-id'),
    url,
    cause,
  })
}
