import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { followChanges } from '../../src/browser/live-follow.js'
import { FolderServiceClient } from '../../src/client/index.js'
import { problemBody, sendJson, useScriptedServer } from '../helpers/apps/scripted-server.js'

/**
 * The folder browser's live follow (src/browser/live-follow.ts) at the module level, in
 * Node, against services that would turn it into a request flood: one answering at once
 * with nothing (draining), one answering 410 to every cursor (reset over and over). The
 * page around it is tested in a real Chromium in folder-browser.test.ts.
 */

const SESSION = '00000000-0000-4000-8000-000000000000'
const PARENT = 'f0000000-0000-4000-8000-000000000000'
const scripted = useScriptedServer()

/** Follows for `ms`, then stops; how often the page would have been listed again. */
async function followFor(ms: number): Promise<{ changed: number; failed: unknown[] }> {
  const client = new FolderServiceClient({ baseUrl: scripted().base, sessionId: SESSION })
  let changed = 0
  const failed: unknown[] = []
  const stop = followChanges(client, PARENT, 'c0', {
    changed: () => {
      changed++
      return Promise.resolve()
    },
    failed: (error) => failed.push(error),
  })
  await new Promise((resolve) => setTimeout(resolve, ms))
  stop()
  return { changed, failed }
}

describe('live follow pacing', { timeout: 30_000 }, () => {
  it('a service answering at once with nothing (draining) is asked again only after a pause', async () => {
    scripted().handle = (_request, response) =>
      sendJson(response, 200, { changes: [], cursor: 'c0', has_more: false })
    const { changed, failed } = await followFor(2_500)
    assert.deepEqual(failed, [])
    assert.equal(changed, 0)
    assert.ok(scripted().requests.length <= 4, `${scripted().requests.length} changes requests in 2.5 s`)
  })

  it('410 after 410: the page is listed again after growing pauses', async () => {
    scripted().handle = (request, response) => {
      if (new URL(request.url ?? '/', 'http://x').searchParams.has('cursor'))
        sendJson(response, 410, problemBody(410, 'CURSOR_EXPIRED'))
      else sendJson(response, 200, { changes: [], cursor: 'fresh', has_more: false })
    }
    const { changed, failed } = await followFor(2_500)
    assert.deepEqual(failed, [])
    assert.ok(changed >= 2 && changed <= 4, `listed again ${changed} times in 2.5 s`)
  })
})
