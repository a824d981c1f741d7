import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import { FolderServiceClient, FolderServiceError } from 'folder-service/client'
import {
  EMPTY_LISTING,
  problemBody,
  sendJson,
  startScriptedServer,
  type ScriptedServer,
} from '../helpers/apps/scripted-server.js'

/**
 * The client against a server that misbehaves in the ways a broken proxy, a buggy release
 * or a hostile host can: a `next` link back to a page already read, a body without end, an
 * answer that never comes, a Retry-After of decades. The client must end each of them with
 * a typed error (or wait as asked), never loop, never hold unbounded memory, never hang.
 */

const SESSION = '00000000-0000-4000-8000-000000000000'
let server: ScriptedServer

before(async () => {
  server = await startScriptedServer()
})
after(() => server.close())
beforeEach(() => {
  server.requests.length = 0
  server.handle = (_request, response) => sendJson(response, 200, EMPTY_LISTING)
})

const client = (options: Partial<ConstructorParameters<typeof FolderServiceClient>[0]> = {}) =>
  new FolderServiceClient({ baseUrl: server.base, sessionId: SESSION, ...options })

/** Answers every request with one folder and a `next` link to `/v1/folders?page=2` (itself, from page 2 on). */
function loopingNext(etag: string | null): void {
  server.handle = (request, response) => {
    if (server.requests.length > 50) {
      sendJson(response, 500, problemBody(500, 'INTERNAL')) // ends the loop of a client without the guard
      return
    }
    if (etag !== null && request.headers['if-none-match'] === etag) {
      response.writeHead(304, { etag, link: '</v1/folders?page=2&limit=1>; rel="next"' })
      response.end()
      return
    }
    const body = { ...EMPTY_LISTING, total: 2, limit: 1, folders: [] }
    sendJson(response, 200, body, {
      link: '</v1/folders?page=2&limit=1>; rel="next"',
      ...(etag === null ? {} : { etag }),
    })
  }
}

async function failure(promise: Promise<unknown>): Promise<FolderServiceError> {
  const error = await promise.then(
    () => assert.fail('expected a FolderServiceError'),
    (e: unknown) => e,
  )
  assert.ok(error instanceof FolderServiceError, `a FolderServiceError, got ${String(error)}`)
  return error
}

async function drain(iterable: AsyncIterable<unknown>): Promise<void> {
  for await (const item of iterable) void item
}

describe('client hardening: links', { timeout: 20_000 }, () => {
  it('a walk stops with BAD_RESPONSE on a next link it has followed before', async () => {
    loopingNext(null)
    const error = await failure(drain(client().walk(null, { limit: 1 })))
    assert.equal(error.code, 'BAD_RESPONSE')
    assert.match(error.detail, /followed before/)
    assert.equal(server.requests.length, 2, 'page 1, then page 2, whose next link points back at itself')
  })

  it('the same with conditional requests, where the looping page comes back as 304', async () => {
    loopingNext('"same"')
    const error = await failure(drain(client({ conditionalRequests: true }).pages(null, { limit: 1 })))
    assert.equal(error.code, 'BAD_RESPONSE')
    assert.equal(server.requests.length, 2)
  })
})

describe('client hardening: body size', { timeout: 20_000 }, () => {
  it('a body above maxResponseBytes is BAD_RESPONSE, and the rest is not read', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    let written = 0
    let closed = false
    server.handle = (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.on('close', () => (closed = true))
      const pump = () => {
        // Endless: only the client closing the connection ends it.
        while (!closed && written < 512 * 1024 * 1024 && response.write(chunk)) written += chunk.length
        if (!closed) response.once('drain', pump)
      }
      response.write('{"folders":[')
      pump()
    }
    const error = await failure(client({ maxResponseBytes: 1024 * 1024 }).listFolders())
    assert.equal(error.code, 'BAD_RESPONSE')
    assert.match(error.detail, /larger than 1048576 bytes/)
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.ok(written < 16 * 1024 * 1024, `the server wrote ${written} bytes before the client stopped it`)
  })

  it('the default bound refuses a 40 MB listing; a declared Content-Length above it is refused unread', async () => {
    const names = Array.from({ length: 40 }, (_, i) => ({ name: `${i}`.padEnd(1024 * 1024, 'x') }))
    server.handle = (_request, response) => sendJson(response, 200, { ...EMPTY_LISTING, folders: names })
    assert.equal((await failure(client().listFolders())).code, 'BAD_RESPONSE')

    server.handle = (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 ** 40) })
      response.write('{') // and nothing more: a client that waits for the body hangs
    }
    const started = Date.now()
    const error = await failure(client().listFolders())
    assert.equal(error.code, 'BAD_RESPONSE')
    assert.ok(Date.now() - started < 2000)
  })
})

describe('client hardening: time', { timeout: 20_000 }, () => {
  it('an answer that never comes ends in TIMEOUT after timeoutMs', { timeout: 10_000 }, async () => {
    server.handle = () => undefined // accepts the request, never answers
    const started = Date.now()
    const error = await failure(client({ timeoutMs: 300 }).listFolders())
    assert.equal(error.code, 'TIMEOUT')
    assert.equal(error.status, 0)
    const took = Date.now() - started
    assert.ok(took >= 300 && took < 3000, `took ${took} ms`)
  })

  it('without the option, a request still times out (after 30 s)', { timeout: 10_000 }, async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    let seen: AbortSignal | null | undefined
    const never: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        seen = init?.signal
        seen?.addEventListener('abort', () => reject(seen?.reason as Error))
      })
    const outcome = client({ fetch: never })
      .listFolders()
      .catch((e: unknown) => e)
    await new Promise((resolve) => setImmediate(resolve))
    t.mock.timers.tick(29_999)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(seen?.aborted, false, 'not before 30 s')
    t.mock.timers.tick(1)
    const error = await Promise.race([
      outcome,
      new Promise((resolve) => setImmediate(() => resolve('pending'))),
    ])
    assert.ok(error instanceof FolderServiceError, `timed out, got ${String(error)}`)
    assert.equal(error.code, 'TIMEOUT')
  })

  for (const maxRetryDelayMs of [2 ** 31, 1e13, Infinity]) {
    it(`Retry-After: 1000000000 with maxRetryDelayMs ${maxRetryDelayMs} is never an immediate retry`, async () => {
      server.handle = (_request, response) =>
        sendJson(response, 503, problemBody(503, 'UNAVAILABLE'), { 'retry-after': '1000000000' })
      const outcome = await client({ maxRetryDelayMs, maxRetries: 3 })
        .listFolders({}, { signal: AbortSignal.timeout(500) })
        .catch((e: unknown) => e)
      assert.equal(server.requests.length, 1, 'no retry within the 500 ms the test waits')
      if (maxRetryDelayMs < 1e12) {
        // A wait beyond the bound is reported at once, with what the service asked for.
        assert.ok(outcome instanceof FolderServiceError)
        assert.equal(outcome.retryAfterMs, 1e12)
      } else {
        assert.ok(outcome instanceof DOMException && outcome.name === 'TimeoutError', String(outcome))
      }
    })
  }
})
