import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends } from '../helpers/databases/backends.js'
import { openRawSql } from '../../harness/raw-sql.js'
import { startService } from '../helpers/processes/cli.js'

/**
 * `serve` keeps the change log to CHANGE_RETENTION_DAYS: at start it deletes log rows older
 * than that, and keeps newer ones and every owner's current generation.
 */

const DAY_MS = 86_400_000

for (const backend of allBackends()) {
  describe(`${backend.name}: serve prunes the change log`, { skip: backend.skip }, () => {
    it('deletes rows older than CHANGE_RETENTION_DAYS at start, keeps the rest', async () => {
      const opened = await backend.open()
      const sql = await openRawSql(opened.url)
      try {
        const owner = randomUUID()
        const folder = randomUUID()
        await opened.store.importData(
          validateImport(
            {
              users: [{ id: owner, username: 'pruned' }],
              folders: [{ id: folder, name: 'kept', owner_id: owner }],
            },
            Date.now(),
          ),
        )
        // Two writes by raw SQL; the older one's log row is then aged past the retention.
        await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'renamed once', folder)
        await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'renamed twice', folder)
        await sql.run(
          `UPDATE folder_changes SET generation = ? WHERE owner_id = ? AND generation =
             (SELECT min(generation) FROM folder_changes WHERE owner_id = ? AND kind = 'folder')`,
          (Date.now() - 3 * DAY_MS) * 1000,
          owner,
          owner,
        )
        const rows = () => sql.value('SELECT count(*) FROM folder_changes WHERE owner_id = ?', owner)
        const before = await rows()
        const service = await startService(opened.url, { CHANGE_RETENTION_DAYS: '2' })
        try {
          let after = before
          for (let i = 0; i < 50 && after === before; i++) {
            await new Promise((resolve) => setTimeout(resolve, 100))
            after = await rows()
          }
          assert.equal(
            after,
            before - 1,
            'the aged row is gone; the current generation and the recent rows stay',
          )
        } finally {
          await service.stop()
        }
      } finally {
        await sql.close()
        await opened.cleanup()
      }
    })
  })
}
