import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { sqliteBackend } from '../helpers/databases/backends.js'
import { uuid } from '../helpers/fixtures/ids.js'

/**
 * Other writers use their distribution's `sqlite3` command (docs/operations.md "Other
 * writers"): Debian 12's 3.40 at least. Every kind of write they make to a migrated database
 * must succeed there, with the derived data (listing generation, child counts, change log)
 * kept right by the triggers. The triggers run inside the writer's SQLite, not the bundled
 * one of better-sqlite3, so only the machine's command can test this. CI installs it.
 */

const version = spawnSync('sqlite3', ['--version'], { encoding: 'utf8' })
const found = version.status === 0
const skip =
  found || process.env.CI === 'true' ? false : "no sqlite3 command on this machine (CI installs Debian's)"

const OWNER = uuid('5c300000', 1)
const OTHER = uuid('5c300000', 2)
const A = uuid('5c310000', 1)
const B = uuid('5c310000', 2)
const C = uuid('5c310000', 3)
const T0 = Date.parse('2026-06-01T10:00:00.000Z')

type Change = [kind: string, parent: string | null, folder: string | null]

describe('sqlite: writes by the sqlite3 command line', { skip }, () => {
  let opened: Awaited<ReturnType<typeof sqliteBackend.open>>
  let db: Database.Database
  let path: string
  let lastGeneration = 0

  before(async () => {
    assert.ok(found, `the sqlite3 command is missing (CI must install it): ${String(version.error)}`)
    opened = await sqliteBackend.open()
    path = opened.url.replace(/^sqlite:/, '')
    db = new Database(path, { readonly: true })
  })
  after(async () => {
    db?.close()
    await opened?.cleanup()
  })

  /** Runs `sql` through the machine's sqlite3, as an operator's console would. */
  const sqlite3 = (sql: string) => execFileSync('sqlite3', ['-bail', path], { input: sql, encoding: 'utf8' })

  const generation = () =>
    db.prepare('SELECT listing_generation FROM users WHERE id = ?').pluck().get(OWNER) as number

  /** The change log rows written since the last call, in commit order; the generation moved on. */
  function newChanges(): Change[] {
    const rows = db
      .prepare(
        `SELECT kind, parent_id, folder_id FROM folder_changes
          WHERE owner_id = ? AND generation > ? ORDER BY generation, id`,
      )
      .raw()
      .all(OWNER, lastGeneration) as Change[]
    const now = generation()
    assert.ok(now > lastGeneration, `the generation moved on: ${lastGeneration} -> ${now}`)
    lastGeneration = now
    return rows
  }

  /** Every maintained count equals the count of the rows themselves. */
  function assertCountsExact() {
    const wrong = db
      .prepare(
        `SELECT id, child_count, actual FROM (
           SELECT f.id, f.child_count,
                  (SELECT count(*) FROM folders c
                    WHERE c.folder_id = f.id AND c.owner_id = f.owner_id AND c.is_deleted = 0) AS actual
             FROM folders f)
          WHERE child_count IS NOT actual`,
      )
      .all()
    assert.deepEqual(wrong, [], 'child_count')
    const root = db.prepare('SELECT root_folder_count FROM users WHERE id = ?').pluck().get(OWNER)
    const actual = db
      .prepare('SELECT count(*) FROM folders WHERE owner_id = ? AND folder_id IS NULL AND is_deleted = 0')
      .pluck()
      .get(OWNER)
    assert.equal(root, actual, 'root_folder_count')
  }

  it(`runs (${found ? version.stdout.split(' ')[0] : 'missing'})`, () => {
    assert.match(version.stdout, /^3\.\d+\.\d+/)
  })

  it('inserts a user: a first generation and an owner entry', () => {
    sqlite3(`INSERT INTO users (id, username, email, is_suspended, created_at, updated_at)
             VALUES ('${OWNER}', 'console', 'c@example.org', 0, ${T0}, ${T0});`)
    assert.deepEqual(newChanges(), [['owner', null, null]])
    const clock = Date.now() * 1000
    assert.ok(
      Math.abs(lastGeneration - clock) < 60_000_000,
      `a clock value in microseconds: ${lastGeneration}`,
    )
  })

  it('inserts folders at the root and below', () => {
    sqlite3(`BEGIN;
      INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
        VALUES ('${A}', 'A', NULL, '${OWNER}', 0, ${T0}, ${T0});
      INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
        VALUES ('${B}', 'B', NULL, '${OWNER}', 0, ${T0}, ${T0});
      INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
        VALUES ('${C}', 'C', '${A}', '${OWNER}', 0, ${T0}, ${T0});
      COMMIT;`)
    assert.deepEqual(newChanges(), [
      ['folder', null, A],
      ['folder', null, B],
      ['folder', A, C],
    ])
    assertCountsExact()
  })

  it('renames', () => {
    sqlite3(`UPDATE folders SET name = 'C renamed', updated_at = ${T0 + 1} WHERE id = '${C}';`)
    assert.deepEqual(newChanges(), [['folder', A, C]])
  })

  it('moves', () => {
    sqlite3(`UPDATE folders SET folder_id = '${B}' WHERE id = '${C}';`)
    assert.deepEqual(newChanges(), [
      ['folder', A, C],
      ['folder', B, C],
    ])
    assertCountsExact()
    assert.equal(db.prepare('SELECT child_count FROM folders WHERE id = ?').pluck().get(B), 1)
  })

  it('deletes and undeletes', () => {
    sqlite3(`UPDATE folders SET is_deleted = 1 WHERE id = '${A}';`)
    assert.deepEqual(newChanges(), [['folder', null, A]])
    assertCountsExact()
    sqlite3(`UPDATE folders SET is_deleted = 0 WHERE id = '${A}';`)
    // An undelete logs the old state and the place it comes back to (the tree feed tells it from a rename).
    assert.deepEqual(newChanges(), [
      ['folder', null, A],
      ['folder', null, A],
    ])
    assertCountsExact()
  })

  it('changes the user: username and avatar give an owner entry; a freeze writes', () => {
    sqlite3(
      `UPDATE users SET username = 'console2', avatar_url = 'https://a.example/x.png' WHERE id = '${OWNER}';`,
    )
    assert.deepEqual(newChanges(), [['owner', null, null]])
    sqlite3(`UPDATE users SET is_suspended = 1 WHERE id = '${OWNER}';`)
    assert.equal(db.prepare('SELECT is_suspended FROM users WHERE id = ?').pluck().get(OWNER), 1)
  })

  it('gives a folder to another user and back (the command does not enforce foreign keys)', () => {
    sqlite3(`INSERT INTO users (id, username, email, is_suspended, created_at, updated_at)
             VALUES ('${OTHER}', 'other', 'o@example.org', 0, ${T0}, ${T0});
             UPDATE folders SET owner_id = '${OTHER}' WHERE id = '${C}';`)
    assert.deepEqual(newChanges(), [['folder', B, C]])
    assertCountsExact()
    assert.equal(db.prepare('SELECT child_count FROM folders WHERE id = ?').pluck().get(B), 0)
    sqlite3(`UPDATE folders SET owner_id = '${OWNER}' WHERE id = '${C}';`)
    assert.deepEqual(newChanges(), [['folder', B, C]])
    assertCountsExact()
  })

  it('replaces a parent row: deleted and inserted again, its live child still counted', () => {
    sqlite3(`BEGIN;
      CREATE TEMPORARY TABLE kept AS SELECT * FROM folders WHERE id = '${B}';
      DELETE FROM folders WHERE id = '${B}';
      INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
        SELECT id, name, folder_id, owner_id, is_deleted, created_at, updated_at FROM kept;
      COMMIT;`)
    assert.deepEqual(newChanges(), [
      ['folder', null, B],
      ['folder', null, B],
    ])
    assertCountsExact()
    assert.equal(db.prepare('SELECT child_count FROM folders WHERE id = ?').pluck().get(B), 1)
  })

  it('deletes a row', () => {
    sqlite3(`DELETE FROM folders WHERE id = '${C}';`)
    assert.deepEqual(newChanges(), [['folder', B, C]])
    assertCountsExact()
  })

  it('every generation written is distinct per owner, whatever the writes per millisecond', () => {
    const statements = Array.from(
      { length: 50 },
      (_, i) => `UPDATE folders SET updated_at = ${T0 + 100 + i} WHERE id = '${B}';`,
    )
    sqlite3(`BEGIN; ${statements.join('\n')} COMMIT;`)
    const rows = db
      .prepare(
        'SELECT generation FROM folder_changes WHERE owner_id = ? AND generation > ? ORDER BY generation',
      )
      .pluck()
      .all(OWNER, lastGeneration) as number[]
    assert.equal(rows.length, 50)
    assert.equal(new Set(rows).size, 50, 'no generation repeats')
  })
})
