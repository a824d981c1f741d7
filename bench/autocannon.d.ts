// The slice of autocannon's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface RequestParams {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
  }

  export interface Request extends RequestParams {
    /** Called before each request is sent; what it returns is sent. */
    setupRequest?: (request: RequestParams, context: Record<string, unknown>) => RequestParams
    /** Called with every response to this request, body as a string. */
    onResponse?: (status: number, body: string, context: Record<string, unknown>) => void
  }

  export interface Options {
    url: string
    connections?: number
    pipelining?: number
    duration?: number
    timeout?: number
    requests?: Request[]
    initialContext?: Record<string, unknown>
  }

  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p99: number
    p99_9?: number
  }

  export interface Result {
    duration: number
    errors: number
    timeouts: number
    mismatches: number
    non2xx: number
    resets: number
    '2xx': number
    statusCodeStats: Record<string, { count: number }>
    latency: Histogram
    requests: Histogram & { sent: number }
    throughput: Histogram
  }

  export interface Instance extends EventEmitter {
    stop(): void
  }

  function autocannon(options: Options, callback: (error: Error | null, result: Result) => void): Instance
  export default autocannon
}
