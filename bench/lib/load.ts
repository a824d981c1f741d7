import autocannon, { type Instance, type Options, type Request, type Result } from 'autocannon'
import { Agent, request, type IncomingHttpHeaders } from 'node:http'
import { HOST } from './processes.js'
import { checkBody, type Target } from './targets.js'

/**
 * Node-side load: autocannon for throughput (many connections, the targets in rotation),
 * used for the ceiling comparison and when wrk is missing (wrk.ts drives the throughput
 * phases otherwise), and a node:http prober for latency, timed to the microsecond
 * (autocannon's histogram has one-millisecond resolution, too coarse for sub-millisecond pages).
 */

export interface Failures {
  /** responses with a status other than 2xx */
  non2xx: number
  /** connection errors */
  errors: number
  timeouts: number
  /** 2xx responses whose body was not the exact expected answer */
  wrong: number
  /** a few examples of what went wrong */
  examples: string[]
}

export interface LoadResult extends Failures {
  seconds: number
  requests: number
  reqPerSec: number
  latencyMs: { p50: number; p90: number; p99: number; mean: number; max: number }
  statusCodes: Record<string, number>
  /** bodies checked against their target (a sample: one in `verifyEvery`) */
  verified: number
}

export interface LoadSettings {
  port: number
  targets: Target[]
  connections: number
  pipelining: number
  seconds: number
  /** check one response body in this many; 0: none */
  verifyEvery: number
}

let current: Instance | null = null

/** Stops a running autocannon phase early (Ctrl-C, or the service gone). */
export function stopLoad(): void {
  current?.stop()
}

const MAX_EXAMPLES = 5

export interface AutocannonSettings {
  port: number
  connections: number
  pipelining: number
  seconds: number
  /** requests per second over all connections; absent or 0: as fast as the service answers */
  rate?: number
  /** the next GET to send; `context` is its connection's, as onResponse will see it */
  next: (context: object) => { path: string; headers: Record<string, string> }
  onResponse: (status: number, body: string, context: object, headers: IncomingHttpHeaders) => void
}

/**
 * autocannon against the service on the loopback, GET only, each request made by `next`
 * and each answer handed to `onResponse`; stopLoad() ends it early.
 */
export function autocannonLoad(settings: AutocannonSettings): Promise<Result> {
  const options: Options = {
    url: `http://${HOST}:${settings.port}`,
    connections: settings.connections,
    pipelining: settings.pipelining,
    duration: settings.seconds,
    timeout: 10,
    requests: [
      {
        method: 'GET',
        setupRequest: (req: Request, context) => ({ ...req, ...settings.next(context) }),
        onResponse: (status, body, context, headers) =>
          settings.onResponse(status, body, context, headers ?? {}),
      },
    ],
  }
  if (settings.rate !== undefined && settings.rate > 0) options.overallRate = settings.rate
  return new Promise((resolve, reject) => {
    current = autocannon(options, (error: Error | null, result: Result) => {
      current = null
      if (error) reject(error)
      else resolve(result)
    })
  })
}

/** What `next` leaves in the connection's context for onResponse. */
interface TargetContext {
  target?: Target
}

/** The targets in rotation, one body in `verifyEvery` checked against its target. */
export async function runLoad(settings: LoadSettings): Promise<LoadResult> {
  const { targets, verifyEvery } = settings
  let next = 0
  let responses = 0
  let verified = 0
  let wrong = 0
  const examples: string[] = []
  const result = await autocannonLoad({
    ...settings,
    // Each connection takes the next target of one shared rotation: many users, folders and pages.
    next: (context) => {
      const target = targets[next++ % targets.length] as Target
      ;(context as TargetContext).target = target
      return { path: target.path, headers: { cookie: target.cookie } }
    },
    onResponse: (status, body, context) => {
      if (verifyEvery === 0 || status < 200 || status > 299 || ++responses % verifyEvery !== 0) return
      // With pipelining the context may already name the next target; check only when unambiguous.
      if (settings.pipelining !== 1) return
      verified++
      const target = (context as TargetContext).target as Target
      const problem = checkBody(target, body)
      if (problem !== null) {
        wrong++
        if (examples.length < MAX_EXAMPLES) examples.push(`${target.path}: ${problem}`)
      }
    },
  })
  const statusCodes = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, { count }]) => [code, count ?? 0]),
  )
  const requests = Object.values(statusCodes).reduce((sum, n) => sum + n, 0)
  return {
    seconds: result.duration,
    requests,
    reqPerSec: requests / result.duration,
    latencyMs: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      mean: result.latency.mean,
      max: result.latency.max,
    },
    statusCodes,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    wrong,
    examples,
    verified,
  }
}

export interface RawResponse {
  status: number
  /** header name and value pairs as received */
  headers: [string, string][]
  body: Buffer
}

function get(
  agent: Agent | undefined,
  port: number,
  target: Pick<Target, 'path' | 'cookie'>,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: HOST, port, path: target.path, headers: { cookie: target.cookie }, agent, timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const headers: [string, string][] = []
          for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
            headers.push([res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string])
          }
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) })
        })
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error('timeout after 10 s')))
    req.on('error', reject)
    req.end()
  })
}

/** One request on a fresh connection, headers and body as sent: what the ceiling server replays. */
export function fetchRaw(port: number, target: Pick<Target, 'path' | 'cookie'>): Promise<RawResponse> {
  return get(undefined, port, target)
}

export interface ProbeResult extends Failures {
  requests: number
  seconds: number
  latencyMs: { p50: number; p90: number; p99: number; mean: number; max: number }
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number
}

export interface ProbeSettings {
  port: number
  targets: Target[]
  connections: number
  /** stop after this many seconds ... */
  seconds: number
  /** ... or this many requests, whichever comes first */
  maxRequests?: number
}

/**
 * Latency of the targets in rotation over `connections` keep-alive connections, each
 * request timed from send to last byte. Every body is checked (after its time is taken).
 */
export async function runProbe(settings: ProbeSettings): Promise<ProbeResult> {
  const { port, targets } = settings
  const agent = new Agent({ keepAlive: true, maxSockets: settings.connections })
  const latencies: number[] = []
  const failures: Failures = { non2xx: 0, errors: 0, timeouts: 0, wrong: 0, examples: [] }
  const started = performance.now()
  const deadline = started + settings.seconds * 1000
  const maxRequests = settings.maxRequests ?? Number.POSITIVE_INFINITY
  let next = 0
  const note = (text: string) => {
    if (failures.examples.length < MAX_EXAMPLES) failures.examples.push(text)
  }

  const worker = async () => {
    while (performance.now() < deadline && next < maxRequests) {
      const target = targets[next++ % targets.length] as Target
      const t0 = process.hrtime.bigint()
      let response: RawResponse
      try {
        response = await get(agent, port, target)
      } catch (error) {
        const message = (error as Error).message
        if (message.startsWith('timeout')) failures.timeouts++
        else failures.errors++
        note(`${target.path}: ${message}`)
        continue
      }
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6)
      if (response.status < 200 || response.status > 299) {
        failures.non2xx++
        note(`${target.path}: status ${response.status}`)
        continue
      }
      const problem = checkBody(target, response.body.toString('utf8'))
      if (problem !== null) {
        failures.wrong++
        note(`${target.path}: ${problem}`)
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: settings.connections }, worker))
  } finally {
    agent.destroy()
  }
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const mean = latencies.reduce((sum, ms) => sum + ms, 0) / Math.max(1, latencies.length)
  return {
    ...failures,
    requests: latencies.length,
    seconds,
    latencyMs: {
      p50: percentile(latencies, 0.5),
      p90: percentile(latencies, 0.9),
      p99: percentile(latencies, 0.99),
      mean,
      max: latencies.at(-1) ?? 0,
    },
  }
}
