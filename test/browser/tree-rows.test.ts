import assert from 'node:assert/strict'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { describe, it } from 'node:test'
import { keyAction, trailOf, visibleRows, type TreeRow } from '../../src/browser/tree-rows.js'
import {
  compareFolders,
  FolderServiceClient,
  FolderTree,
  type TreeBatch,
  type TreeEntry,
} from '../../src/client/index.js'
import { nextBatch } from '../helpers/fixtures/watch-batches.js'
import { fid, folder, upsert } from '../helpers/fixtures/tree-entries.js'
import { problemBody, sendJson, useScriptedServer } from '../helpers/apps/scripted-server.js'

/**
 * The folder browser's tree pane at the module level, in Node (src/browser/tree-rows.ts):
 * the rows shown for a tree the client downloaded and followed from a scripted tree feed,
 * only expanded folders' children among them, a move and a remove shown in the next rows,
 * the keys of the WAI-ARIA tree pattern, and 10,000 folders costing only what is expanded.
 * The page around it is tested in a real Chromium in folder-browser.test.ts.
 */

const SESSION = '00000000-0000-4000-8000-000000000000'
const scripted = useScriptedServer()

type Answer = (request: IncomingMessage, response: ServerResponse) => void
const body =
  (changes: TreeEntry[], cursor: string): Answer =>
  (_request, response) =>
    sendJson(response, 200, { changes, cursor, has_more: false })

/** Serves the tree feed from a table of answers by cursor ('' for a new download); others are held. */
function serveTree(answers: Record<string, Answer>): void {
  scripted().handle = (request, response) => {
    const url = new URL(request.url ?? '/', 'http://x')
    if (url.pathname !== '/v1/folders/tree') return sendJson(response, 404, problemBody(404, 'NOT_FOUND'))
    const answer = answers[url.searchParams.get('cursor') ?? '']
    answer?.(request, response)
  }
}

/** What a reader of the tree sees: indented names, with ▸ (collapsed) or ▾ (expanded). */
const shown = (rows: readonly TreeRow[]) =>
  rows.map(
    (row) =>
      `${'  '.repeat(row.level - 1)}${row.expanded === null ? '' : row.expanded ? '▾ ' : '▸ '}${row.folder.name}`,
  )

const Zeta = folder(1, 'Zeta', null)
const Alpha = folder(2, 'Alpha', null)
const Beta = folder(3, 'Beta', Alpha.id)
const Alpha1 = folder(4, 'Alpha 1', Alpha.id)
const Deep = folder(5, 'Deep', Beta.id)

describe('tree pane rows', { timeout: 30_000 }, () => {
  it("shows the root's folders, expanded folders' children, and each change in the next rows", async () => {
    const movedBeta = { ...Beta, folder_id: Zeta.id, name: 'Beta moved' }
    serveTree({
      '': body([upsert(Zeta), upsert(Alpha), upsert(Beta), upsert(Alpha1), upsert(Deep)], 'p1'),
      p1: body([upsert(movedBeta, Alpha.id), { type: 'remove', id: Alpha1.id, folder_id: Alpha.id }], 'p2'),
      p2: () => undefined,
    })
    const controller = new AbortController()
    const client = new FolderServiceClient({ baseUrl: scripted().base, sessionId: SESSION })
    const batches: AsyncGenerator<TreeBatch> = client.tree({ signal: controller.signal, wait: 30 })
    try {
      const { tree } = await nextBatch(batches)
      const expanded = new Set<string>()
      assert.deepEqual(shown(visibleRows(tree, expanded, compareFolders)), ['▸ Alpha', 'Zeta'])
      expanded.add(Alpha.id)
      assert.deepEqual(shown(visibleRows(tree, expanded, compareFolders)), [
        '▾ Alpha',
        '  Alpha 1',
        '  ▸ Beta',
        'Zeta',
      ])
      expanded.add(Beta.id)
      const rows = visibleRows(tree, expanded, compareFolders)
      assert.deepEqual(shown(rows), ['▾ Alpha', '  Alpha 1', '  ▾ Beta', '    Deep', 'Zeta'])
      assert.deepEqual(
        rows.map((row) => [row.position, row.siblings]),
        [
          [1, 2],
          [1, 2],
          [2, 2],
          [1, 1],
          [2, 2],
        ],
      )
      assert.deepEqual(trailOf(tree, Deep.id), [Alpha.id, Beta.id, Deep.id])

      await nextBatch(batches)
      expanded.add(Zeta.id)
      assert.deepEqual(shown(visibleRows(tree, expanded, compareFolders)), [
        'Alpha',
        '▾ Zeta',
        '  ▾ Beta moved',
        '    Deep',
      ])
      assert.deepEqual(trailOf(tree, Deep.id), [Zeta.id, Beta.id, Deep.id])
      assert.equal(trailOf(tree, Alpha1.id), null)
    } finally {
      controller.abort()
      await batches.return(undefined).catch(() => undefined)
    }
  })

  it('follows the keys of the WAI-ARIA tree pattern', () => {
    const tree = new FolderTree()
    tree.apply([upsert(Zeta), upsert(Alpha), upsert(Beta), upsert(Alpha1), upsert(Deep)])
    const rows = visibleRows(tree, new Set([Alpha.id]), compareFolders)
    // Alpha (expanded), Alpha 1, Beta (collapsed), Zeta
    assert.deepEqual(keyAction(rows, 0, 'ArrowDown'), { focus: 1 })
    assert.deepEqual(keyAction(rows, 3, 'ArrowDown'), null)
    assert.deepEqual(keyAction(rows, 1, 'ArrowUp'), { focus: 0 })
    assert.deepEqual(keyAction(rows, 0, 'ArrowUp'), null)
    assert.deepEqual(keyAction(rows, 2, 'Home'), { focus: 0 })
    assert.deepEqual(keyAction(rows, 0, 'End'), { focus: 3 })
    assert.deepEqual(keyAction(rows, 0, 'ArrowRight'), { focus: 1 }, 'expanded: to the first child')
    assert.deepEqual(keyAction(rows, 2, 'ArrowRight'), { expand: Beta.id }, 'collapsed: expands')
    assert.deepEqual(keyAction(rows, 1, 'ArrowRight'), null, 'a leaf: nothing')
    assert.deepEqual(keyAction(rows, 0, 'ArrowLeft'), { collapse: Alpha.id }, 'expanded: collapses')
    assert.deepEqual(keyAction(rows, 2, 'ArrowLeft'), { focus: 0 }, 'a child: to its parent')
    assert.deepEqual(keyAction(rows, 3, 'ArrowLeft'), null, "a root's folder, collapsed: nothing")
    assert.deepEqual(keyAction(rows, 1, 'Enter'), { open: Alpha1.id })
    assert.deepEqual(keyAction(rows, 1, 'a'), null)
  })

  it('10,000 folders: only the expanded ones have rows, and building them is quick', () => {
    const tree = new FolderTree()
    const entries: TreeEntry[] = []
    for (let i = 0; i < 100; i++) {
      const top = folder(1 + i * 101, `top ${i}`, null)
      entries.push(upsert(top))
      for (let j = 1; j <= 99; j++) entries.push(upsert(folder(1 + i * 101 + j, `child ${j}`, top.id)))
    }
    tree.apply(entries)
    assert.equal(tree.size, 10_000)
    const started = performance.now()
    const collapsed = visibleRows(tree, new Set(), compareFolders)
    assert.equal(collapsed.length, 100)
    const one = visibleRows(tree, new Set([fid(1 + 5 * 101)]), compareFolders)
    assert.equal(one.length, 199)
    assert.equal(one.filter((row) => row.level === 2).length, 99)
    // Generous for a loaded machine: a pane redrawn on every change must not take seconds.
    assert.ok(performance.now() - started < 1_000, `${performance.now() - started} ms`)
  })
})
