import http from 'node:http'
import { randomUUID } from 'node:crypto'

/**
 * A closed-loop HTTP load for the fault suites: `connections` workers, each sending its next
 * request as soon as the previous one ended, on keep-alive connections. Every request is
 * recorded with when it was handed to the OS, how it ended, and the request id it carried
 * (X-Request-Id, so the service's log can tell which requests it received).
 */

export interface Outcome {
  worker: number
  requestId: string
  path: string
  /** when the request was created */
  startedAt: number
  /** when the whole request had been written to the socket ('finish'); undefined if never */
  sentAt: number | undefined
  endedAt: number
  status: number | undefined
  headers: http.IncomingHttpHeaders
  body: string
  /** the socket error (ECONNREFUSED, ECONNRESET...) or 'timeout' */
  error: string | undefined
  /** the request went out on a connection that had served requests before */
  reusedSocket: boolean
}

export interface LoadOptions {
  base: string
  connections: number
  /** the path (with query) of the next request of a worker */
  path: (worker: number, n: number) => string
  cookie?: string | ((worker: number, n: number) => string)
  /** a request that takes longer fails with error 'timeout' */
  timeoutMs?: number
  /** pause between two requests of a worker */
  pauseMs?: number
}

/** One request; never rejects (the outcome says how it ended). */
function sendRequest(
  agent: http.Agent,
  base: string,
  path: string,
  headers: Record<string, string>,
  timeoutMs: number,
  worker = 0,
): Promise<Outcome> {
  const requestId = `load-${randomUUID()}`
  const startedAt = Date.now()
  return new Promise((resolve) => {
    let sentAt: number | undefined
    let settled = false
    const done = (o: Partial<Outcome>, reused: boolean) => {
      if (settled) return
      settled = true
      resolve({
        worker,
        requestId,
        path,
        startedAt,
        sentAt,
        endedAt: Date.now(),
        status: undefined,
        headers: {},
        body: '',
        error: undefined,
        reusedSocket: reused,
        ...o,
      })
    }
    const req = http.request(`${base}${path}`, { agent, headers: { ...headers, 'x-request-id': requestId } })
    req.on('finish', () => (sentAt = Date.now()))
    req.setTimeout(timeoutMs, () => {
      done({ error: 'timeout' }, req.reusedSocket)
      req.destroy()
    })
    req.on('error', (e: NodeJS.ErrnoException) => done({ error: e.code ?? e.message }, req.reusedSocket))
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', (e: NodeJS.ErrnoException) =>
        done({ status: res.statusCode, headers: res.headers, error: e.code ?? e.message }, req.reusedSocket),
      )
      res.on('end', () =>
        done(
          { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') },
          req.reusedSocket,
        ),
      )
    })
    req.end()
  })
}

export class Load {
  readonly outcomes: Outcome[] = []
  private running = false
  private workers: Promise<void>[] = []
  private readonly agent: http.Agent

  constructor(private readonly options: LoadOptions) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: options.connections })
  }

  start(): this {
    this.running = true
    for (let w = 0; w < this.options.connections; w++) this.workers.push(this.work(w))
    return this
  }

  private async work(worker: number): Promise<void> {
    const { base, path, cookie, timeoutMs = 15_000, pauseMs = 0 } = this.options
    for (let n = 0; this.running; n++) {
      const headers: Record<string, string> = {}
      const c = typeof cookie === 'function' ? cookie(worker, n) : cookie
      if (c !== undefined) headers.cookie = c
      this.outcomes.push(await sendRequest(this.agent, base, path(worker, n), headers, timeoutMs, worker))
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs))
    }
  }

  /** Stops issuing requests and waits for those in flight. */
  async stop(): Promise<Outcome[]> {
    this.running = false
    await Promise.all(this.workers)
    this.agent.destroy()
    return this.outcomes
  }
}

/** Counts outcomes by status (or error). */
export function tally(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const o of outcomes) {
    const key = o.error !== undefined ? `${o.status ?? ''}${o.error}` : String(o.status)
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
