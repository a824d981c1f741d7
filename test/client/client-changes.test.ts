import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import { FolderServiceClient, FolderServiceError, type WatchBatch } from 'folder-service/client'
import { FakeFeed } from '../helpers/apps/fake-feed.js'
import { followFor, nextBatch } from '../helpers/fixtures/watch-batches.js'
import {
  problemBody,
  sendJson,
  startScriptedServer,
  type ScriptedServer,
} from '../helpers/apps/scripted-server.js'

/**
 * `changes()` and `watch()` against a model of the service's feed (test/helpers/apps/fake-feed.ts)
 * that speaks the contract's JSON, codes and Link headers, steered to give what a real
 * service gives only by chance: a write between two pages of a listing, a 410 in the middle
 * of a watch, a 503 with Retry-After on a changes request, a held request to abort. The same
 * behaviour against the real service is in client.test.ts.
 */

const PARENT = 'f0000000-0000-4000-8000-000000000000'
const SESSION = '00000000-0000-4000-8000-000000000000'
const fid = (n: number) => `f0000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

let server: ScriptedServer
let feed: FakeFeed

before(async () => {
  server = await startScriptedServer()
})
after(() => server.close())
beforeEach(() => {
  server.requests.length = 0
  feed = new FakeFeed(PARENT)
  feed.serve(server)
})

const client = (options: Partial<ConstructorParameters<typeof FolderServiceClient>[0]> = {}) =>
  new FolderServiceClient({ baseUrl: server.base, sessionId: SESSION, maxRetryDelayMs: 2000, ...options })

const names = (batch: WatchBatch | undefined) => batch?.folders.map((f) => f.name)
const changesRequests = () => server.requests.filter((r) => r.url.startsWith('/v1/folders/changes'))

describe('client.changes()', () => {
  it('asks with folder_id, cursor, limit and wait, and returns the typed body', async () => {
    feed.upsert(feed.folder(fid(1), 'one'))
    feed.remove(fid(2))
    const body = await client().changes({ folderId: PARENT, cursor: 'c0', limit: 10, wait: 0 })
    assert.deepEqual(body, {
      changes: [
        { type: 'upsert', folder: feed.folder(fid(1), 'one') },
        { type: 'remove', id: fid(2) },
      ],
      cursor: 'c2',
      has_more: false,
    })
    const asked = new URL(server.requests.at(-1)?.url ?? '', server.base)
    assert.equal(asked.pathname, '/v1/folders/changes')
    assert.deepEqual(Object.fromEntries(asked.searchParams), {
      folder_id: PARENT,
      cursor: 'c0',
      limit: '10',
      wait: '0',
    })
    assert.equal(server.requests.at(-1)?.headers.cookie, `session_id=${SESSION}`)
  })

  it('a 410 is FolderServiceError CURSOR_EXPIRED; other problems keep their codes', async () => {
    feed.oldestKept = 5
    const expired = await client()
      .changes({ folderId: PARENT, cursor: 'c1' })
      .catch((e: unknown) => e)
    assert.ok(expired instanceof FolderServiceError)
    assert.equal(expired.status, 410)
    assert.equal(expired.code, 'CURSOR_EXPIRED')
    feed.scriptedChanges.push((response) => sendJson(response, 400, problemBody(400, 'INVALID_INPUT')))
    await assert.rejects(client().changes({ cursor: 'x' }), { code: 'INVALID_INPUT', status: 400 })
    feed.scriptedChanges.push((response) => sendJson(response, 200, { changes: 'no', cursor: 1 }))
    await assert.rejects(client().changes({ cursor: 'c0' }), { code: 'BAD_RESPONSE', status: 200 })
  })

  it('a held request gets its wait on top of timeoutMs; an abort ends it at once', async () => {
    const started = Date.now()
    const held = await client({ timeoutMs: 300 }).changes({ folderId: PARENT, cursor: 'c0', wait: 1 })
    assert.deepEqual(held, { changes: [], cursor: 'c0', has_more: false })
    assert.ok(Date.now() - started >= 1000, 'held for the wait')

    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    const aborted = Date.now()
    await assert.rejects(
      client().changes({ folderId: PARENT, cursor: 'c0', wait: 30 }, { signal: controller.signal }),
      (e: unknown) => e instanceof DOMException && e.name === 'AbortError',
    )
    assert.ok(Date.now() - aborted < 2000)
  })

  it('a 503 on a changes request is retried after its Retry-After', async () => {
    feed.upsert(feed.folder(fid(1), 'one'))
    feed.scriptedChanges.push((response) =>
      sendJson(response, 503, problemBody(503, 'UNAVAILABLE'), { 'retry-after': '1' }),
    )
    const body = await client().changes({ folderId: PARENT, cursor: 'c0' })
    assert.equal(body.changes.length, 1)
    const [first, second] = changesRequests()
    assert.ok((second?.at ?? 0) - (first?.at ?? 0) >= 1000)
  })
})

describe('client.watch()', () => {
  it('a snapshot of every page, then a batch per change, each with the whole listing sorted', async () => {
    for (let i = 1; i <= 7; i++) feed.upsert(feed.folder(fid(i), `folder ${i}`))
    const client_ = client()
    const watch = client_.watch(PARENT, { limit: 3, wait: 5 })
    const snapshot = await nextBatch(watch)
    assert.equal(snapshot?.kind, 'snapshot')
    assert.deepEqual(snapshot?.folders, feed.sorted())
    assert.equal(server.requests.filter((r) => r.url.startsWith('/v1/folders?')).length, 3, 'three pages')

    setTimeout(() => {
      feed.upsert(feed.folder(fid(3), 'Renamed'))
      feed.remove(fid(5))
    }, 100)
    const batch = await nextBatch(watch)
    assert.equal(batch?.kind, 'changes')
    assert.deepEqual(batch?.kind === 'changes' ? batch.changes : [], [
      { type: 'upsert', folder: feed.folder(fid(3), 'Renamed') },
      { type: 'remove', id: fid(5) },
    ])
    assert.deepEqual(batch?.folders, feed.sorted())
    assert.equal(names(batch)?.[0], 'Renamed', 'code point order: upper case first')
    await watch.return(undefined)
  })

  it('writes made while paging are repaired before the snapshot', async () => {
    for (let i = 1; i <= 6; i++) feed.upsert(feed.folder(fid(i), `folder ${i}`))
    feed.beforePage = (page) => {
      // Between page 1 and page 2: one folder moves from page 2 to page 1, one is added, one goes.
      if (page !== 2) return
      feed.upsert(feed.folder(fid(5), 'a first'))
      feed.upsert(feed.folder(fid(9), 'folder 9'))
      feed.remove(fid(1))
    }
    const watch = client().watch(PARENT, { limit: 3 })
    const snapshot = await nextBatch(watch)
    assert.deepEqual(snapshot?.folders, feed.sorted())
    await watch.return(undefined)
  })

  it('drains has_more answers into one batch that ends at the present', async () => {
    const watch = client().watch(PARENT, { changesLimit: 2 })
    assert.deepEqual((await nextBatch(watch))?.folders, [])
    setTimeout(() => {
      for (let i = 1; i <= 5; i++) feed.upsert(feed.folder(fid(i), `n${i}`))
    }, 50)
    const batch = await nextBatch(watch)
    assert.equal(batch?.kind === 'changes' ? batch.changes.length : 0, 5)
    assert.deepEqual(batch?.folders, feed.sorted())
    await watch.return(undefined)
  })

  it('on 410 it lists again and goes on with a new snapshot', async () => {
    feed.upsert(feed.folder(fid(1), 'kept'))
    const watch = client().watch(PARENT, { wait: 5 })
    assert.deepEqual(names(await nextBatch(watch)), ['kept'])
    setTimeout(() => feed.upsert(feed.folder(fid(2), 'imported')), 50)
    assert.deepEqual(names(await nextBatch(watch)), ['imported', 'kept'])
    setTimeout(() => {
      // A reset (a bulk import, say): the changes before it are no longer kept, and the
      // request the watch holds now is answered 410.
      feed.oldestKept = feed.log.length + 1
      feed.remove(fid(99))
    }, 50)
    const relisted = await nextBatch(watch)
    assert.equal(relisted?.kind, 'snapshot')
    assert.deepEqual(names(relisted), ['imported', 'kept'])
    setTimeout(() => feed.upsert(feed.folder(fid(3), 'after')), 50)
    assert.deepEqual(names(await nextBatch(watch)), ['after', 'imported', 'kept'])
    await watch.return(undefined)
  })

  it('a 410 right after every listing: it lists again after growing pauses, and goes on', async () => {
    feed.oldestKept = Number.MAX_SAFE_INTEGER
    const { items, error } = await followFor(2_500, (signal) => client().watch(PARENT, { signal }))
    assert.equal(error, null)
    assert.equal(items.length, 0, 'no snapshot: no listing was ever caught up')
    const listed = server.requests.filter((r) => r.url.startsWith('/v1/folders?')).length
    assert.ok(listed >= 2 && listed <= 4, `listed ${listed} times in 2.5 s`)
  })

  it('stops when the consumer breaks, and when the signal aborts during a held request', async () => {
    const client_ = client()
    for await (const batch of client_.watch(PARENT)) {
      assert.equal(batch.kind, 'snapshot')
      break
    }
    const after = server.requests.length
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(server.requests.length, after, 'no request after the break')

    const controller = new AbortController()
    const watch = client_.watch(PARENT, { signal: controller.signal })
    await watch.next()
    setTimeout(() => controller.abort(), 200)
    const started = Date.now()
    await assert.rejects(watch.next(), (e: unknown) => e instanceof DOMException && e.name === 'AbortError')
    assert.ok(Date.now() - started < 2000)
  })

  it('refuses a wait outside 1 to 60 s, and a listing without a changes link', async () => {
    await assert.rejects(client().watch(PARENT, { wait: 0 }).next(), RangeError)
    server.handle = (_request, response) =>
      sendJson(response, 200, { folders: [], total: 0, page: 1, limit: 50 })
    await assert.rejects(client().watch(PARENT).next(), { code: 'BAD_RESPONSE' })
  })

  it('stops with BAD_RESPONSE on a next link it followed before', async () => {
    feed.upsert(feed.folder(fid(1), 'a'))
    feed.upsert(feed.folder(fid(2), 'b'))
    const list = server.handle
    server.handle = (request, response) => {
      // every page says its next page is page 2
      const setHeader = response.writeHead.bind(response)
      response.writeHead = ((status: number, headers: Record<string, string>) =>
        setHeader(status, {
          ...headers,
          link: `</v1/folders?folder_id=${PARENT}&page=2&limit=1>; rel="next", </v1/folders/changes?folder_id=${PARENT}&cursor=c0>; rel="changes"`,
        })) as typeof response.writeHead
      list(request, response)
    }
    await assert.rejects(client().watch(PARENT, { limit: 1 }).next(), { code: 'BAD_RESPONSE' })
  })
})
