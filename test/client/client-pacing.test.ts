import assert from 'node:assert/strict'
import type { IncomingMessage } from 'node:http'
import { describe, it } from 'node:test'
import { FolderServiceClient, FolderServiceError, type WatchBatch } from 'folder-service/client'
import { Backoff } from '../../src/client/feed-pacing.js'
import { followFor } from '../helpers/fixtures/watch-batches.js'
import {
  EMPTY_LISTING,
  problemBody,
  sendJson,
  useScriptedServer,
  type ScriptedServer,
} from '../helpers/apps/scripted-server.js'

/**
 * `watch()` against services that would turn it into a request flood or an unbounded
 * buffer (docs/client.md "Pacing"): a draining service answering at once with nothing or
 * with 503, a feed whose cursors go round in a cycle, an endless backlog, 410 after 410.
 * Each is counted in a time window: a handful of requests, where a follower without the
 * pacing makes hundreds.
 */

const PARENT = 'f0000000-0000-4000-8000-000000000000'
const SESSION = '00000000-0000-4000-8000-000000000000'
const OWNER = { id: 'a0000000-0000-4000-8000-000000000001', username: 'owner', avatar_url: null }
const scripted = useScriptedServer()

const client = () =>
  new FolderServiceClient({ baseUrl: scripted().base, sessionId: SESSION, maxRetryDelayMs: 5000 })
const changesRequests = () => scripted().requests.filter((r) => r.url.startsWith('/v1/folders/changes'))
const listings = () => scripted().requests.filter((r) => r.url.startsWith('/v1/folders?'))
const query = (request: IncomingMessage) => new URL(request.url ?? '/', 'http://x').searchParams

/**
 * Serves an empty listing whose changes link carries cursor `c0`, and hands changes
 * requests to `changes`; past `bound` requests in all it answers 500, which ends a follower
 * that never stops by itself.
 */
function serveFolder(changes: ScriptedServer['handle'], bound = 2_000): void {
  scripted().handle = (request, response) => {
    if (scripted().requests.length > bound) sendJson(response, 500, problemBody(500, 'INTERNAL'))
    else if (request.url?.startsWith('/v1/folders/changes') === true) changes(request, response)
    else
      sendJson(response, 200, EMPTY_LISTING, {
        link: `</v1/folders/changes?folder_id=${PARENT}&cursor=c0>; rel="changes"`,
      })
  }
}

const watchFor = (ms: number) => followFor(ms, (signal) => client().watch(PARENT, { wait: 30, signal }))

describe('watch() pacing', { timeout: 60_000 }, () => {
  it('a service answering at once with nothing (draining) is asked again only after a pause', async () => {
    serveFolder((_request, response) =>
      sendJson(response, 200, { changes: [], cursor: 'c0', has_more: false }),
    )
    const { items, error } = await watchFor(2_500)
    assert.equal(error, null)
    assert.equal(items.length, 1, 'the snapshot, and no empty batch')
    // the catch-up (wait=0), then held requests that came back early: one a second at most
    const asked = changesRequests().length
    assert.ok(asked >= 2 && asked <= 4, `${asked} changes requests in 2.5 s`)
  })

  it('503 with Retry-After is waited out: a handful of requests, then the error', async () => {
    let answered = 0
    serveFolder((_request, response) => {
      if (answered++ === 0) sendJson(response, 200, { changes: [], cursor: 'c0', has_more: false })
      else sendJson(response, 503, problemBody(503, 'UNAVAILABLE'), { 'retry-after': '1' })
    })
    const { items, error } = await watchFor(4_000)
    assert.equal(items.length, 1)
    assert.ok(error instanceof FolderServiceError && error.code === 'UNAVAILABLE', String(error))
    const [, ...unavailable] = changesRequests()
    assert.equal(unavailable.length, 3, 'the request and its two retries')
    for (let i = 1; i < unavailable.length; i++) {
      const gap = (unavailable[i]?.at ?? 0) - (unavailable[i - 1]?.at ?? 0)
      assert.ok(gap >= 1000, `retry ${i} came ${gap} ms after the one before`)
    }
  })

  it('cursors that go round in a cycle end the watch with BAD_RESPONSE after a few requests', async () => {
    serveFolder((request, response) => {
      const next = query(request).get('cursor') === 'A' ? 'B' : 'A'
      sendJson(response, 200, { changes: [], cursor: next, has_more: true })
    })
    const { items, error } = await watchFor(2_000)
    assert.equal(items.length, 0)
    assert.ok(error instanceof FolderServiceError && error.code === 'BAD_RESPONSE', String(error))
    assert.match(error.detail, /cycle/)
    assert.ok(changesRequests().length <= 4, `${changesRequests().length} changes requests`)
  })

  it('an endless backlog is handed over in bounded batches as it arrives', async () => {
    const ids = Array.from(
      { length: 20_000 },
      (_, i) => `f1000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
    )
    let answers = 0
    serveFolder((_request, response) => {
      answers++
      const at = '2026-01-01T00:00:00.000Z'
      const changes = ids.map((id) => ({
        type: 'upsert',
        folder: { id, name: `n${answers}`, folder_id: PARENT, owner: OWNER, created_at: at, updated_at: at },
      }))
      sendJson(response, 200, { changes, cursor: `c${answers}`, has_more: true })
    }, 30)
    const watch = client().watch(PARENT)
    const batches: WatchBatch[] = []
    for await (const batch of watch) {
      batches.push(batch)
      // held at once: this batch, and at most the answer being read ahead
      assert.ok(batch.kind === 'snapshot' || batch.changes.length <= 20_000, 'one answer per batch')
      assert.equal(batch.atPresent, false)
      assert.equal(batch.folders.length, 20_000, 'the same 20,000 folders, renamed')
      assert.ok(answers <= batches.length + 1, `${answers} answers read for ${batches.length} batches`)
      if (batches.length === 4) break
    }
    assert.deepEqual(
      batches.map((b) => b.kind),
      ['snapshot', 'changes', 'changes', 'changes'],
    )
    assert.equal(batches[3]?.folders[0]?.name, 'n4', 'each batch applied as it came')
  })

  it('410 after 410 is listed again after growing pauses', async () => {
    // The catch-up succeeds, every held request is 410: a service reset over and over.
    serveFolder((request, response) => {
      if (query(request).get('wait') === '0')
        sendJson(response, 200, { changes: [], cursor: 'c0', has_more: false })
      else sendJson(response, 410, problemBody(410, 'CURSOR_EXPIRED'))
    })
    const { items, error } = await watchFor(2_500)
    assert.equal(error, null)
    const listed = listings()
    assert.ok(listed.length >= 2 && listed.length <= 4, `${listed.length} listings in 2.5 s`)
    assert.equal(items.length, listed.length, 'a snapshot per listing')
    const gaps = listed.slice(1).map((r, i) => r.at - (listed[i]?.at ?? 0))
    assert.ok((gaps[1] ?? 500) >= 450, `the second pause is at least half a second: ${gaps.join(', ')} ms`)
  })
})

describe('Backoff', () => {
  it('no pause after one failure; then growing, jittered between half and all of each step, capped; reset by success', () => {
    const steps = (random: number) => {
      const backoff = new Backoff({ firstMs: 1000, capMs: 8000, random: () => random })
      return Array.from({ length: 7 }, () => backoff.failed())
    }
    assert.deepEqual(steps(0), [0, 500, 1000, 2000, 4000, 4000, 4000])
    assert.deepEqual(steps(0.999999).map(Math.round), [0, 1000, 2000, 4000, 8000, 8000, 8000])
    const backoff = new Backoff({ random: () => 0 })
    backoff.failed()
    assert.ok(backoff.failed() > 0)
    backoff.succeeded()
    assert.equal(backoff.failed(), 0, 'a failure after a success is not paused')
  })
})
