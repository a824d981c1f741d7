import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ImportError } from '../../src/store/store.js'
import { openStore } from '../../src/store/open-store.js'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends, TEST_SETTINGS, throughPooler } from '../helpers/databases/backends.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'

/**
 * Every listing repeats its owner's username and avatar_url in each folder, so both are
 * bounded (username 1 to 255 characters without control characters, avatar_url at most
 * 2,048): by the database itself (migration 005), whoever writes, and by the import and the
 * CLI with the record named. A database that already holds rows beyond the bounds is not
 * silently changed: the migration refuses to run and names them.
 */

const T0 = Date.parse('2026-02-01T00:00:00.000Z')
const OK_ID = uuid('b0000000', 1)

for (const backend of throughPooler(allBackends())) {
  describe(`${backend.name}: bounds of username and avatar_url`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let sql: RawSql
    let n = 10
    const insertUser = (username: string, avatar: string | null = null) =>
      sql.run(
        `INSERT INTO users (id, username, email, avatar_url, password_hash, is_suspended, created_at, updated_at)
         VALUES (?, ?, NULL, ?, NULL, ${sql.false}, ${sql.time}, ${sql.time})`,
        uuid('b0000000', n++),
        username,
        avatar,
        T0,
        T0,
      )

    before(async () => {
      opened = await backend.open()
      sql = await openRawSql(opened.url)
      await sql.run(
        `INSERT INTO users (id, username, email, avatar_url, password_hash, is_suspended, created_at, updated_at)
         VALUES (?, 'fine', NULL, NULL, NULL, ${sql.false}, ${sql.time}, ${sql.time})`,
        OK_ID,
        T0,
        T0,
      )
    })
    after(async () => {
      await sql.close()
      await opened.cleanup()
    })

    it('accepts the bounds themselves: 255 characters (astral ones too) and a 2,048-character avatar', async () => {
      await insertUser('😀'.repeat(255), `https://x/${'a'.repeat(2038)}`)
      await insertUser('u'.repeat(255))
    })

    it('refuses, whoever writes, a longer username, a control character, an empty one or a longer avatar', async () => {
      for (const [username, avatar] of [
        ['u'.repeat(256), null],
        ['😀'.repeat(256), null],
        ['a\u001b[31mred', null],
        ['tab\there', null],
        ['del\u007f', null],
        ['', null],
        ['ok-name', `https://x/${'a'.repeat(2039)}`],
      ] as const) {
        await assert.rejects(
          insertUser(username, avatar),
          `refused: ${JSON.stringify(username.slice(0, 20))}`,
        )
      }
      await assert.rejects(
        sql.run('UPDATE users SET username = ? WHERE id = ?', 'x'.repeat(1_000_000), OK_ID),
      )
      await assert.rejects(sql.run('UPDATE users SET avatar_url = ? WHERE id = ?', 'y'.repeat(5000), OK_ID))
    })

    it('refuses them in the import, naming the record, writing nothing', async () => {
      for (const [user, message] of [
        [{ username: 'u'.repeat(256) }, 'users[1]: username: longer than 255 characters'],
        [{ username: 'esc\u001b' }, 'users[1]: username: contains a control character'],
        [
          { username: 'x', avatar_url: 'a'.repeat(2049) },
          'users[1]: avatar_url: longer than 2048 characters',
        ],
      ] as const) {
        const before = await opened.store.countUsers()
        assert.throws(
          () => validateImport({ users: [{ username: `fine-${n++}` }, user] }, T0),
          (error: unknown) => error instanceof ImportError && error.message === message,
        )
        assert.equal(await opened.store.countUsers(), before)
      }
      // 255 astral characters are 510 UTF-16 units: still within the bound.
      const data = validateImport({ users: [{ username: '🙂'.repeat(255) }] }, T0)
      assert.equal((await opened.store.importData(data)).users, 1)
    })

    it('refuses to migrate a database holding rows beyond the bounds, naming them', async () => {
      const database = await backend.open()
      const raw = await openRawSql(database.url)
      try {
        // Back to the schema before migration 005, as a database of an older version is.
        if (backend.name === 'sqlite') {
          await raw.run('DROP TRIGGER users_bounds_insert')
          await raw.run('DROP TRIGGER users_bounds_update')
        } else {
          await raw.run('ALTER TABLE users DROP CONSTRAINT users_bounds')
        }
        await raw.run("DELETE FROM schema_migrations WHERE name = '005-user-bounds'")
        const bad = uuid('b1000000', 1)
        await raw.run(
          `INSERT INTO users (id, username, email, avatar_url, password_hash, is_suspended, created_at, updated_at)
           VALUES (?, ?, NULL, NULL, NULL, ${raw.false}, ${raw.time}, ${raw.time})`,
          bad,
          'z'.repeat(300),
          T0,
          T0,
        )
        await assert.rejects(
          openStore({ ...TEST_SETTINGS, ...backend.settings, databaseUrl: database.url }),
          (error: Error) => {
            assert.match(error.message, /migration 005-user-bounds cannot run/)
            assert.ok(error.message.includes(bad), error.message)
            return true
          },
        )
        // Fixed, it runs.
        await raw.run('UPDATE users SET username = ? WHERE id = ?', 'z', bad)
        const store = await openStore({ ...TEST_SETTINGS, ...backend.settings, databaseUrl: database.url })
        await store.close()
        await assert.rejects(raw.run('UPDATE users SET username = ? WHERE id = ?', 'z'.repeat(300), bad))
      } finally {
        await raw.close()
        await database.cleanup()
      }
    })
  })
}
