import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { postgresBackend, sqliteBackend } from '../helpers/databases/backends.js'
import { seededApp } from '../helpers/fixtures/contract-data.js'
import type { TestApp } from '../helpers/apps/test-app.js'
import { assertSameAnswers, PARITY_SESSIONS, parityRequests } from '../helpers/http/parity.js'

/**
 * The same data on both backends gives the same bytes (issue: PostgreSQL backend). Both
 * apps load the one fixture data set; every request goes to both (helpers/http/parity.ts).
 */

describe('sqlite and postgres answer byte for byte alike', { skip: postgresBackend.skip }, () => {
  let sqlite: TestApp
  let postgres: TestApp

  before(async () => {
    sqlite = await seededApp(sqliteBackend)
    postgres = await seededApp(postgresBackend)
  })
  after(async () => {
    await sqlite?.close()
    await postgres?.close()
  })

  for (const [session, minimum] of PARITY_SESSIONS) {
    it(`for ${parityRequests().length} requests of session ${session.id}`, async () => {
      const compared = await assertSameAnswers(sqlite, postgres, session.id)
      assert.ok(compared >= minimum, `only ${compared} listings compared`)
    })
  }
})
