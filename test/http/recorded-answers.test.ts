import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../../src/config.js'
import { allBackends, type Backend } from '../helpers/databases/backends.js'
import { loadDataset, sessions } from '../helpers/fixtures/contract-data.js'
import { parityRequests } from '../helpers/http/parity.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * What the service sends, writes to its log and counts in its metrics, recorded once and
 * compared on every run: a change that makes the listing path cheaper must leave every byte
 * the same. The app runs with the service's defaults (LOG_LEVEL=info, rate limits on) over
 * a real socket, so the whole path is recorded: status line, every header in the order it
 * is sent, the body, the log lines and the request metrics.
 *
 * Only what differs between two runs by design is blanked: dates, request ids, the random
 * nonce of sealed tokens, the log's time, pid, hostname and durations, the rate limit's reset
 * and the duration buckets (the counts stay). `RECORD_ANSWERS=1` writes the recording anew.
 */

const RECORDING_DIR = new URL('./recorded/', import.meta.url)

interface Exchange {
  method: 'GET' | 'HEAD' | 'POST'
  url: string
  session?: string
  /** send the ETag of the answer to this earlier exchange (by index) as If-None-Match */
  ifNoneMatchOf?: number
  /** follow the rel="next" link of this earlier exchange (by index) instead of `url` */
  nextOf?: number
}

interface Recorded {
  status: number
  /** `name: value` in the order they were sent */
  headers: string[]
  body: string
}

const TOKEN = /([?&]cursor=)[A-Za-z0-9_-]+/g

function blankHeader(name: string, value: string): string {
  if (name === 'date' || name === 'x-request-id' || name === 'keep-alive') return `${name}: *`
  if (name === 'ratelimit-reset' || name === 'x-ratelimit-reset') return `${name}: *`
  if (name === 'ratelimit') return `${name}: ${value.replace(/reset=\d+/, 'reset=*')}`
  return `${name}: ${value.replace(TOKEN, '$1*')}`
}

const blankBody = (body: string) => body.replace(/"request_id":"[^"]*"/g, '"request_id":"*"')

/** The exchanges: every parity listing, then revalidation, HEAD, paging by token and refusals. */
function exchanges(): Exchange[] {
  const alice = sessions.aliceLive.id
  const listed: Exchange[] = parityRequests().map((url) => ({ method: 'GET', url, session: alice }))
  const first = listed.length
  return [
    ...listed,
    // the same answers again: cached now
    ...listed.slice(0, 6),
    { method: 'GET', url: '/v1/folders?limit=2', session: alice },
    { method: 'GET', url: '/v1/folders?limit=2', session: alice, ifNoneMatchOf: first + 6 },
    { method: 'HEAD', url: '/v1/folders?limit=2', session: alice },
    { method: 'HEAD', url: '/v1/folders?limit=2', session: alice, ifNoneMatchOf: first + 6 },
    { method: 'GET', url: '', session: alice, nextOf: first + 6 },
    { method: 'GET', url: '/v1/folders?limit=2&cursor=not-a-token', session: alice },
    { method: 'GET', url: '/v1/folders', session: sessions.bobLive.id },
    { method: 'GET', url: '/v1/folders', session: sessions.carolLive.id },
    { method: 'GET', url: '/v1/folders', session: sessions.aliceExpired.id },
    { method: 'GET', url: '/v1/folders' },
    { method: 'GET', url: '/v1/folders', session: '00000000-0000-4000-8000-000000000000' },
    { method: 'GET', url: '/v1/folders', session: 'not-a-uuid' },
    { method: 'POST', url: '/v1/folders', session: alice },
    { method: 'GET', url: '/nowhere' },
    { method: 'GET', url: '/healthz' },
  ]
}

interface Answer extends Recorded {
  etag?: string
  next?: string
}

function send(
  port: number,
  { method, url, session }: Exchange,
  ifNoneMatch: string | undefined,
): Promise<Answer> {
  const headers: Record<string, string> = {}
  if (session !== undefined) headers.cookie = `session_id=${session}`
  if (ifNoneMatch !== undefined) headers['if-none-match'] = ifNoneMatch
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path: url, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const sent: string[] = []
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          sent.push(blankHeader(String(res.rawHeaders[i]).toLowerCase(), String(res.rawHeaders[i + 1])))
        }
        const { etag, link } = res.headers
        const next = /<([^>]*)>; rel="next"/.exec(String(link))?.[1]
        resolve({
          status: res.statusCode ?? 0,
          headers: sent,
          body: blankBody(Buffer.concat(chunks).toString('utf8')),
          ...(etag === undefined ? {} : { etag }),
          ...(next === undefined ? {} : { next }),
        })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/** A log line with what differs between runs blanked, keys in the order they were written. */
const blankLogLine = (line: string) =>
  line
    .replace(/"time":\d+/, '"time":*')
    .replace(/"pid":\d+/, '"pid":*')
    .replace(/"hostname":"[^"]*"/, '"hostname":*')
    .replace(/"request_id":"[^"]*"/, '"request_id":*')
    .replace(/"duration_ms":[\d.e-]+/, '"duration_ms":*')

/** The request and store metrics as counts (the buckets depend on durations). */
const countedMetrics = (text: string) =>
  text
    .split('\n')
    .filter(
      (line) =>
        line.startsWith('# ') ||
        /^http_requests_total\{/.test(line) ||
        /^(http_request|db_operation)_duration_seconds_count\{/.test(line),
    )
    .filter((line) => /http_request|db_operation/.test(line))

async function record(backend: Backend): Promise<{
  answers: Recorded[]
  log: string[]
  metrics: string[]
}> {
  const opened = await backend.open()
  const chunks: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'))
      done()
    },
  })
  const defaults = loadConfig({})
  let app: FastifyInstance | undefined
  try {
    await loadDataset(opened.store)
    app = await appOver(
      opened.store,
      {
        logLevel: defaults.logLevel,
        rateLimitPerMinute: defaults.rateLimitPerMinute,
        authFailuresPerMinute: defaults.authFailuresPerMinute,
      },
      { level: defaults.logLevel, stream },
    )
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo
    const answers: Answer[] = []
    for (const exchange of exchanges()) {
      const revalidated = exchange.ifNoneMatchOf === undefined ? undefined : answers[exchange.ifNoneMatchOf]
      const followed = exchange.nextOf === undefined ? undefined : answers[exchange.nextOf]?.next
      answers.push(await send(port, { ...exchange, url: followed ?? exchange.url }, revalidated?.etag))
    }
    const metrics = countedMetrics((await send(port, { method: 'GET', url: '/metrics' }, undefined)).body)
    const log = chunks
      .join('')
      .split('\n')
      .filter((line) => line !== '' && !line.includes('"msg":"Server listening'))
      .map(blankLogLine)
    return { answers: answers.map(({ status, headers, body }) => ({ status, headers, body })), log, metrics }
  } finally {
    await app?.close()
    await opened.cleanup()
  }
}

for (const backend of allBackends()) {
  describe(`${backend.name}: answers, log lines and metrics as recorded`, { skip: backend.skip }, () => {
    let recorded: Awaited<ReturnType<typeof record>>
    const file = new URL(`${backend.name}.json`, RECORDING_DIR)

    before(async () => {
      recorded = await record(backend)
      if (process.env.RECORD_ANSWERS === '1') {
        mkdirSync(RECORDING_DIR, { recursive: true })
        writeFileSync(file, `${JSON.stringify(recorded, null, 1)}\n`)
      }
    })
    const expected = () => {
      assert.ok(existsSync(file), `no recording at ${file.pathname}: run once with RECORD_ANSWERS=1`)
      return JSON.parse(readFileSync(file, 'utf8')) as Awaited<ReturnType<typeof record>>
    }

    it('sends the same status, headers and body for every request', () => {
      const want = expected().answers
      assert.equal(recorded.answers.length, want.length)
      recorded.answers.forEach((answer, i) => assert.deepEqual(answer, want[i], `exchange ${i}`))
    })

    it('writes the same log lines', () => {
      assert.deepEqual(recorded.log, expected().log)
    })

    it('counts the same requests and store calls in its metrics', () => {
      assert.deepEqual(recorded.metrics, expected().metrics)
    })
  })
}
