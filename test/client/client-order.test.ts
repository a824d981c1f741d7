import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { AddressInfo } from 'node:net'
import { FolderServiceClient } from 'folder-service/client'
import { validateImport } from '../../src/import/validate-import.js'
import { sqliteBackend } from '../helpers/databases/backends.js'
import { appFor, type TestApp } from '../helpers/apps/test-app.js'
import { nextBatch } from '../helpers/fixtures/watch-batches.js'
import { uuid } from '../helpers/fixtures/ids.js'

/**
 * The typed client's `order` (the built package export, over HTTP): listFolders, walk and
 * watch ask for the order, and a watched listing stays in it as changes arrive.
 */

const OWNER = uuid('c1d00000', 1)
const SESSION = uuid('c1d50000', 1)
const PARENT = uuid('c1d10000', 1)
const T0 = Date.parse('2026-05-01T00:00:00.000Z')
const NAMES = ['file 10', 'File 9', 'file 1', 'ﬁle 2', 'Écho', 'echo 3']
const NATURAL = ['Écho', 'echo 3', 'file 1', 'ﬁle 2', 'File 9', 'file 10']

describe('typed client: order=name_natural', () => {
  let served: TestApp
  let client: FolderServiceClient

  before(async () => {
    served = await appFor(sqliteBackend)
    const iso = new Date(T0).toISOString()
    await served.store.importData(
      validateImport(
        {
          users: [{ id: OWNER, username: 'orderly' }],
          sessions: [{ id: SESSION, user_id: OWNER }],
          folders: [
            { id: PARENT, name: 'parent', folder_id: null, owner_id: OWNER, created_at: iso },
            ...NAMES.map((name, i) => ({
              id: uuid('c1d20000', i),
              name,
              folder_id: PARENT,
              owner_id: OWNER,
              created_at: iso,
            })),
          ],
        },
        T0,
      ),
    )
    await served.app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = served.app.server.address() as AddressInfo
    client = new FolderServiceClient({ baseUrl: `http://127.0.0.1:${port}`, sessionId: SESSION })
  })
  after(() => served.close())

  it('lists and walks in the order asked for', async () => {
    const page = await client.listFolders({ folderId: PARENT, order: 'name_natural', limit: 4 })
    assert.match(page.url, /[?&]order=name_natural(&|$)/)
    assert.deepEqual(
      page.body.folders.map((f) => f.name),
      NATURAL.slice(0, 4),
    )
    const walked: string[] = []
    for await (const folder of client.walk(PARENT, { order: 'name_natural', limit: 4 }))
      walked.push(folder.name)
    assert.deepEqual(walked, NATURAL)
  })

  it('keeps a watched listing in natural order as folders arrive', async () => {
    const controller = new AbortController()
    const watch = client.watch(PARENT, {
      order: 'name_natural',
      limit: 4,
      wait: 1,
      signal: controller.signal,
    })
    try {
      const snapshot = await nextBatch(watch)
      assert.deepEqual(
        snapshot.folders.map((f) => f.name),
        NATURAL,
      )
      await served.store.addFolder({
        id: uuid('c1d30000', 1),
        name: 'FILE 2',
        folder_id: PARENT,
        owner_id: OWNER,
        is_deleted: false,
        created_at: T0,
        updated_at: T0,
      })
      const changed = await nextBatch(watch)
      assert.deepEqual(
        changed.folders.map((f) => f.name),
        ['Écho', 'echo 3', 'file 1', 'FILE 2', 'ﬁle 2', 'File 9', 'file 10'],
      )
    } finally {
      controller.abort()
      await watch.return(undefined)
    }
  })
})
