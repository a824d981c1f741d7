import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import pg from 'pg'
import { changesFunction } from '../../src/store/postgres/change-log-sql.js'
import { runPendingMigrations, type Migration } from '../../src/store/run-migrations.js'
import { migratePostgres, postgresMigrationNames } from '../../src/store/postgres/postgres-migrations.js'
import { changeTriggers } from '../../src/store/sqlite/change-log-sql.js'
import { migrateSqlite, sqliteMigrationNames } from '../../src/store/sqlite/sqlite-migrations.js'
import { createEmptyDatabase } from '../helpers/databases/postgres.js'

/**
 * The two backends' schema steps (src/store/{sqlite,postgres}/migrations/) go step for step
 * by name, except the steps one backend needs alone, marked here with the reason; and the
 * change-log SQL that live code keeps (change-log-sql.ts) is what those steps left.
 */

/** Steps of one backend only. */
const BACKEND_ONLY: Record<string, 'sqlite' | 'postgres'> = {
  // PostgreSQL refuses text that is not UTF-8, and NUL, on input already.
  '007-folder-name-encoding': 'sqlite',
  // The clock of SQLite's 006 triggers, which older sqlite3 command lines lack.
  '008-portable-clock': 'sqlite',
  // LISTEN/NOTIFY wake-ups exist on PostgreSQL only.
  '011-change-notifications': 'postgres',
  // SQLite's commit hints read the owners a commit moved by generation; NOTIFY names them.
  '016-owners-by-generation': 'sqlite',
  // The old-parent index of the tree feed, which SQLite's 015 made already.
  '016-tree-old-parents': 'postgres',
  // The new-place index of the tree feed, which PostgreSQL's folder_changes_by_owner holds.
  '017-tree-new-parents': 'sqlite',
}

const STEPS = { sqlite: sqliteMigrationNames, postgres: postgresMigrationNames }
const shared = (backend: 'sqlite' | 'postgres') => STEPS[backend].filter((name) => !(name in BACKEND_ONLY))

describe('the schema steps', () => {
  it('are the same on both backends, by name and in order, but for the marked ones', () => {
    assert.deepEqual(shared('sqlite'), shared('postgres'))
  })

  it('mark only steps that one backend has and the other has not', () => {
    for (const [name, backend] of Object.entries(BACKEND_ONLY)) {
      const other = backend === 'sqlite' ? 'postgres' : 'sqlite'
      assert.ok(STEPS[backend].includes(name), `${name} is a ${backend} step`)
      assert.ok(!STEPS[other].includes(name), `${name} is not a ${other} step`)
    }
  })

  for (const backend of ['sqlite', 'postgres'] as const) {
    it(`of ${backend} apply in name order, one file per listed step`, () => {
      const names = STEPS[backend]
      // schema_migrations is read in name order; a step applied out of it would be missed.
      assert.deepEqual([...names].sort(), names)
      assert.equal(new Set(names).size, names.length)
      const folder = new URL(`../../src/store/${backend}/migrations/`, import.meta.url)
      const files = readdirSync(folder).filter((file) => file !== 'index.ts')
      assert.deepEqual(
        files.sort(),
        names.map((name) => `${name}.ts`),
      )
    })
  }
})

describe('the live change-log SQL', () => {
  it('makes the SQLite triggers that the migrations left', async () => {
    const db = new Database(':memory:')
    try {
      await migrateSqlite(db)
      const live = changeTriggers({ log: true })
      const migrated = db
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_changes_%'")
        .all() as { name: string; sql: string }[]
      const made = [...live.matchAll(/CREATE TRIGGER (\w+)/g)].map((match) => match[1])
      // users_changes_delete (006) is no trigger of the log's writes: live code never makes it.
      assert.deepEqual(
        made.sort(),
        migrated
          .map(({ name }) => name)
          .filter((name) => name !== 'users_changes_delete')
          .sort(),
      )
      for (const { name, sql } of migrated) {
        if (made.includes(name)) assert.ok(live.includes(`${sql};`), `${name} as migrated`)
      }
    } finally {
      db.close()
    }
  })

  const url = process.env.TEST_DATABASE_URL ?? ''
  it('makes the PostgreSQL trigger function that the migrations left', { skip: url === '' }, async () => {
    const database = await createEmptyDatabase(url)
    // A pool's client, the kind the store migrates with.
    const pool = new pg.Pool({ connectionString: database.url, max: 1 })
    try {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await migratePostgres(client)
        await client.query('COMMIT')
        const { rows } = await client.query<{ prosrc: string }>(
          "SELECT prosrc FROM pg_proc WHERE proname = 'folders_changes_trigger'",
        )
        assert.equal(rows.length, 1)
        assert.ok(changesFunction({ log: true }).includes(`$$${rows[0]?.prosrc}$$`))
      } finally {
        // Closed, not only handed back: pool.end() does not wait for its clients' connections
        // to close, and the drop below would terminate one still open (an uncaught 57P01).
        const closed = new Promise((resolve) => client.once('end', resolve))
        client.release(true)
        await closed
      }
    } finally {
      await pool.end()
      await database.drop()
    }
  })
})

describe('running the steps', () => {
  it('applies the unrecorded ones in list order, recording each, and stops at a failure naming it', async () => {
    const ran: string[] = []
    const logged: string[] = []
    const boom = new Error('no such table: t')
    const step = (name: string, fail = false): Migration => ({
      name,
      up: () => {
        ran.push(name)
        return fail ? Promise.reject(boom) : Promise.resolve()
      },
    })
    const storage = {
      executed: () => Promise.resolve(['002-b']),
      logMigration: (name: string) => {
        logged.push(name)
        return Promise.resolve()
      },
    }
    const steps = [step('001-a'), step('002-b'), step('003-c'), step('004-d', true), step('005-e')]
    await assert.rejects(runPendingMigrations(steps, storage), (error: Error) => {
      assert.equal(error.message, 'Migration 004-d (up) failed: Original error: no such table: t')
      assert.equal(error.cause, boom)
      return true
    })
    assert.deepEqual(ran, ['001-a', '003-c', '004-d'])
    assert.deepEqual(logged, ['001-a', '003-c'])
  })
})
