import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import pg from 'pg'
import { changesFunction } from '../src/store/postgres/change-log-sql.js'
import { changeTriggers } from '../src/store/sqlite/change-log-sql.js'
import { generateDataSet, type DataSet } from './lib/dataset.js'
import { benchDatabase, type BenchDatabase } from './lib/postgres.js'
import { importData } from './lib/service.js'
import { openDatabase } from './lib/writer.js'

/**
 * What the change log and the listing generation cost a writer: single-row inserts and
 * renames, each its own transaction, through a plain connection (the writer process's
 * statements), on three copies of one data set: as migrated (generations and change log),
 * with the folder triggers made again without the log (generations only), and without the
 * folder triggers of generations and log at all. Rounds rotate between the copies so that
 * other load on the machine falls on all alike: compare the ratios of one run.
 *
 *   node --import tsx bench/generation-cost.ts [--writes N] [--rounds N] [--db postgres://...]
 *
 * SQLite always (temporary files); PostgreSQL too with --db or TEST_DATABASE_URL.
 */

const root = fileURLToPath(new URL('..', import.meta.url))

const FOLDER_TRIGGERS = ['folders_changes_insert', 'folders_changes_delete', 'folders_changes_update']

const LABELS = ['with the change log', 'generations only', 'neither'] as const
type Label = (typeof LABELS)[number]

interface Copy {
  label: Label
  url: string
}

/** Turns a migrated copy into `label`'s: the log left out of the triggers, or the triggers dropped. */
async function strip(url: string, label: Label): Promise<void> {
  if (label === 'with the change log') return
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length))
    // changeTriggers makes the users triggers too: all five are made again without the log.
    const dropped =
      label === 'neither'
        ? FOLDER_TRIGGERS
        : [...FOLDER_TRIGGERS, 'users_changes_insert', 'users_changes_update']
    for (const name of dropped) db.exec(`DROP TRIGGER ${name}`)
    if (label === 'generations only') db.exec(changeTriggers({ log: false }))
    db.close()
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  if (label === 'generations only') await client.query(changesFunction({ log: false }))
  else for (const name of FOLDER_TRIGGERS) await client.query(`DROP TRIGGER ${name} ON folders`)
  await client.end()
}

/** Microseconds a write took: wall clock, and this process's CPU (SQLite's work runs in it). */
interface Cost {
  wall: number
  cpu: number
}

/** Runs `writes` calls of `write` one after another; what each cost on average. */
async function timed(writes: number, write: (i: number) => Promise<void>): Promise<Cost> {
  const started = performance.now()
  const cpu = process.cpuUsage()
  for (let i = 0; i < writes; i++) await write(i)
  const used = process.cpuUsage(cpu)
  return { wall: ((performance.now() - started) * 1000) / writes, cpu: (used.user + used.system) / writes }
}

/** `writes` inserts then as many renames, one statement and transaction each, one after another. */
async function round(url: string, data: DataSet, writes: number): Promise<{ inserts: Cost; renames: Cost }> {
  const { db, sql } = openDatabase(url)
  try {
    const parents = data.small
    const inserted: { id: string; owner: string }[] = []
    const inserts = await timed(writes, async (i) => {
      const parent = parents[i % parents.length] as DataSet['small'][number]
      const id = randomUUID()
      const now = Date.now()
      await db.run(sql.insert, [id, `cost ${i}`, parent.folderId, parent.ownerId, now, now])
      inserted.push({ id, owner: parent.ownerId })
    })
    const renames = await timed(writes, async (i) => {
      const folder = inserted[i] as { id: string; owner: string }
      await db.run(sql.rename, [`renamed ${i}`, Date.now(), folder.id, folder.owner])
    })
    return { inserts, renames }
  } finally {
    await db.close()
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

/**
 * Per round, the copies run back to back (rotated, so that none always runs first), and
 * the ratios are taken within the round: a load that comes and goes on a shared machine
 * then falls on both sides of a ratio. Reported: medians over the rounds.
 */
async function backend(
  name: string,
  copies: Copy[],
  data: DataSet,
  writes: number,
  rounds: number,
  cpu: boolean,
) {
  const costs: Record<Label, { inserts: Cost; renames: Cost }>[] = []
  for (let r = 0; r < rounds; r++) {
    const results = {} as Record<Label, { inserts: Cost; renames: Cost }>
    for (const copy of [...copies.slice(r % copies.length), ...copies.slice(0, r % copies.length)]) {
      results[copy.label] = await round(copy.url, data, writes)
    }
    costs.push(results)
  }
  const line = (kind: 'inserts' | 'renames', measure: keyof Cost) => {
    const us = (label: Label) => median(costs.map((c) => c[label][kind][measure]))
    const ratio = (label: Label) =>
      median(costs.map((c) => c['with the change log'][kind][measure] / c[label][kind][measure])).toFixed(2)
    return (
      `  ${kind}, ${measure === 'wall' ? 'wall clock' : 'CPU'} us a write: ${us('with the change log').toFixed(0)} with the change log, ` +
      `${us('generations only').toFixed(0)} generations only, ${us('neither').toFixed(0)} neither; ` +
      `the log costs ${ratio('generations only')}x, log and generations ${ratio('neither')}x\n`
    )
  }
  const measures: (keyof Cost)[] = cpu ? ['wall', 'cpu'] : ['wall']
  process.stdout.write(
    `${name}: medians of ${rounds} rounds of ${writes} single-statement transactions\n` +
      measures.map((m) => line('inserts', m) + line('renames', m)).join(''),
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

    const sqlite = LABELS.map((label): Copy => ({
      label,
      url: `sqlite:${join(tmp, `${label.replace(/ /g, '-')}.db`)}`,
    }))
    for (const copy of sqlite) {
      await load(copy.url)
      await strip(copy.url, copy.label)
    }
    await backend('SQLite (WAL, synchronous NORMAL)', sqlite, data, writes, rounds, true)

    const base = values.db ?? process.env.TEST_DATABASE_URL
    if (base === undefined || base === '') {
      process.stdout.write('PostgreSQL: skipped (no --db and no TEST_DATABASE_URL)\n')
      return
    }
    const postgres: Copy[] = []
    for (const label of LABELS) {
      const database = await benchDatabase(base)
      databases.push(database)
      if (database.mode !== 'fresh database')
        throw new Error('PostgreSQL: needs a role that may CREATE DATABASE')
      await load(database.url)
      await strip(database.url, label)
      postgres.push({ label, url: database.url })
    }
    await backend('PostgreSQL', postgres, data, writes, rounds, false)
  } finally {
    for (const database of databases) await database.dispose([])
    rmSync(tmp, { recursive: true, force: true })
  }
}

await main()
