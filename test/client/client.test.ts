import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { FolderServiceClient, FolderServiceError, type Folder } from 'folder-service/client'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends, sqliteBackend } from '../helpers/databases/backends.js'
import { insertLiveFolder, openRawSql } from '../../harness/raw-sql.js'
import { nextBatch } from '../helpers/fixtures/watch-batches.js'
import { serveBackend, type ServedBackend } from '../helpers/apps/served-backend.js'
import { startService } from '../helpers/processes/cli.js'

/**
 * The typed client (`folder-service/client`, the built package export) against a real
 * `serve` process on each backend: walking a 1,000-child folder gives exactly the offset
 * pages, every problem code the service answers a client with arrives as the typed error,
 * conditional requests reuse a page on 304, and a Retry-After longer than the client's bound
 * is reported rather than waited for.
 */

const id = (kind: string, n: number) => `c1e00000-0000-4000-${kind}-${n.toString(16).padStart(12, '0')}`
const OWNER = id('8000', 1)
const FROZEN = id('8000', 2)
const SESSION = id('9000', 1)
const FROZEN_SESSION = id('9000', 2)
const BIG = id('a000', 0)
const SMALL = id('a000', 1)
const CHILDREN = 1000

/**
 * 1,000 children whose order is not their insertion order: mixed case and accents (code
 * point order), and names shared by several folders (ties broken by created_at, then id).
 */
function dataFile(): unknown {
  const prefixes = ['alpha', 'Beta', 'Émile', 'gamma', 'Zulu', 'beta']
  const children = Array.from({ length: CHILDREN }, (_, i) => ({
    id: id('b000', (i * 7919) % 100_003),
    name: `${prefixes[i % prefixes.length]} ${(i * 37) % 300}`,
    folder_id: BIG,
    owner_id: OWNER,
    created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i % 7)).toISOString(),
  }))
  return {
    users: [
      { id: OWNER, username: 'walker', email: 'w@example.org' },
      { id: FROZEN, username: 'frozen', email: 'f@example.org', is_suspended: true },
    ],
    sessions: [
      { id: SESSION, user_id: OWNER },
      { id: FROZEN_SESSION, user_id: FROZEN },
    ],
    folders: [
      { id: BIG, name: 'Big', folder_id: null, owner_id: OWNER },
      { id: id('a000', 1), name: 'Small', folder_id: null, owner_id: OWNER },
      ...children,
    ],
  }
}

async function rejectsWith(
  promise: Promise<unknown>,
  expected: { status: number; code: string; detail?: RegExp },
): Promise<FolderServiceError> {
  const error = await promise.then(
    () => assert.fail(`expected ${expected.code}`),
    (e: unknown) => e,
  )
  assert.ok(error instanceof FolderServiceError, `a FolderServiceError, got ${String(error)}`)
  assert.equal(error.status, expected.status)
  assert.equal(error.code, expected.code)
  assert.match(error.detail, expected.detail ?? /./)
  assert.match(error.requestId ?? '', /./, 'the request id of the answer')
  return error
}

for (const backend of allBackends()) {
  describe(`client against serve on ${backend.name}`, { skip: backend.skip }, () => {
    let served: ServedBackend
    let client: FolderServiceClient

    before(async () => {
      served = await serveBackend(backend, (store) =>
        store.importData(validateImport(dataFile(), Date.now())),
      )
      client = new FolderServiceClient({ baseUrl: served.service.base, sessionId: SESSION })
    })
    after(() => served?.close())

    it('lists a page with its Link relations and ETag', async () => {
      const page = await client.listFolders({ folderId: BIG, page: 2, limit: 10 })
      assert.equal(page.body.total, CHILDREN)
      assert.equal(page.body.page, 2)
      assert.equal(page.body.limit, 10)
      assert.equal(page.body.folders.length, 10)
      assert.match(page.etag ?? '', /^"[^"]+"$/)
      assert.equal(page.notModified, false)
      for (const rel of ['first', 'prev', 'next', 'last'] as const) {
        const href = page.links[rel]
        assert.ok(href?.startsWith(`${served.service.base}/v1/folders?`), `${rel}: ${href}`)
      }
      assert.equal(new URL(page.links.next ?? '').searchParams.get('page'), '3')
      assert.equal(new URL(page.links.last ?? '').searchParams.get('page'), '100')

      const root = await client.listFolders()
      assert.deepEqual(
        root.body.folders.map((f) => f.name),
        ['Big', 'Small'],
      )
      assert.equal(root.links.next, undefined)
    })

    it('walks a 1,000-child folder: exactly the offset pages, in order, each folder once', async () => {
      const offsetPages: Folder[] = []
      for (let page = 1; page <= CHILDREN / 100; page++) {
        offsetPages.push(...(await client.listFolders({ folderId: BIG, page, limit: 100 })).body.folders)
      }
      assert.equal(offsetPages.length, CHILDREN)
      assert.equal(new Set(offsetPages.map((f) => f.id)).size, CHILDREN)

      for (const limit of [undefined, 37, 100]) {
        const walked: Folder[] = []
        for await (const folder of client.walk(BIG, limit === undefined ? {} : { limit })) walked.push(folder)
        assert.deepEqual(walked, offsetPages, `walk with limit ${limit ?? 'default'}`)
      }
    })

    it('follows next exactly as the service wrote it, page after page', async () => {
      const requested: string[] = []
      const recording = new FolderServiceClient({
        baseUrl: served.service.base,
        sessionId: SESSION,
        fetch: (input, init) => {
          requested.push(input instanceof Request ? input.url : input.toString())
          return fetch(input, init)
        },
      })
      const seen: string[] = []
      for await (const page of recording.pages(BIG, { limit: 100 })) seen.push(page.links.next ?? 'end')
      assert.equal(requested.length, CHILDREN / 100)
      assert.deepEqual(requested.slice(1), seen.slice(0, -1), 'each request is the previous next link')
      assert.equal(seen.at(-1), 'end')
    })

    it('conditional requests: a 304 reuses the page kept from before', async () => {
      const statuses: number[] = []
      const conditional = new FolderServiceClient({
        baseUrl: served.service.base,
        sessionId: SESSION,
        conditionalRequests: true,
        fetch: async (input, init) => {
          const response = await fetch(input, init)
          statuses.push(response.status)
          return response
        },
      })
      const first = await conditional.listFolders({ folderId: BIG, limit: 5 })
      const second = await conditional.listFolders({ folderId: BIG, limit: 5 })
      assert.deepEqual(statuses, [200, 304])
      assert.equal(first.notModified, false)
      assert.equal(second.notModified, true)
      assert.deepEqual(second.body, first.body)
      assert.equal(second.etag, first.etag)
      // Without the option, every request is a full one.
      await client.listFolders({ folderId: BIG, limit: 5 })
      const again = await client.listFolders({ folderId: BIG, limit: 5 })
      assert.equal(again.notModified, false)
    })

    it('every problem code a listing can get arrives as FolderServiceError', async () => {
      const anonymous = new FolderServiceClient({ baseUrl: served.service.base })
      await rejectsWith(anonymous.listFolders(), { status: 401, code: 'UNAUTHORIZED', detail: /session/i })
      const stranger = new FolderServiceClient({ baseUrl: served.service.base, sessionId: randomUUID() })
      await rejectsWith(stranger.listFolders(), { status: 401, code: 'UNAUTHORIZED' })
      const frozen = new FolderServiceClient({ baseUrl: served.service.base, sessionId: FROZEN_SESSION })
      await rejectsWith(frozen.listFolders(), { status: 403, code: 'FROZEN_ACCOUNT' })
      await rejectsWith(client.listFolders({ page: 0 }), {
        status: 400,
        code: 'INVALID_INPUT',
        detail: /page/,
      })
      await rejectsWith(client.listFolders({ folderId: 'not-a-uuid' }), {
        status: 400,
        code: 'INVALID_INPUT',
        detail: /folder_id/,
      })
      await rejectsWith(client.listFolders({ folderId: randomUUID() }), { status: 404, code: 'NOT_FOUND' })
      // A walk reports its first page's error the same way.
      await rejectsWith(frozen.walk(BIG).next(), { status: 403, code: 'FROZEN_ACCOUNT' })
    })

    it(
      'a 503 is retried after its Retry-After and the retry succeeds',
      { skip: backend.name === 'sqlite' ? 'SQLite (WAL) never blocks a reader: no 503 to provoke' : false },
      async () => {
        // A second serve over the same database with a short statement timeout; the test's
        // own connection holds a lock on sessions, so the session lookup times out: 503.
        const impatient = await startService(served.url, { DB_STATEMENT_TIMEOUT_MS: '400' })
        const raw = await openRawSql(served.url)
        try {
          const exchanges: { status: number; sent: number; answered: number }[] = []
          const retrying = new FolderServiceClient({
            baseUrl: impatient.base,
            sessionId: SESSION,
            fetch: async (input, init) => {
              const sent = Date.now()
              const response = await fetch(input, init)
              exchanges.push({ status: response.status, sent, answered: Date.now() })
              return response
            },
          })
          await raw.run('BEGIN')
          await raw.run('LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE')
          setTimeout(() => void raw.run('COMMIT'), 1000)
          const page = await retrying.listFolders({ folderId: BIG, limit: 3 })
          assert.equal(page.body.folders.length, 3)
          assert.deepEqual(
            exchanges.map((e) => e.status),
            [503, 200],
          )
          const [unavailable, retried] = exchanges
          const waited = (retried?.sent ?? 0) - (unavailable?.answered ?? 0)
          // The service says Retry-After: 2 (src/http/problems.ts).
          assert.ok(waited >= 2000 && waited < 3000, `waited ${waited} ms`)
        } finally {
          await raw.close()
          await impatient.stop()
        }
      },
    )

    it('changes(): a raw-SQL write after a page was read arrives from its changesCursor; 410 after an import', async () => {
      const page = await client.listFolders({ folderId: SMALL })
      assert.ok(page.changesCursor !== null, 'the page carries a rel="changes" cursor')
      const raw = await openRawSql(served.url)
      try {
        const child = id('c000', 1)
        await insertLiveFolder(raw, { id: child, name: 'fresh', parent: SMALL, owner: OWNER, at: Date.now() })
        const answer = await client.changes({ folderId: SMALL, cursor: page.changesCursor, wait: 5 })
        assert.deepEqual(answer.changes, [
          { type: 'upsert', folder: (await client.listFolders({ folderId: SMALL })).body.folders[0] },
        ])
        assert.equal(answer.has_more, false)
        const quiet = await client.changes({ folderId: SMALL, cursor: answer.cursor })
        // (a cursor is sealed anew in every answer: its text changes, its position does not)
        assert.deepEqual({ ...quiet, cursor: '' }, { changes: [], cursor: '', has_more: false })

        // A bulk import resets the feeds of the owners it touches.
        await served.store.importData(
          validateImport({ folders: [{ name: 'imported', folder_id: null, owner_id: OWNER }] }, Date.now()),
        )
        await rejectsWith(client.changes({ folderId: SMALL, cursor: answer.cursor }), {
          status: 410,
          code: 'CURSOR_EXPIRED',
        })
        await raw.run('UPDATE folders SET is_deleted = ' + raw.true + ' WHERE id = ?', child)
      } finally {
        await raw.close()
      }
    })

    it('watch(): the snapshot is the walked listing; raw-SQL insert, rename and delete arrive live; 410 re-lists', async () => {
      const walked = async (folderId: string) => {
        const all: Folder[] = []
        for await (const folder of client.walk(folderId, { limit: 100 })) all.push(folder)
        return all
      }
      const controller = new AbortController()
      const big = client.watch(BIG, { limit: 100, signal: controller.signal })
      const snapshot = await nextBatch(big)
      assert.equal(snapshot.kind, 'snapshot')
      assert.equal(snapshot.folders.length, CHILDREN)
      assert.deepEqual(snapshot.folders, await walked(BIG), 'all pages, sorted as the listing')

      const raw = await openRawSql(served.url)
      try {
        const child = id('c000', 2)
        const insert = insertLiveFolder(raw, {
          id: child,
          name: 'AAA first',
          parent: BIG,
          owner: OWNER,
          at: Date.now(),
        })
        const inserted = await nextBatch(big)
        await insert
        assert.equal(inserted.kind, 'changes')
        assert.deepEqual(inserted.folders, await walked(BIG))
        assert.equal(inserted.folders[0]?.name, 'AAA first')

        await raw.run(
          'UPDATE folders SET name = ? WHERE id = ?',
          '𝔷 renamed (astral: after every BMP name)',
          child,
        )
        const renamed = await nextBatch(big)
        assert.deepEqual(renamed.folders, await walked(BIG))
        assert.equal(renamed.folders.at(-1)?.name, '𝔷 renamed (astral: after every BMP name)')

        await raw.run('UPDATE folders SET is_deleted = ' + raw.true + ' WHERE id = ?', child)
        const deleted = await nextBatch(big)
        assert.deepEqual(deleted.kind === 'changes' ? deleted.changes : [], [{ type: 'remove', id: child }])
        assert.deepEqual(deleted.folders, await walked(BIG))

        await served.store.importData(
          validateImport({ folders: [{ name: 'imported', folder_id: BIG, owner_id: OWNER }] }, Date.now()),
        )
        const relisted = await nextBatch(big)
        assert.equal(relisted.kind, 'snapshot', 'after the 410 the watch listed again')
        assert.deepEqual(relisted.folders, await walked(BIG))
        assert.equal(relisted.folders.length, CHILDREN + 1)
      } finally {
        controller.abort()
        await raw.close()
      }
      await assert.rejects(big.next(), (e: unknown) => e instanceof DOMException && e.name === 'AbortError')
    })

    it('an AbortSignal cancels a listing and a walk', async () => {
      await assert.rejects(
        client.listFolders({ folderId: BIG }, { signal: AbortSignal.abort() }),
        (e: unknown) => e instanceof DOMException && e.name === 'AbortError',
      )
      const controller = new AbortController()
      let pages = 0
      await assert.rejects(
        (async () => {
          for await (const page of client.pages(BIG, { limit: 10, signal: controller.signal })) {
            pages++
            if (pages === 2) controller.abort()
            assert.ok(page.body.folders.length > 0)
          }
        })(),
        (e: unknown) => e instanceof DOMException && e.name === 'AbortError',
      )
      assert.equal(pages, 2)
    })
  })
}

describe('client against serve with rate limiting', () => {
  let served: ServedBackend
  before(async () => {
    served = await serveBackend(
      sqliteBackend, // the limiter lives in the process, whatever the backend
      (store) => store.importData(validateImport(dataFile(), Date.now())),
      { RATE_LIMIT_PER_MINUTE: '2' },
    )
  })
  after(() => served?.close())

  it('429 arrives as RATE_LIMITED with the Retry-After; one beyond maxRetryDelayMs is not waited for', async () => {
    const client = new FolderServiceClient({
      baseUrl: served.service.base,
      sessionId: SESSION,
      maxRetries: 2,
      maxRetryDelayMs: 1000,
    })
    await client.listFolders()
    await client.listFolders()
    const started = Date.now()
    const error = await rejectsWith(client.listFolders(), { status: 429, code: 'RATE_LIMITED' })
    assert.ok(Date.now() - started < 1000, 'failed at once rather than waiting out the window')
    assert.ok((error.retryAfterMs ?? 0) > 1000, `Retry-After ${error.retryAfterMs} ms`)
  })
})
