import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { changesOf, followedFolder, insertChild, seedFollowed } from '../helpers/fixtures/followed-folder.js'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { startService, type Service } from '../helpers/processes/cli.js'

/**
 * The changes feed across processes: two `serve` processes on one database. A cursor taken
 * on one is followed on the other; a request held on one is answered within a second of a
 * write committed by another connection; and on SIGTERM a held request is answered (no
 * changes, the same cursor) before the process exits.
 */

const FOLLOWED = followedFolder('7c000000')

for (const backend of allBackends()) {
  describe(`${backend.name}: the changes feed across two service processes`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let a: Service
    let b: Service
    let sql: RawSql

    const changes = (service: Service, query: string) => changesOf(FOLLOWED, service.base, query)
    const insert = (name: string) => insertChild(sql, FOLLOWED, name)

    before(async () => {
      opened = await backend.open()
      await seedFollowed(opened.store, FOLLOWED)
      ;[a, b] = await Promise.all([startService(opened.url), startService(opened.url)])
      sql = await openRawSql(opened.url)
    })
    after(async () => {
      await sql?.close()
      await Promise.all([a?.stop(), b?.stop()])
      await opened?.cleanup()
    })

    it('follows on B a cursor taken on A', async () => {
      const { cursor } = await changes(a, '')
      const id = await insert('seen on B')
      const answer = await changes(b, `cursor=${cursor}`)
      assert.deepEqual(
        answer.changes.map((c) => c.folder?.id),
        [id],
      )
      // and back on A from B's cursor
      const id2 = await insert('seen on A')
      assert.deepEqual(
        (await changes(a, `cursor=${answer.cursor}`)).changes.map((c) => c.folder?.id),
        [id2],
      )
    })

    it('wakes a request held on A within a second of a commit by another connection, and one on B', async () => {
      const { cursor } = await changes(b, '')
      const heldA = changes(a, `cursor=${cursor}&wait=20`)
      const heldB = changes(b, `cursor=${cursor}&wait=20`)
      await new Promise((resolve) => setTimeout(resolve, 500))
      const committed = Date.now()
      const id = await insert('wakes both')
      for (const held of [heldA, heldB]) {
        const answer = await held
        assert.ok(Date.now() - committed < 1000, `answered ${Date.now() - committed} ms after the commit`)
        assert.deepEqual(
          answer.changes.map((c) => c.folder?.id),
          [id],
        )
      }
    })

    it('answers a held request on SIGTERM before exiting', async () => {
      const { cursor } = await changes(a, '')
      const held = changes(a, `cursor=${cursor}&wait=30`)
      await new Promise((resolve) => setTimeout(resolve, 300))
      const stopping = a.stop()
      assert.deepEqual(await held, { changes: [], cursor, has_more: false })
      assert.equal((await stopping).code, 0)
    })
  })
}
