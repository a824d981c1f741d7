import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import pg from 'pg'
import { generateDataSet, type DataSet } from './dataset.js'
import { benchDatabase, type BenchDatabase } from './postgres.js'
import { importData } from './service.js'
import { openDatabase } from './writer.js'

/**
 * What the listing generation costs a writer: single-row inserts and renames, each its own
 * transaction, through a plain connection (the writer process's statements), on two copies
 * of one data set, one with the generation triggers and one without them. Rounds alternate
 * between the copies so that other load on the machine falls on both alike.
 *
 *   node --import tsx bench/generation-cost.ts [--writes N] [--rounds N] [--db postgres://...]
 *
 * SQLite always (temporary files); PostgreSQL too with --db or TEST_DATABASE_URL.
 */

const root = fileURLToPath(new URL('..', import.meta.url))

const TRIGGERS = ['folders_generation_insert', 'folders_generation_delete', 'folders_generation_update']

interface Copy {
  label: 'with triggers' | 'without'
  url: string
}

interface Rates {
  insertsPerSecond: number[]
  renamesPerSecond: number[]
}

async function dropTriggers(url: string): Promise<void> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length))
    for (const name of TRIGGERS) db.exec(`DROP TRIGGER ${name}`)
    db.close()
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  for (const name of TRIGGERS) await client.query(`DROP TRIGGER ${name} ON folders`)
  await client.end()
}

/** `writes` inserts then as many renames, one statement and transaction each, one after another. */
async function round(url: string, data: DataSet, writes: number): Promise<[number, number]> {
  const { db, sql } = openDatabase(url)
  try {
    const parents = data.small
    const inserted: { id: string; owner: string }[] = []
    let started = performance.now()
    for (let i = 0; i < writes; i++) {
      const parent = parents[i % parents.length] as DataSet['small'][number]
      const id = randomUUID()
      const now = Date.now()
      await db.run(sql.insert, [id, `cost ${i}`, parent.folderId, parent.ownerId, now, now])
      inserted.push({ id, owner: parent.ownerId })
    }
    const inserts = writes / ((performance.now() - started) / 1000)
    started = performance.now()
    for (const [i, folder] of inserted.entries())
      await db.run(sql.rename, [`renamed ${i}`, Date.now(), folder.id, folder.owner])
    const renames = writes / ((performance.now() - started) / 1000)
    return [inserts, renames]
  } finally {
    await db.close()
  }
}

async function backend(name: string, copies: Copy[], data: DataSet, writes: number, rounds: number) {
  const rates = new Map<Copy['label'], Rates>(
    copies.map((c) => [c.label, { insertsPerSecond: [], renamesPerSecond: [] }]),
  )
  for (let r = 0; r < rounds; r++) {
    for (const copy of r % 2 === 0 ? copies : [...copies].reverse()) {
      const [inserts, renames] = await round(copy.url, data, writes)
      const mine = rates.get(copy.label) as Rates
      mine.insertsPerSecond.push(inserts)
      mine.renamesPerSecond.push(renames)
    }
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  const line = (label: Copy['label']) => {
    const mine = rates.get(label) as Rates
    return { inserts: median(mine.insertsPerSecond), renames: median(mine.renamesPerSecond) }
  }
  const withT = line('with triggers')
  const without = line('without')
  const us = (withRate: number, withoutRate: number) => (1e6 / withRate - 1e6 / withoutRate).toFixed(0)
  process.stdout.write(
    `${name}: median of ${rounds} rounds of ${writes} single-statement transactions\n` +
      `  inserts/s: ${Math.round(withT.inserts)} with the generation triggers, ${Math.round(without.inserts)} without ` +
      `(${us(withT.inserts, without.inserts)} us more a write)\n` +
      `  renames/s: ${Math.round(withT.renames)} with, ${Math.round(without.renames)} without ` +
      `(${us(withT.renames, without.renames)} us more a write)\n`,
  )
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      db: { type: 'string' },
      writes: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '3' },
    },
  })
  const writes = Number(values.writes)
  const rounds = Number(values.rounds)
  const tmp = mkdtempSync(join(tmpdir(), 'folder-service-generation-cost-'))
  const databases: BenchDatabase[] = []
  try {
    const data = generateDataSet(join(tmp, 'data.json'), {
      users: 200,
      rootFolders: 10,
      smallFolders: 50,
      huge: 0,
      seed: 1,
    })
    const load = (url: string) =>
      importData({
        root,
        url,
        file: data.file,
        folders: data.counts.folders,
        timeoutSeconds: 600,
        log: (line) => process.stdout.write(`${line}\n`),
      })

    const sqlite: Copy[] = [
      { label: 'with triggers', url: `sqlite:${join(tmp, 'with.db')}` },
      { label: 'without', url: `sqlite:${join(tmp, 'without.db')}` },
    ]
    for (const copy of sqlite) await load(copy.url)
    await dropTriggers((sqlite[1] as Copy).url)
    await backend('SQLite (WAL, synchronous NORMAL)', sqlite, data, writes, rounds)

    const base = values.db ?? process.env.TEST_DATABASE_URL
    if (base === undefined || base === '') {
      process.stdout.write('PostgreSQL: skipped (no --db and no TEST_DATABASE_URL)\n')
      return
    }
    const postgres: Copy[] = []
    for (const label of ['with triggers', 'without'] as const) {
      const database = await benchDatabase(base)
      databases.push(database)
      if (database.mode !== 'fresh database')
        throw new Error('PostgreSQL: needs a role that may CREATE DATABASE')
      await load(database.url)
      postgres.push({ label, url: database.url })
    }
    await dropTriggers((postgres[1] as Copy).url)
    await backend('PostgreSQL', postgres, data, writes, rounds)
  } finally {
    for (const database of databases) await database.dispose([])
    rmSync(tmp, { recursive: true, force: true })
  }
}

await main()
