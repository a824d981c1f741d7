import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MissingCursorKeyError } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { problemBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'

/**
 * The cursor key row deleted by hand: every backend reports the same clear error, naming the
 * row and what to do, instead of failing somewhere inside the sealer; requests get the
 * contract's 500 problem rather than a crash.
 */

const USER = uuid('ce000000', 1)
const SESSION = uuid('ce500000', 1)
const NOW = Date.parse('2026-05-01T00:00:00.000Z')
const doc = {
  users: [{ id: USER, username: 'keyless' }],
  sessions: [{ id: SESSION, user_id: USER }],
  folders: Array.from({ length: 3 }, (_, i) => ({ id: uuid('ce100000', i), name: `f${i}`, owner_id: USER })),
}

for (const backend of allBackends()) {
  describe(`missing cursor key (${backend.name})`, { skip: backend.skip }, () => {
    it('cursorKey() rejects with MissingCursorKeyError; a listing that needs it is a 500 problem', async () => {
      const fixture = await appWithRawSql(backend, doc, NOW)
      try {
        await fixture.sql.run("DELETE FROM service_keys WHERE name = 'cursor'")
        await assert.rejects(fixture.store.cursorKey(), (error: unknown) => {
          assert.ok(error instanceof MissingCursorKeyError, String(error))
          assert.match(error.message, /service_keys/)
          return true
        })
        // limit=1 of 3: the answer has a next link, whose cursor needs the key.
        const response = await request(fixture.app, { session: SESSION, query: 'limit=1' })
        assert.equal(response.statusCode, 500)
        assert.equal(problemBody(response).code, 'INTERNAL')
      } finally {
        await fixture.close()
      }
    })
  })
}
