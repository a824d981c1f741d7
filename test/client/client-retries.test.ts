import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, beforeEach, describe, it } from 'node:test'
import { FolderServiceClient, FolderServiceError } from 'folder-service/client'
import { PROBLEM_CODES } from '../../src/schemas/problem-codes.js'
import { EMPTY_LISTING, problemBody } from '../helpers/apps/scripted-server.js'

/**
 * What a healthy `serve` cannot be made to answer on demand: a 503 whose Retry-After the
 * client must wait out, 429s in a row, the codes no listing request provokes (405, 500),
 * answers that are not problem details, and a service that is not there. A scripted
 * node:http server gives those answers in the service's own problem format (docs/api.md
 * "Errors"); the real service's 401/403/400/404/429 are in client.test.ts.
 */

type Answer = { status: number; headers?: Record<string, string>; body: unknown }

const LISTING = EMPTY_LISTING
const ok: Answer = { status: 200, body: LISTING }
const problem = (status: number, code: string, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { 'content-type': 'application/problem+json', ...headers },
  body: problemBody(status, code),
})

let server: Server
let base: string
let script: Answer[] = []
/** when each request arrived (ms since the epoch) */
let arrivals: number[] = []

function answer(_request: IncomingMessage, response: ServerResponse): void {
  arrivals.push(Date.now())
  const next = script.shift() ?? ok
  response.writeHead(next.status, { 'content-type': 'application/json', ...next.headers })
  response.end(typeof next.body === 'string' ? next.body : JSON.stringify(next.body))
}

before(async () => {
  server = createServer(answer)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(() => new Promise<void>((resolve) => server.close(() => resolve())))
beforeEach(() => {
  script = []
  arrivals = []
})

const client = (options: Partial<ConstructorParameters<typeof FolderServiceClient>[0]> = {}) =>
  new FolderServiceClient({ baseUrl: base, sessionId: '00000000-0000-4000-8000-000000000000', ...options })

describe('client retries', () => {
  it('waits out a Retry-After in seconds before retrying a 503', async () => {
    script = [problem(503, 'UNAVAILABLE', { 'retry-after': '1' })]
    const page = await client().listFolders()
    assert.deepEqual(page.body, LISTING)
    assert.equal(arrivals.length, 2)
    const waited = (arrivals[1] ?? 0) - (arrivals[0] ?? 0)
    assert.ok(waited >= 1000 && waited < 2500, `waited ${waited} ms`)
  })

  it('waits out a Retry-After given as an HTTP date before retrying a 429', async () => {
    // HTTP dates have whole seconds: two seconds ahead is at least one second away.
    const date = new Date(Math.ceil(Date.now() / 1000) * 1000 + 2000).toUTCString()
    script = [problem(429, 'RATE_LIMITED', { 'retry-after': date })]
    await client().listFolders()
    const waited = (arrivals[1] ?? 0) - (arrivals[0] ?? 0)
    assert.equal(arrivals.length, 2)
    assert.ok(waited >= 1000 && waited < 3500, `waited ${waited} ms`)
  })

  it('gives up after maxRetries with the last answer as the typed error', async () => {
    script = Array.from({ length: 5 }, () => problem(503, 'UNAVAILABLE', { 'retry-after': '0' }))
    const error = await client({ maxRetries: 2 })
      .listFolders()
      .catch((e: unknown) => e)
    assert.ok(error instanceof FolderServiceError)
    assert.equal(error.code, 'UNAVAILABLE')
    assert.equal(error.status, 503)
    assert.equal(error.retryAfterMs, 0)
    assert.equal(arrivals.length, 3, 'one request and two retries')
  })

  it('does not retry other errors', async () => {
    script = [problem(500, 'INTERNAL')]
    await assert.rejects(client().listFolders(), { code: 'INTERNAL', status: 500 })
    assert.equal(arrivals.length, 1)
  })

  it('an abort during the wait ends it at once with the AbortError', async () => {
    script = [problem(503, 'UNAVAILABLE', { 'retry-after': '30' })]
    const started = Date.now()
    await assert.rejects(
      client().listFolders({}, { signal: AbortSignal.timeout(200) }),
      (e: unknown) => e instanceof DOMException && e.name === 'TimeoutError',
    )
    assert.ok(Date.now() - started < 2000)
    assert.equal(arrivals.length, 1)
  })
})

describe('client errors', () => {
  it('every problem code of the service arrives as FolderServiceError with its fields', async () => {
    const statuses = [400, 401, 403, 404, 405, 429, 410, 503, 500]
    assert.equal(statuses.length, PROBLEM_CODES.length)
    for (const [i, code] of PROBLEM_CODES.entries()) {
      const status = statuses[i] ?? 500
      script = [problem(status, code)]
      const error = await client({ maxRetries: 0 })
        .listFolders()
        .catch((e: unknown) => e)
      assert.ok(error instanceof FolderServiceError, code)
      assert.deepEqual(
        { status: error.status, code: error.code, detail: error.detail, requestId: error.requestId },
        { status, code, detail: `scripted ${code}`, requestId: `req-${code}` },
      )
    }
  })

  it('an answer that is not problem details is BAD_RESPONSE; no service is NETWORK_ERROR', async () => {
    script = [{ status: 502, headers: { 'content-type': 'text/html' }, body: '<h1>Bad gateway</h1>' }]
    await assert.rejects(client().listFolders(), { code: 'BAD_RESPONSE', status: 502 })
    script = [{ status: 200, body: '{"not":"a listing"}' }]
    await assert.rejects(client().listFolders(), { code: 'BAD_RESPONSE', status: 200 })
    await assert.rejects(client({ baseUrl: 'http://127.0.0.1:9' }).listFolders(), {
      code: 'NETWORK_ERROR',
      status: 0,
    })
  })

  it('follows links on its own origin only, and refuses a session id that is not a UUID', async () => {
    await assert.rejects(client().follow('https://elsewhere.example/v1/folders?page=2'), TypeError)
    assert.equal(arrivals.length, 0)
    assert.throws(() => client({ sessionId: 'x; other=1' }), TypeError)
  })

  it('resolves relative Link targets against the page that carried them', async () => {
    script = [
      {
        status: 200,
        headers: { link: '</v1/folders?page=2&limit=50&cursor=abc>; rel="next", <?page=9>; rel="last"' },
        body: LISTING,
      },
    ]
    const page = await client().listFolders()
    assert.equal(page.links.next, `${base}/v1/folders?page=2&limit=50&cursor=abc`)
    assert.equal(page.links.last, `${base}/v1/folders?page=9`)
  })
})
