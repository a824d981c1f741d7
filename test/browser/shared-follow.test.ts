import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { followShared, type SharedBatch } from '../../src/browser/shared-follow.js'
import { FolderServiceClient } from '../../src/client/index.js'
import { folder, upsert } from '../helpers/fixtures/tree-entries.js'
import { problemBody, sendJson, useScriptedServer } from '../helpers/apps/scripted-server.js'

/**
 * The folder browser's tree follow (src/browser/shared-follow.ts) at the module level, in
 * Node (no Web Locks here: the tab leads alone, as in a page that is no secure context),
 * against services that would turn it into a request flood or stop it for good: one
 * answering at once with nothing (draining), one past the per-session bound (429 with
 * Retry-After) until a slot frees, one that signs the session out; and a follow whose
 * session stops being the one signed in (the cookie changed in another window) while an
 * answer is on its way. Sharing between tabs is tested in a real Chromium in
 * folder-browser.test.ts and sign-out.test.ts.
 */

const SESSION = '00000000-0000-4000-8000-000000000000'
const OTHER_SESSION = '00000000-0000-4000-8000-000000000001'
const scripted = useScriptedServer()
const isDownload = (url: string) => !new URL(url, 'http://x').searchParams.has('cursor')

interface Seen {
  batches: SharedBatch[]
  failed: unknown[]
  /** times the follow said its session left */
  left: number
}

/**
 * Follows while `signedIn()` says which session the browser is signed in with: what it
 * sees, and the function that stops it.
 */
function follow(signedIn: () => string | null = () => SESSION): { seen: Seen; stop: () => void } {
  const client = new FolderServiceClient({ baseUrl: scripted().base, sessionId: SESSION, maxRetries: 0 })
  const seen: Seen = { batches: [], failed: [], left: 0 }
  const stop = followShared(client, SESSION, signedIn, {
    batch: (batch) => seen.batches.push(batch),
    failed: (error) => seen.failed.push(error),
    left: () => seen.left++,
  })
  return { seen, stop }
}

/** Follows for `ms`, then stops; the batches and failures seen. */
async function followFor(ms: number): Promise<Seen> {
  const { seen, stop } = follow()
  await new Promise((resolve) => setTimeout(resolve, ms))
  stop()
  return seen
}

/** Polls `condition` until it holds (at most 10 s). */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (const started = Date.now(); !condition(); await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (Date.now() - started > 10_000) assert.fail(`timed out waiting for ${what}`)
  }
}

describe('tree follow pacing and recovery', { timeout: 30_000 }, () => {
  it('a service answering at once with nothing (draining) is asked again only after a pause', async () => {
    scripted().handle = (_request, response) =>
      sendJson(response, 200, { changes: [], cursor: 'c0', has_more: false })
    const { failed } = await followFor(2_500)
    assert.deepEqual(failed, [])
    assert.ok(scripted().requests.length <= 4, `${scripted().requests.length} tree requests in 2.5 s`)
  })

  it('429 past the per-session bound: asked again after Retry-After, and the tree comes once a slot frees', async () => {
    const docs = folder(1, 'Documents', null)
    let refused = 0
    scripted().handle = (request, response) => {
      if (refused < 2) {
        refused++
        sendJson(response, 429, problemBody(429, 'RATE_LIMITED'), { 'retry-after': '1' })
      } else if (isDownload(request.url ?? '/'))
        sendJson(response, 200, { changes: [upsert(docs)], cursor: 'c1', has_more: false })
      else
        setTimeout(
          () => sendJson(response, 200, { changes: [], cursor: 'c1', has_more: false }),
          5_000,
        ).unref()
    }
    const { batches, failed } = await followFor(3_500)
    assert.deepEqual(failed, [])
    const gaps = scripted()
      .requests.slice(1, 3)
      .map((request, i) => request.at - (scripted().requests[i]?.at ?? 0))
    assert.ok(
      gaps.every((gap) => gap >= 900),
      `asked again after ${gaps.join(', ')} ms`,
    )
    const present = batches.find((batch) => batch.atPresent)
    assert.equal(present?.tree.get(docs.id)?.name, 'Documents')
  })

  it('the session signed in changes while an answer is held: it is neither delivered nor relayed, and nothing more is asked', async () => {
    const docs = folder(1, 'Documents', null)
    const after = folder(2, 'Created after the sign-out', null)
    const held: { answer?: () => void } = {}
    scripted().handle = (request, response) => {
      if (isDownload(request.url ?? '/'))
        sendJson(response, 200, { changes: [upsert(docs)], cursor: 'c1', has_more: false })
      else
        held.answer = () =>
          sendJson(response, 200, { changes: [upsert(after)], cursor: 'c2', has_more: false })
    }
    let signedIn: string | null = SESSION
    const { seen, stop } = follow(() => signedIn)
    try {
      await waitFor(() => held.answer !== undefined, 'the held request')
      signedIn = OTHER_SESSION // another window signed in as someone else
      held.answer?.()
      await waitFor(() => seen.left === 1, 'the follow to leave')
    } finally {
      stop()
      assert.deepEqual(
        seen.batches.map((batch) => [...batch.tree.folders()].map((f) => f.name)),
        [['Documents']],
        'only what came while the session was signed in',
      )
      assert.deepEqual(seen.failed, [])
      assert.equal(seen.left, 1)
      assert.equal(scripted().requests.length, 2, 'no request after the session left')
    }
  })

  it('a follow whose session is no longer signed in sends nothing (a leader never asks with another cookie)', async () => {
    scripted().handle = (_request, response) =>
      sendJson(response, 200, { changes: [], cursor: 'c0', has_more: false })
    const { seen, stop } = follow(() => null)
    await waitFor(() => seen.left === 1, 'the follow to leave')
    stop()
    assert.equal(scripted().requests.length, 0)
    assert.deepEqual(seen.batches, [])
  })

  it('401: the follow stops and says so once; no request after it', async () => {
    scripted().handle = (_request, response) => sendJson(response, 401, problemBody(401, 'UNAUTHORIZED'))
    const { batches, failed } = await followFor(1_500)
    assert.equal(batches.length, 0)
    assert.equal(failed.length, 1)
    assert.equal(scripted().requests.length, 1)
  })
})
