import assert from 'node:assert/strict'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { describe, it } from 'node:test'
import {
  FolderServiceClient,
  FolderServiceError,
  FolderTree,
  type TreeBatch,
  type TreeEntry,
} from 'folder-service/client'
import { followFor, nextBatch } from '../helpers/fixtures/watch-batches.js'
import { folder, TREE_OWNER as OWNER, upsert } from '../helpers/fixtures/tree-entries.js'
import { problemBody, sendJson, useScriptedServer } from '../helpers/apps/scripted-server.js'

/**
 * `client.tree()` against a scripted tree feed (docs/api.md "The folder tree"): a download
 * in pages, parents first; a move announced by previous_folder_id; a subtree removed by
 * its root's entry; a 410 that starts a new download; and the pacing it shares with
 * watch(): a draining service, 410 after 410, a cursor cycle, a download handed over in
 * bounded batches.
 */

const SESSION = '00000000-0000-4000-8000-000000000000'
const ROOT_ID = 'f0000000-0000-4000-8000-000000000000'
const scripted = useScriptedServer()

const client = () => new FolderServiceClient({ baseUrl: scripted().base, sessionId: SESSION })
const treeRequests = () =>
  scripted()
    .requests.filter((r) => r.url.startsWith('/v1/folders/tree'))
    .map((r) => new URL(r.url, 'http://x').searchParams)
const names = (tree: FolderTree, parent: string | null) => tree.children(parent).map((f) => f.name)

type Answer = (request: IncomingMessage, response: ServerResponse) => void
const body = (changes: TreeEntry[], cursor: string, hasMore = false): Answer => {
  return (_request, response) => sendJson(response, 200, { changes, cursor, has_more: hasMore })
}
/** Never answers: a held request with nothing to say (the test ends it). */
const hold: Answer = () => undefined

/** Serves the tree feed from a table of answers by cursor ('' for a new download). */
function serveTree(answers: Record<string, Answer>): void {
  scripted().handle = (request, response) => {
    const cursor = new URL(request.url ?? '/', 'http://x').searchParams.get('cursor') ?? ''
    ;(answers[cursor] ?? ((_q, r) => sendJson(r, 500, problemBody(500, 'INTERNAL'))))(request, response)
  }
}

const A = folder(1, 'A', ROOT_ID)
const B = folder(2, 'B', ROOT_ID)
const A1 = folder(3, 'A1', A.id)
const A2 = folder(4, 'A2', A.id)
const A1a = folder(5, 'A1a', A1.id)
const download = {
  '': body([upsert(A), upsert(B)], 'd1', true),
  d1: body([upsert(A1), upsert(A2)], 'd2', true),
  d2: body([upsert(A1a)], 'p0'),
}

describe('client.tree()', { timeout: 30_000 }, () => {
  it('downloads in pages, then follows: a move by previous_folder_id, a subtree removed', async () => {
    const movedA1 = { ...A1, folder_id: B.id, name: 'A1 moved' }
    serveTree({
      ...download,
      p0: body([upsert(movedA1, A.id)], 'p1'),
      p1: body([{ type: 'remove', id: B.id, folder_id: null }], 'p2'),
      p2: hold,
    })
    const tree = client().tree({ root: ROOT_ID, limit: 2, wait: 5 })

    const first = await nextBatch(tree)
    assert.equal(first.restarted, true)
    assert.equal(first.atPresent, true)
    assert.equal(first.changes.length, 5, 'the three pages of the download')
    assert.deepEqual(names(first.tree, ROOT_ID), ['A', 'B'])
    assert.deepEqual(names(first.tree, A.id), ['A1', 'A2'])
    assert.deepEqual(names(first.tree, A1.id), ['A1a'])
    const asked = treeRequests()
    assert.deepEqual(
      asked.map((q) => [q.get('root'), q.get('cursor'), q.get('limit'), q.get('wait')]),
      [
        [ROOT_ID, null, '2', '0'],
        [ROOT_ID, 'd1', '2', '0'],
        [ROOT_ID, 'd2', '2', '0'],
      ],
    )

    const moved = await nextBatch(tree)
    assert.equal(moved.restarted, false)
    assert.deepEqual(names(moved.tree, A.id), ['A2'], 'no longer under its previous parent')
    assert.deepEqual(names(moved.tree, B.id), ['A1 moved'])
    assert.deepEqual(names(moved.tree, A1.id), ['A1a'], 'its subtree went with it')
    assert.equal(treeRequests().at(-1)?.get('wait'), '5', 'held once at the present')

    const removed = await nextBatch(tree)
    assert.deepEqual(names(removed.tree, ROOT_ID), ['A'])
    assert.equal(removed.tree.size, 2, 'B, A1 and A1a are gone: A and A2 are left')
    assert.equal(removed.tree.get(A1a.id), undefined)
    assert.deepEqual(names(removed.tree, B.id), [])
    await tree.return(undefined)
  })

  it('a 410 starts a new download into a new tree', async () => {
    let downloads = 0
    serveTree({
      ...download,
      '': (request, response) =>
        (downloads++ === 0 ? download[''] : body([upsert(B)], 'q0'))(request, response),
      p0: (_request, response) => sendJson(response, 410, problemBody(410, 'CURSOR_EXPIRED')),
      q0: hold,
    })
    const tree = client().tree({ wait: 5 })
    const first = await nextBatch(tree)
    const again = await nextBatch(tree)
    assert.equal(downloads, 2)
    assert.equal(again.restarted, true)
    assert.notEqual(again.tree, first.tree)
    assert.deepEqual(names(again.tree, ROOT_ID), ['B'])
    assert.equal(treeRequests().at(-1)?.get('cursor'), null, 'downloaded from the start')
    await tree.return(undefined)
  })

  it('a download larger than one batch is handed over in bounded parts', async () => {
    const answers: Record<string, Answer> = {}
    for (let page = 0; page < 25; page++) {
      const entries = Array.from({ length: 1000 }, (_, i) =>
        upsert(folder(page * 1000 + i + 10, `f${i}`, ROOT_ID)),
      )
      answers[page === 0 ? '' : `d${page}`] = body(entries, page === 24 ? 'p0' : `d${page + 1}`, page < 24)
    }
    answers.p0 = hold
    serveTree(answers)
    const tree = client().tree()
    const batches: TreeBatch[] = []
    for (let i = 0; i < 3; i++) batches.push(await nextBatch(tree))
    assert.deepEqual(
      batches.map((b) => [b.changes.length, b.atPresent, b.restarted]),
      [
        [10_000, false, true],
        [10_000, false, false],
        [5_000, true, false],
      ],
    )
    assert.equal(batches[2]?.tree.size, 25_000)
    await tree.return(undefined)
  })
})

describe('client.tree() pacing', { timeout: 30_000 }, () => {
  it('a draining service (empty answers at once) is asked about once a second', async () => {
    scripted().handle = (_request, response) =>
      sendJson(response, 200, { changes: [], cursor: 'p0', has_more: false })
    const { items, error } = await followFor(2_500, (signal) => client().tree({ signal }))
    assert.equal(error, null)
    assert.equal(items.length, 1, 'the (empty) tree, once')
    assert.ok(treeRequests().length <= 4, `${treeRequests().length} requests in 2.5 s`)
  })

  it('410 after 410 downloads again after growing pauses', async () => {
    serveTree({
      ...download,
      p0: (_request, response) => sendJson(response, 410, problemBody(410, 'CURSOR_EXPIRED')),
    })
    const { items, error } = await followFor(2_500, (signal) => client().tree({ signal }))
    assert.equal(error, null)
    const downloads = treeRequests().filter((q) => !q.has('cursor')).length
    assert.ok(downloads >= 2 && downloads <= 4, `${downloads} downloads in 2.5 s`)
    assert.equal(items.length, downloads, 'one batch per download')
  })

  it('cursors that go round in a cycle end it with BAD_RESPONSE', async () => {
    serveTree({ '': body([], 'A', true), A: body([], 'B', true), B: body([], 'A', true) })
    const error = await client()
      .tree()
      .next()
      .catch((e: unknown) => e)
    assert.ok(error instanceof FolderServiceError && error.code === 'BAD_RESPONSE', String(error))
    assert.equal(treeRequests().length, 3)
  })
})

describe('FolderTree', () => {
  it('keeps a child that arrives before its parent; an owner entry reaches every folder', () => {
    const tree = new FolderTree()
    tree.apply([upsert(A1a), upsert(A1), upsert(A)])
    assert.deepEqual(names(tree, A1.id), ['A1a'])
    const renamed = { ...OWNER, username: 'renamed' }
    tree.apply([{ type: 'owner', owner: renamed }])
    assert.deepEqual(
      [...tree.folders()].map((f) => f.owner.username),
      ['renamed', 'renamed', 'renamed'],
    )
    tree.apply([{ type: 'remove', id: A.id, folder_id: ROOT_ID }])
    assert.equal(tree.size, 0)
    assert.deepEqual(names(tree, ROOT_ID), [])
  })
})
