import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import type { ChangePosition } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { backUp } from '../helpers/databases/backup.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { listBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import type { RawSql } from '../../harness/raw-sql.js'
import { ALICE } from '../helpers/fixtures/users.js'

/**
 * A backup restored into the live database while the service runs: the listing generations
 * go back to their old values, and a generation drawn from a counter kept with the data
 * would be drawn again, so a cached answer of the lost future would be served for new data.
 * Generations follow the clock: after the restore, the next write's generation is new, and a
 * change feed position from the lost future is expired.
 */

const SESSION = uuid('a7000000', 2)
const FOLDER = uuid('a7100000', 1)
const T0 = Date.parse('2026-05-01T10:00:00.000Z')

for (const backend of allBackends()) {
  describe(`${backend.name}: a restored backup`, { skip: backend.skip }, () => {
    let target: Awaited<ReturnType<typeof appWithRawSql>>
    let app: FastifyInstance
    let sql: RawSql
    const scratch = mkdtempSync(join(tmpdir(), 'folder-service-backup-'))

    const names = async () => {
      const res = await request(app, { session: SESSION, query: 'limit=100' })
      assert.equal(res.statusCode, 200, res.body)
      return listBody(res).folders.map((f) => f.name)
    }
    const rename = async (name: string) => {
      // Writes a clock tick apart, as a restore is in any real deployment.
      await sleep(3)
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', name, FOLDER)
    }

    before(async () => {
      target = await appWithRawSql(
        backend,
        {
          users: [{ id: ALICE, username: 'alice' }],
          sessions: [{ id: SESSION, user_id: ALICE }],
          folders: [{ id: FOLDER, name: 'start', owner_id: ALICE }],
        },
        T0,
      )
      ;({ app, sql } = target)
    })
    after(async () => {
      await target.close()
      rmSync(scratch, { recursive: true, force: true })
    })

    it('never serves a cached answer of the lost future, and expires its feed positions', async () => {
      assert.deepEqual(await names(), ['start'])
      const backup = await backUp(target.url, join(scratch, 'backup.db'))
      await rename('x')
      assert.deepEqual(await names(), ['x'])
      assert.deepEqual(await names(), ['x'], 'now cached under the generation of x')
      const lost = await target.store.findSessionUser(SESSION, Date.now())
      const lostPosition: ChangePosition = { generation: lost?.generation ?? 0, row: 0 }

      await backup.restore()
      assert.deepEqual(await names(), ['start'], 'the restored data, under its restored generation')
      await rename('y')
      assert.deepEqual(await names(), ['y'])

      const feed = await target.store.readChanges({
        ownerId: ALICE,
        parentId: null,
        after: lostPosition,
        limit: 10,
      })
      assert.deepEqual(feed, { outcome: 'expired' })
    })
  })
}
