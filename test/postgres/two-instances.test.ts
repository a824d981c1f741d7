import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { openStore } from '../../src/store/open-store.js'
import type { Store } from '../../src/store/store.js'
import { postgresBackend, TEST_SETTINGS } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { appOver, listBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'

/**
 * How users scale out: stateless instances, each with its own listing cache, in front of one
 * PostgreSQL database. Instance A writes (through its own Store connection, or a console
 * writes raw SQL); instance B, whose cache already holds the listing, must show the write in
 * its very next answer. Nothing but the generation in the database connects the two.
 */

const OWNER = uuid('7a000000', 1)
const SESSION = uuid('7a000000', 2)
const ROOT_NAMES = ['alpha', 'bravo', 'charlie', 'delta']
const rootId = (i: number) => uuid('7a100000', i)
const T0 = Date.parse('2026-06-01T08:00:00.000Z')

describe('postgres: two instances on one database', { skip: postgresBackend.skip }, () => {
  let opened: Awaited<ReturnType<typeof postgresBackend.open>>
  let storeB: Store
  let appA: FastifyInstance
  let appB: FastifyInstance
  let sql: RawSql

  const names = async (app: FastifyInstance, parent: string | null = null) => {
    const res = await request(app, {
      session: SESSION,
      query: parent === null ? 'limit=100' : `folder_id=${parent}&limit=100`,
    })
    assert.equal(res.statusCode, 200, res.body)
    return listBody(res).folders.map((f) => f.name)
  }

  before(async () => {
    opened = await postgresBackend.open()
    await seedOwner(opened.store, {
      owner: OWNER,
      username: 'scaled',
      sessions: [SESSION],
      folders: ROOT_NAMES.map((name, i) => ({ id: rootId(i), name })),
      at: T0,
    })
    storeB = await openStore({ ...TEST_SETTINGS, databaseUrl: opened.url })
    appA = await appOver(opened.store)
    appB = await appOver(storeB)
    sql = await openRawSql(opened.url)
  })
  after(async () => {
    await Promise.all([appA.close(), appB.close(), sql.close()])
    await storeB.close()
    await opened.cleanup()
  })

  it("shows a write through instance A's connection in instance B's next answer", async () => {
    assert.deepEqual(await names(appB), ROOT_NAMES)
    assert.deepEqual(await names(appB), ROOT_NAMES)
    assert.equal(await opened.store.markFolderDeleted(rootId(1), T0 + 1000), true)
    assert.deepEqual(await names(appB), ['alpha', 'charlie', 'delta'])
    assert.deepEqual(await names(appA), ['alpha', 'charlie', 'delta'])
  })

  it('shows raw SQL writes in both instances, whichever listed last', async () => {
    for (let round = 0; round < 20; round++) {
      const expected = await names(appA)
      assert.deepEqual(await names(appB), expected)
      const id = uuid('7a200000', round)
      const name = `r${String(round).padStart(2, '0')}`
      await insertLiveFolder(sql, { id, name, parent: null, owner: OWNER, at: T0 })
      const reader = round % 2 === 0 ? appB : appA
      assert.ok((await names(reader)).includes(name), `round ${round}: the insert is missing`)
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', `${name}-renamed`, id)
      const other = reader === appA ? appB : appA
      const after = await names(other)
      assert.ok(after.includes(`${name}-renamed`) && !after.includes(name), `round ${round}: stale rename`)
    }
  })

  it("shows a username change in the owner object on both instances' cached pages", async () => {
    const owner = async (app: FastifyInstance) => {
      const res = await request(app, { session: SESSION, query: 'limit=1' })
      return listBody(res).folders[0]?.owner.username
    }
    assert.equal(await owner(appA), 'scaled')
    assert.equal(await owner(appB), 'scaled')
    await sql.run('UPDATE users SET username = ? WHERE id = ?', 'renamed-owner', OWNER)
    assert.equal(await owner(appA), 'renamed-owner')
    assert.equal(await owner(appB), 'renamed-owner')
  })
})
