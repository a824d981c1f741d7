import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { LISTING_SOURCES, type ListingSource, type ListingTable } from '../../src/store/listing-sources.js'
import { validateImport } from '../../src/import/validate-import.js'
import { ALL_ROWS, type Store } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { appOver, problemBody, request, type FolderListJson } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import {
  openSchemaSql,
  type Cell,
  type Column,
  type ForeignKey,
  type SchemaSql,
} from '../helpers/databases/schema-sql.js'
import { ALICE, BOB } from '../helpers/fixtures/users.js'

/**
 * The cache guard, derived from the schema. Cached listings are keyed on the owner's
 * listing generation, which only the database's triggers move, and an import replays them
 * (src/store/import-replay.ts); both follow LISTING_SOURCES (src/store/listing-sources.ts).
 * This suite reads the columns of `folders` and `users` from the database itself and, for
 * every one of them, changes it on a live row by plain SQL (a second connection: no Store,
 * no service code), lists every listing of every owner before and after, uncached and
 * cached, and holds the generations and the change log to what the bytes did:
 *
 * - a listing's bytes changed => its owner's generation moved, the cached answer is the new
 *   one, and the feed of that listing has a row after the old position;
 * - a generation moved with no listing changed: tolerated for a listed column (its trigger
 *   fires on the column, not on whether some listing shows this row: a deleted folder
 *   renamed, a user without folders renamed); for any other column, or an owner the row
 *   does not belong to, it must stay (that is what the triggers do today).
 *
 * Each write is undone by a second, equally checked write. The value written comes from
 * the column's type (CHANGES_BY_TYPE) or, for a foreign key, from the rows it may point
 * at, so a new column is covered as soon as it exists; one that LISTING_SOURCES does not
 * describe, or whose type the table below cannot change, fails with what to decide.
 */

const SESSIONS = { [ALICE]: uuid('9f000000', 3), [BOB]: uuid('9f000000', 4) }
// Ids in this order, so a foreign key's first other candidate is DOCS.
const DOCS = uuid('9f100000', 1)
const CHILD = uuid('9f100000', 2)
const GONE = uuid('9f100000', 3)
/** The folder row written: a live root folder without children, so every column can change. */
const LEAF = uuid('9f100000', 4)
const BOBS = uuid('9f100000', 5)
const T0 = Date.parse('2026-05-01T10:00:00.000Z')
const OWNERS = [ALICE, BOB]
/** The live row of each table whose columns are written. */
const WRITTEN_ROW: Record<ListingTable, string> = { users: ALICE, folders: LEAF }

/** A candidate new value, as SQL over the column's current value. */
interface Candidate {
  sql: string
  params: unknown[]
}

const fresh = (): Candidate[] => [{ sql: '?', params: [randomUUID()] }]
const number = (c: string): Candidate[] => [
  { sql: `coalesce(${c}, 0) + 1`, params: [] },
  // a 0/1 flag at 1 (SQLite's booleans) refuses + 1
  { sql: `coalesce(${c}, 0) - 1`, params: [] },
]

/**
 * How to change a column of each type (lower case, as the database names it) to another
 * value its constraints take: candidates tried in order. A new UUID is a valid id, name,
 * username or URL alike; a time moves by the millisecond a listing shows.
 */
const CHANGES_BY_TYPE: Record<string, (column: string) => Candidate[]> = {
  text: fresh,
  uuid: fresh,
  'character varying': fresh,
  integer: number,
  int: number,
  bigint: number,
  smallint: number,
  real: number,
  'double precision': number,
  numeric: number,
  boolean: (c) => [{ sql: `NOT coalesce(${c}, false)`, params: [] }],
  'timestamp with time zone': (c) => [
    { sql: `coalesce(${c}, now()) + interval '1 millisecond'`, params: [] },
  ],
}

type Category = Exclude<keyof ListingSource, 'owner'>
const CATEGORIES: Category[] = ['listed', 'derived', 'checkedPerRequest', 'unlisted']

function categoryOf(table: ListingTable, column: string): Category | undefined {
  const source: ListingSource = LISTING_SOURCES[table]
  return CATEGORIES.find((category) => source[category].includes(column))
}

/** What a column of `table` needs deciding, for the failure messages. */
const decide = (table: string) =>
  `Decide whether a listing shows it or decides whether and where a row is listed. If so, it ` +
  `belongs in LISTING_SOURCES.${table}.listed and in the generation triggers of both migration sets ` +
  `(a new step in src/store/sqlite/migrations/ and in src/store/postgres/migrations/, and the live copy in ` +
  `each change-log-sql.ts), ` +
  `and the import replay (src/store/import-replay.ts) must cover it; if not, list it as unlisted.`

const undescribed = (table: string, column: Column) =>
  `${table}.${column.name} (${column.type}) is not in LISTING_SOURCES (src/store/listing-sources.ts). ${decide(table)}`

for (const backend of allBackends()) {
  describe(
    `${backend.name}: every column of folders and users against the listing generation`,
    { skip: backend.skip },
    () => {
      let target: Awaited<ReturnType<typeof appWithRawSql>>
      let store: Store
      /** the service as it runs: answers cached under the generation */
      let cached: FastifyInstance
      /** the same store without a cache: what the database holds now */
      let truth: FastifyInstance
      let db: SchemaSql
      let foreignKeys: ForeignKey[]
      /** every folder id seen: each is also listed as a parent, found or not */
      const parents = new Set<string | null>([null])

      before(async () => {
        target = await appWithRawSql(
          backend,
          {
            users: [
              { id: ALICE, username: 'alice', avatar_url: 'https://example.org/alice.png' },
              { id: BOB, username: 'bob' },
            ],
            sessions: OWNERS.map((owner) => ({ id: SESSIONS[owner], user_id: owner })),
            folders: [
              { id: DOCS, name: 'Docs', owner_id: ALICE },
              { id: CHILD, name: 'Child', owner_id: ALICE, folder_id: DOCS },
              { id: GONE, name: 'Gone', owner_id: ALICE, is_deleted: true },
              { id: LEAF, name: 'Leaf', owner_id: ALICE },
              { id: BOBS, name: 'Bobs', owner_id: BOB },
            ],
          },
          T0,
        )
        ;({ store, app: cached } = target)
        truth = await appOver(store, { listingCacheMb: 0 })
        db = await openSchemaSql(target.url)
        foreignKeys = await db.foreignKeys()
      })
      after(async () => {
        await db?.close()
        await truth?.close()
        await target?.close()
      })

      /** A listing's answer as bytes: the 200 body, or the status and problem code. */
      const answer = async (app: FastifyInstance, owner: string, parent: string | null) => {
        const res = await request(app, {
          session: SESSIONS[owner],
          query: parent === null ? 'limit=100' : `folder_id=${parent}&limit=100`,
        })
        return res.statusCode === 200 ? res.payload : `${res.statusCode} ${problemBody(res).code}`
      }

      interface Snapshot {
        /** `${owner} ${parent}` -> the uncached answer */
        listings: Map<string, string>
        generations: Map<string, number>
      }

      /** Every listing of every owner, uncached; the cached app must answer the same. */
      const snapshot = async (problems: string[]): Promise<Snapshot> => {
        for (const row of await db.rows('SELECT id FROM folders')) parents.add(String(row.id))
        const listings = new Map<string, string>()
        for (const owner of OWNERS) {
          for (const parent of parents) {
            const fresh = await answer(truth, owner, parent)
            const served = await answer(cached, owner, parent)
            if (served !== fresh) {
              problems.push(
                `served stale to ${owner} for ${parent ?? 'the root'}: ${served} instead of ${fresh}`,
              )
            }
            if (fresh.startsWith('{')) {
              const body = JSON.parse(fresh) as FolderListJson
              if (body.total !== body.folders.length) {
                problems.push(`${owner} ${parent}: total ${body.total} over ${body.folders.length} folders`)
              }
            }
            listings.set(`${owner} ${parent}`, fresh)
          }
        }
        const generations = new Map<string, number>()
        for (const owner of OWNERS) {
          const [row] = await db.rows('SELECT listing_generation AS g FROM users WHERE id = ?', owner)
          generations.set(owner, Number(row?.g))
        }
        return { listings, generations }
      }

      /** A parent not listed in `s` was no folder's id then: not found, whoever asked. */
      const answerIn = (s: Snapshot, key: string) => s.listings.get(key) ?? `404 NOT_FOUND`

      /**
       * The rules of the header for one write of `table.column`, which belongs to `rowOwners`
       * (before and after the write).
       */
      const check = async (
        what: string,
        category: Category,
        rowOwners: Set<string>,
        before: Snapshot,
        after: Snapshot,
        problems: string[],
        /** an import resets the feed of each owner it touches instead of logging its rows */
        feedReset = false,
      ): Promise<string[]> => {
        const changed: string[] = []
        for (const owner of OWNERS) {
          const moved = before.generations.get(owner) !== after.generations.get(owner)
          const listings = [...after.listings.keys()].filter(
            (key) => key.startsWith(`${owner} `) && answerIn(before, key) !== after.listings.get(key),
          )
          changed.push(...listings)
          if (listings.length > 0 && !moved && category !== 'checkedPerRequest') {
            problems.push(
              `${what}: the listings ${listings.join(', ')} changed but the generation of ${owner} did not move: ` +
                'a generation trigger misses this column (both migration sets, and the import replay)',
            )
          }
          if (moved && !(category === 'listed' && rowOwners.has(owner))) {
            problems.push(`${what}: the generation of ${owner} moved, though ${category} columns move none`)
          }
          for (const key of listings) {
            const parent = key.slice(owner.length + 1)
            const live = (s: Snapshot) => s.listings.get(key)?.startsWith('{') === true
            if (category === 'checkedPerRequest' || !live(before) || !live(after)) continue
            const feed = await store.readChanges({
              ownerId: owner,
              parentId: parent === 'null' ? null : parent,
              after: { generation: before.generations.get(owner) ?? 0, row: ALL_ROWS },
              limit: 100,
            })
            const seen = feedReset
              ? feed.outcome === 'expired'
              : feed.outcome === 'changes' && feed.rows.length > 0
            if (!seen) {
              problems.push(`${what}: ${key} changed, but its change feed shows ${JSON.stringify(feed)}`)
            }
          }
        }
        return changed
      }

      /** The values a foreign-key column of the row may take: other rows' keys it may point at. */
      const referencedValues = async (cell: Cell): Promise<Candidate[]> => {
        const candidates: Candidate[] = []
        for (const key of foreignKeys.filter((k) => k.from === cell.table)) {
          const pair = key.pairs.find((p) => p.from === cell.column.name)
          if (pair === undefined) continue
          const conditions = [`${pair.to} IS NOT NULL`]
          const params: unknown[] = []
          let applies = true
          for (const other of key.pairs.filter((p) => p !== pair)) {
            const value = await db.read({
              ...cell,
              column: { name: other.from, type: '', primaryKey: false },
            })
            if (value === null) applies = false // MATCH SIMPLE: a null column switches the key off
            conditions.push(`${other.to} = ?`)
            params.push(value)
          }
          if (!applies) continue
          if (key.table === cell.table) {
            conditions.push(`${cell.key.column} <> ?`) // not the row itself
            params.push(cell.key.value)
          }
          const rows = await db.rows(
            `SELECT ${pair.to} AS v FROM ${key.table} WHERE ${conditions.join(' AND ')} ORDER BY 1 LIMIT 5`,
            ...params,
          )
          candidates.push(
            ...rows.map((r) => ({ sql: '?', params: [db.kind === 'postgres' ? String(r.v) : r.v] })),
          )
        }
        return candidates
      }

      /** Writes the first candidate the database takes; its value, or the refusals. */
      const change = async (
        cell: Cell,
        candidates: Candidate[],
      ): Promise<{ value: unknown } | { refusals: string[] }> => {
        const old = await db.read(cell)
        const refusals: string[] = []
        for (const candidate of candidates) {
          const value = await db.evaluate(cell, candidate.sql, candidate.params)
          if (JSON.stringify(value) === JSON.stringify(old)) continue
          try {
            await db.write(cell, value)
            return { value }
          } catch (error) {
            refusals.push(`${JSON.stringify(value)}: ${(error as Error).message}`)
          }
        }
        return { refusals }
      }

      it('answers a repeated listing from the cache (else no stale answer could show)', async () => {
        await answer(cached, ALICE, null)
        const reads = target.reads()
        await answer(cached, ALICE, null)
        assert.equal(target.reads(), reads)
      })

      for (const table of Object.keys(LISTING_SOURCES) as ListingTable[]) {
        it(`${table}: LISTING_SOURCES describes exactly the columns the database has`, async () => {
          const columns = await db.columns(table)
          const problems = columns
            .filter((c) => categoryOf(table, c.name) === undefined)
            .map((c) => undescribed(table, c))
          const names = new Set(columns.map((c) => c.name))
          for (const category of CATEGORIES) {
            const source: ListingSource = LISTING_SOURCES[table]
            for (const name of source[category]) {
              if (!names.has(name))
                problems.push(`LISTING_SOURCES.${table}.${category} names ${name}, which ${table} lacks`)
              if (CATEGORIES.filter((c) => source[c].includes(name)).length > 1) {
                problems.push(`LISTING_SOURCES.${table} puts ${name} in more than one category`)
              }
            }
          }
          assert.deepEqual(problems, [])
        })

        it(`${table}: a change of any column moves the owner's generation exactly when a listing changes`, async (t) => {
          const columns = await db.columns(table)
          const primaryKey = columns.filter((c) => c.primaryKey)
          assert.equal(primaryKey.length, 1, `${table} must have a single-column primary key to find its row`)
          const keyColumn = (primaryKey[0] as Column).name
          const ownerColumn = LISTING_SOURCES[table].owner
          for (const column of columns) {
            // The triggers' own output: a hand write of a count or a generation is corruption,
            // not data. The writes of every other column check them instead (totals, generations).
            const derived = categoryOf(table, column.name) === 'derived'
            await t.test(
              column.name,
              { skip: derived && 'derived: checked through the other columns' },
              async () => {
                const category = categoryOf(table, column.name)
                assert.ok(category !== undefined, undescribed(table, column))
                const cell: Cell = { table, key: { column: keyColumn, value: WRITTEN_ROW[table] }, column }
                const isForeignKey = foreignKeys.some(
                  (k) => k.from === table && k.pairs.some((p) => p.from === column.name),
                )
                const byType = CHANGES_BY_TYPE[column.type]
                assert.ok(
                  isForeignKey || byType !== undefined,
                  `${table}.${column.name}: the guard cannot change a column of type ${column.type}: add the type ` +
                    `to CHANGES_BY_TYPE (test/contract/listing-columns.test.ts), so that it checks what ` +
                    `LISTING_SOURCES says of the column. ${decide(table)}`,
                )
                const candidates = isForeignKey ? await referencedValues(cell) : (byType?.(column.name) ?? [])
                const ownerCell: Cell = {
                  ...cell,
                  column: { name: ownerColumn, type: '', primaryKey: false },
                }
                const problems: string[] = []
                const start = await snapshot(problems)
                const old = await db.read(cell)
                const ownerBefore = String(await db.read(ownerCell))
                const written = await change(cell, candidates)
                if ('refusals' in written) {
                  // A key others point at cannot change while they do: then nothing may have changed.
                  const referenced = foreignKeys.some(
                    (k) => k.table === table && k.pairs.some((p) => p.to === column.name),
                  )
                  assert.ok(written.refusals.length > 0, `${table}.${column.name}: no value to try`)
                  assert.ok(
                    referenced,
                    `${table}.${column.name}: the database refused every value tried (${written.refusals.join('; ')}): ` +
                      'extend CHANGES_BY_TYPE or the fixture so the guard can change it',
                  )
                  const same = await snapshot(problems)
                  assert.deepEqual(
                    await check(
                      `${table}.${column.name} (refused)`,
                      category,
                      new Set(),
                      start,
                      same,
                      problems,
                    ),
                    [],
                  )
                  assert.deepEqual(problems, [])
                  return
                }
                const moved: Cell =
                  column.name === keyColumn ? { ...cell, key: { ...cell.key, value: written.value } } : cell
                const owners = new Set([ownerBefore, String(await db.read({ ...ownerCell, key: moved.key }))])
                const what = `${table}.${column.name} set to ${JSON.stringify(written.value)}`
                const changedState = await snapshot(problems)
                const changed = await check(what, category, owners, start, changedState, problems)
                await db.write(moved, old)
                const restored = await snapshot(problems)
                await check(
                  `${table}.${column.name} set back`,
                  category,
                  owners,
                  changedState,
                  restored,
                  problems,
                )
                assert.deepEqual(problems, [])
                for (const [listing, bytes] of restored.listings) {
                  assert.equal(bytes, answerIn(start, listing), `set back, ${listing} is as it was`)
                }
                if (category === 'listed') {
                  assert.notDeepEqual(
                    changed,
                    [],
                    `${what} changed no listing: is it listed (LISTING_SOURCES)?`,
                  )
                } else if (category === 'unlisted') {
                  assert.deepEqual(changed, [], `${what} changed listings: it is not unlisted`)
                }
              },
            )
          }
        })
      }

      it('an import (its replay of the lifted triggers) moves the generation of every owner whose listings it changes', async () => {
        const problems: string[] = []
        const start = await snapshot(problems)
        const imported = [uuid('9f200000', 1), uuid('9f200000', 2)]
        await store.importData(
          validateImport(
            {
              folders: [
                { id: imported[0], name: 'Imported', owner_id: ALICE, folder_id: DOCS },
                { id: imported[1], name: 'Imported', owner_id: BOB },
              ],
            },
            T0,
          ),
        )
        const end = await snapshot(problems)
        const changed = await check('an import', 'listed', new Set(OWNERS), start, end, problems, true)
        assert.deepEqual(problems, [])
        for (const listing of [`${ALICE} ${DOCS}`, `${BOB} null`, `${ALICE} ${imported[0]}`]) {
          assert.ok(changed.includes(listing), `the import changed ${listing}`)
        }
      })
    },
  )
}
