import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { migrateSqlite } from '../../src/store/sqlite/sqlite-migrations.js'
import {
  PRUNABLE_CHANGES,
  prepareChangeStatements,
  prepareHotStatements,
} from '../../src/store/sqlite/sqlite-statements.js'
import { prepareTreeStatements } from '../../src/store/sqlite/sqlite-tree.js'

/**
 * The statements the SQLite store keeps prepared (listing pages, the changes feed, the tree
 * feed, the pruner) bind their LIMIT through a cast (src/store/sqlite/limit-slot.ts): with a
 * bare parameter, SQLite's planner reads the bound value and prepares the statement again
 * at every run, which doubled a root page's cost. better-sqlite3 does not say when a
 * statement was prepared again, so this reads the SQL each one was prepared from.
 */

const BARE_LIMIT = /\bLIMIT\s+[?$:@]/i

describe('SQLite statements kept prepared', () => {
  it('bind no LIMIT the planner reads', async () => {
    const db = new Database(':memory:')
    try {
      await migrateSqlite(db)
      const prepared: string[] = []
      const prepare = db.prepare.bind(db)
      db.prepare = (sql: string) => {
        prepared.push(sql)
        return prepare(sql)
      }
      prepareHotStatements(db)
      prepareTreeStatements(db, prepareChangeStatements(db).valid)
      prepared.push(PRUNABLE_CHANGES)

      const limited = prepared.filter((sql) => /\bLIMIT\b/i.test(sql))
      // the 16 page statements, the changes rows, three tree reads and the pruner at least
      assert.ok(limited.length >= 21, `${limited.length} statements with a LIMIT`)
      assert.deepEqual(
        limited.filter((sql) => BARE_LIMIT.test(sql)),
        [],
      )
    } finally {
      db.close()
    }
  })
})
