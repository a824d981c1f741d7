import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type pg from 'pg'
import { validateImport } from '../../src/import/validate-import.js'
import { openStore } from '../../src/store/open-store.js'
import { LIST_CHILDREN, LIST_ROOT } from '../../src/store/postgres/postgres-statements.js'
import type { Store } from '../../src/store/store.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { createEmptyDatabase, freshPostgresDatabase, withAdminClient } from '../helpers/databases/postgres.js'
import { ALICE, BOB } from '../helpers/fixtures/users.js'

/**
 * What the PostgreSQL schema and queries promise beyond the shared Store contract: the
 * column types and constraints of docs/api.md "Data model" enforced by the database itself,
 * listing queries that are index-only scans stopping at LIMIT, migrations safe to run from
 * several instances at once, and timestamps independent of the session time zone.
 */

const skip = process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set'
const BASE_URL = process.env.TEST_DATABASE_URL ?? ''

const DOCS = 'd0c50000-0000-4000-8000-0000000000d1'

describe('postgres schema', { skip }, () => {
  let db: Awaited<ReturnType<typeof freshPostgresDatabase>>
  let store: Store

  before(async () => {
    db = await freshPostgresDatabase(BASE_URL)
    store = db.store
    const folders: Record<string, unknown>[] = [{ id: DOCS, name: 'Docs', owner_id: ALICE }]
    for (let i = 0; i < 30; i++) {
      folders.push({ name: `root ${i}`, owner_id: i % 2 ? ALICE : BOB })
      folders.push({ name: `child ${i}`, owner_id: ALICE, folder_id: DOCS })
    }
    const users = [
      { id: ALICE, username: 'alice' },
      { id: BOB, username: 'bob' },
    ]
    await store.importData(validateImport({ users, folders }, Date.now()))
  })
  after(() => db.cleanup())

  const admin = <T>(work: (client: pg.Client) => Promise<T>) => withAdminClient(db.url, work)

  it('declares uuid ids, timestamptz(3) times and COLLATE "C" sorted text', async () => {
    const { rows } = await admin((client) =>
      client.query<{ table_name: string; column_name: string; type: string; collation: string | null }>(
        `SELECT table_name, column_name, format_type(atttypid, atttypmod) AS type, collation_name AS collation
           FROM information_schema.columns c
           JOIN pg_attribute a ON a.attrelid = (quote_ident(c.table_name))::regclass AND a.attname = c.column_name
          WHERE table_schema = current_schema() AND table_name IN ('users', 'sessions', 'folders', 'files')`,
      ),
    )
    const columns = new Map(rows.map((row) => [`${row.table_name}.${row.column_name}`, row]))
    for (const [key, row] of columns) {
      const column = key.split('.')[1] ?? ''
      if (column === 'id' || column.endsWith('_id')) assert.equal(row.type, 'uuid', key)
      if (column.endsWith('_at')) assert.equal(row.type, 'timestamp(3) with time zone', key)
      if (column.startsWith('is_')) assert.equal(row.type, 'boolean', key)
    }
    for (const key of ['users.username', 'folders.name', 'files.name']) {
      assert.equal(columns.get(key)?.collation, 'C', key)
    }
    assert.equal(columns.get('sessions.expires_at')?.type, 'timestamp(3) with time zone')
  })

  it('has the listing index, the same-owner parent key and the cascading session key', async () => {
    const definitions = await admin(async (client) => {
      const { rows } = await client.query<{ def: string }>(
        `SELECT pg_get_indexdef('folders_listing'::regclass) AS def
         UNION ALL SELECT pg_get_constraintdef(oid) FROM pg_constraint
          WHERE conrelid IN ('folders'::regclass, 'sessions'::regclass, 'files'::regclass) AND contype = 'f'`,
      )
      return rows.map((row) => row.def)
    })
    assert.ok(
      definitions.some((def) =>
        /ON public\.folders USING btree \(owner_id, folder_id, name, created_at, id\) INCLUDE \(updated_at\) WHERE \(NOT is_deleted\)$/.test(
          def,
        ),
      ),
      definitions.join('\n'),
    )
    assert.equal(
      definitions.filter(
        (def) => def === 'FOREIGN KEY (folder_id, owner_id) REFERENCES folders(id, owner_id)',
      ).length,
      2,
      'folders and files',
    )
    assert.ok(definitions.includes('FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE'))
  })

  it('enforces the folder name rule and the same-owner parent in the database itself', async () => {
    await admin(async (client) => {
      const insert = (name: string, owner: string, parent: string | null) =>
        client.query(
          `INSERT INTO folders (id, name, folder_id, owner_id, created_at, updated_at)
           VALUES (gen_random_uuid(), $1, $2, $3, now(), now())`,
          [name, parent, owner],
        )
      const code = (error: unknown) => (error as { code?: string }).code
      await client.query('BEGIN')
      try {
        for (const bad of ['', ' padded', 'padded ', 'x'.repeat(256), '😀'.repeat(256)]) {
          await client.query('SAVEPOINT s')
          await assert.rejects(insert(bad, ALICE, null), (e) => code(e) === '23514', JSON.stringify(bad))
          await client.query('ROLLBACK TO SAVEPOINT s')
        }
        // 255 characters are counted in code points, not bytes or UTF-16 units.
        await insert('😀'.repeat(255), ALICE, null)
        await assert.rejects(insert('under alice', BOB, DOCS), (e) => code(e) === '23503')
      } finally {
        await client.query('ROLLBACK')
      }
    })
  })

  it('lists with index-only scans that stop at LIMIT, never sorting all children or counting them', async () => {
    const plans = await admin(async (client) => {
      await client.query('VACUUM ANALYZE folders')
      // Tiny tables make any scan cheap; this asks whether the index CAN serve the query.
      await client.query('SET enable_seqscan = off')
      await client.query('SET enable_bitmapscan = off')
      const explain = async (text: string, values: unknown[]) =>
        (await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${text}`, values))
          .rows[0]?.['QUERY PLAN'][0].Plan
      return [
        await explain(LIST_ROOT.text, [ALICE, 10, 0]),
        await explain(LIST_CHILDREN.text, [ALICE, 10, 5, DOCS]),
      ]
    })
    for (const plan of plans) {
      assert.ok(plan !== undefined)
      const scans = nodes(plan).filter((node) => node['Relation Name'] === 'folders')
      const listingScans = scans.filter((node) => node['Index Name'] === 'folders_listing')
      assert.equal(listingScans.length, 2, 'the forward and the backward page read folders_listing')
      for (const scan of listingScans) assert.equal(scan['Node Type'], 'Index Only Scan')
      assert.deepEqual(
        scans.filter(
          (node) =>
            !['folders_listing', 'folders_pkey', 'folders_id_owner'].includes(node['Index Name'] ?? ''),
        ),
        [],
        "no other scan of folders: the total is the parent row's maintained count",
      )
      const limits = nodes(plan).filter((node) => node['Node Type'] === 'Limit')
      assert.equal(limits.length, 2)
      for (const limit of limits) {
        assert.deepEqual(
          nodes(limit).filter((node) => node['Node Type'] === 'Sort'),
          [],
          'each page direction is read in index order',
        )
      }
    }
  })

  it('returns the same epoch milliseconds whatever the session time zone, for any year', async () => {
    const id = 'e0000000-0000-4000-8000-00000000000e'
    const created = '0001-01-01T00:00:00.001Z'
    const updated = '9999-12-31T23:59:59.999Z'
    await store.importData(
      validateImport(
        { folders: [{ id, name: 'times', owner_id: BOB, created_at: created, updated_at: updated }] },
        0,
      ),
    )
    // St John's: a half-hour offset today and a local mean time with seconds in year 1.
    const zoned = `${db.url}?options=${encodeURIComponent('-c TimeZone=America/St_Johns')}`
    assert.equal(
      await withAdminClient(
        zoned,
        async (client) =>
          (await client.query<{ tz: string }>("SELECT current_setting('TimeZone') AS tz")).rows[0]?.tz,
      ),
      'America/St_Johns',
    )
    const other = await openStore({ ...TEST_SETTINGS, databaseUrl: zoned })
    try {
      for (const s of [store, other]) {
        const folder = await s.findFolder(id)
        assert.equal(folder?.created_at, Date.parse(created))
        assert.equal(folder?.updated_at, Date.parse(updated))
      }
    } finally {
      await other.close()
    }
  })
})

describe('postgres migrations', { skip }, () => {
  it('creates the schema once when several instances start at the same moment', async () => {
    const database = await createEmptyDatabase(BASE_URL)
    try {
      const stores = await Promise.all(
        Array.from({ length: 6 }, () => openStore({ ...TEST_SETTINGS, databaseUrl: database.url })),
      )
      await Promise.all(stores.map((s) => s.close()))
      const again = await openStore({ ...TEST_SETTINGS, databaseUrl: database.url })
      assert.equal(await again.countUsers(), 0)
      await again.close()
      const applied = await withAdminClient(database.url, async (client) =>
        (await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map(
          (row) => row.name,
        ),
      )
      assert.deepEqual(applied, [
        '001-initial-schema',
        '002-maintained-child-counts',
        '003-listing-generations',
        '004-cursor-key',
        '005-user-bounds',
        '006-change-log',
        '009-natural-order',
        '010-tree-log',
        '011-change-notifications',
        '012-tree-walk',
        '013-owner-child-counts',
        '014-inserted-row-counts',
        '015-tree-states',
        '016-tree-old-parents',
      ])
    } finally {
      await database.drop()
    }
  })
})

/** The parts of an EXPLAIN (FORMAT JSON) node these tests read. */
interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  Plans?: PlanNode[]
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)]
}
