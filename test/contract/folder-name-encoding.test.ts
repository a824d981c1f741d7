import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { openStore } from '../../src/store/open-store.js'
import { allBackends, sqliteBackend, TEST_SETTINGS, throughPooler } from '../helpers/databases/backends.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { listBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { linkTargets } from '../helpers/http/http-asserts.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { ALICE, ALICE_SESSION, usersAndSessions } from '../helpers/fixtures/users.js'

/**
 * Folder names the service cannot read back byte for byte (not UTF-8 text) are refused by
 * the database, whoever writes: PostgreSQL refuses such bytes and NUL on input, SQLite by
 * the triggers of migration 006. A stored name that decoded to U+FFFD sorted apart from the
 * name sealed in the token, and a walk listed that folder on every page, for ever.
 */

const PARENT = uuid('ce100000', 1)
const T0 = Date.parse('2026-05-01T00:00:00.000Z')

/** Bytes no UTF-8 decoder gives back unchanged, and one of each kind of fault. */
const NOT_UTF8 = {
  'a byte that never occurs (FF)': 'ff41',
  'a sequence cut short': '41c3',
  'a lone continuation byte': '8041',
  'an overlong encoding': 'c0af',
  'a surrogate': 'eda080',
  'beyond U+10FFFF': 'f4908080',
  'too many continuation bytes': 'c3a9a9',
  'a NUL': '410042',
}

/** Valid names near the edges: each must be listed, once, as written. */
const VALID = ['a\uFFFD', '\uFFFE', '\uFFFF', 'é', '😀', '\u{10FFFF}', 'b\u{10FFFF}', 'z']

for (const backend of throughPooler(allBackends())) {
  describe(`${backend.name}: folder names that are not UTF-8`, { skip: backend.skip }, () => {
    let target: Awaited<ReturnType<typeof appWithRawSql>>
    let app: FastifyInstance
    let sql: RawSql
    /** The dialect's text made of these hex bytes, as another writer would bind it. */
    const textOf =
      backend.name === 'sqlite'
        ? (hex: string) => `CAST(x'${hex}' AS TEXT)`
        : (hex: string) => `convert_from(decode('${hex}', 'hex'), 'UTF8')`

    before(async () => {
      const at = new Date(T0).toISOString()
      target = await appWithRawSql(
        backend,
        {
          ...usersAndSessions('alice'),
          folders: [
            { id: PARENT, name: 'parent', owner_id: ALICE, folder_id: null, created_at: at, updated_at: at },
          ],
        },
        T0,
      )
      ;({ app, sql } = target)
      for (const [i, name] of VALID.entries()) {
        await insertLiveFolder(sql, { id: uuid('ce200000', i), name, parent: PARENT, owner: ALICE, at: T0 })
      }
    })
    after(() => target.close())

    it('refuses every insert or rename to such a name, and a walk lists every folder once', async () => {
      let n = 0
      for (const [fault, hex] of Object.entries(NOT_UTF8)) {
        await assert.rejects(
          sql.run(
            `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
             VALUES (?, ${textOf(hex)}, ?, ?, ${sql.false}, ${sql.time}, ${sql.time})`,
            uuid('ce300000', n++),
            PARENT,
            ALICE,
            T0,
            T0,
          ),
          backend.name === 'sqlite' ? /valid UTF-8/ : /invalid byte sequence/,
          `insert: ${fault}`,
        )
        await assert.rejects(
          sql.run(`UPDATE folders SET name = ${textOf(hex)} WHERE id = ?`, uuid('ce200000', 0)),
          backend.name === 'sqlite' ? /valid UTF-8/ : /invalid byte sequence/,
          `rename: ${fault}`,
        )
      }
      if (backend.name === 'sqlite') {
        // A BLOB would sort after every text: the STRICT table refuses it.
        await assert.rejects(
          sql.run(`UPDATE folders SET name = x'7a7a' WHERE id = ?`, uuid('ce200000', 0)),
          /cannot store BLOB/,
        )
      }

      const walked: string[] = []
      let url: string | undefined = `/v1/folders?folder_id=${PARENT}&limit=1`
      for (let requests = 0; url !== undefined; requests++) {
        assert.ok(requests <= VALID.length, `the walk ends (so far: ${JSON.stringify(walked)})`)
        const res = await request(app, { url, session: ALICE_SESSION })
        assert.equal(res.statusCode, 200, res.body)
        walked.push(...listBody(res).folders.map((f) => f.name))
        url = linkTargets(res).next
      }
      assert.deepEqual(walked, [...VALID].sort(compareBytes))
    })
  })
}

const compareBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

describe('sqlite: migration 007 and names stored before it', () => {
  it('refuses to migrate a database holding such names, naming the rows', async () => {
    const database = await sqliteBackend.open()
    const raw = await openRawSql(database.url)
    try {
      // Back to the schema before migration 007, as a database of an older version is.
      await raw.run('DROP TRIGGER folders_name_encoding_insert')
      await raw.run('DROP TRIGGER folders_name_encoding_update')
      await raw.run('DROP TABLE folder_name_positions')
      await raw.run("DELETE FROM schema_migrations WHERE name = '007-folder-name-encoding'")
      await raw.run(
        `INSERT INTO users (id, username, is_suspended, created_at, updated_at) VALUES (?, 'u', 0, 0, 0)`,
        ALICE,
      )
      const bad = uuid('ce400000', 1)
      await raw.run(
        `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
         VALUES (?, CAST(x'ff41' AS TEXT), NULL, ?, 0, 0, 0)`,
        bad,
        ALICE,
      )
      await assert.rejects(openStore({ ...TEST_SETTINGS, databaseUrl: database.url }), (error: Error) => {
        assert.match(error.message, /migration 007-folder-name-encoding cannot run/)
        assert.ok(error.message.includes(bad), error.message)
        return true
      })
      await raw.run('UPDATE folders SET name = ? WHERE id = ?', 'fixed', bad)
      const store = await openStore({ ...TEST_SETTINGS, databaseUrl: database.url })
      await store.close()
      await assert.rejects(
        raw.run(`UPDATE folders SET name = CAST(x'ff41' AS TEXT) WHERE id = ?`, bad),
        /valid UTF-8/,
      )
    } finally {
      await raw.close()
      await database.cleanup()
    }
  })
})
