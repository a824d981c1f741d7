import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { appOver } from './test-app.js'
import type { Backend } from '../databases/backends.js'
import type { ModelFolderBody } from '../fixtures/model.js'
import { validateImport } from '../../../src/import/validate-import.js'
import type { Store } from '../../../src/store/store.js'
import { openRawSql, type RawSql } from '../../../harness/raw-sql.js'

/**
 * What the feeds' replay properties (test/property/changes-replay.ts, tree-replay.ts) share:
 * one fresh database per backend with the app over its store and a second connection writing
 * raw SQL; a fresh owner per case; a client that reads the feed and applies its entries; the
 * listings walked page by page; and the loop that interleaves writes with reads and checks
 * at every quiet point (has_more: false and nothing written since). Each property says only
 * its own writes, its client's reads and what a quiet point compares. FC_SEED=<n> replays a
 * failure.
 */

export interface PropertyRig {
  app: FastifyInstance
  sql: RawSql
  store: Store
}

/** A folder as the listing and the feeds show it. */
export type FolderJson = ModelFolderBody

/** An entry of either feed (docs/api.md "Changes", "Folder tree"). */
export type FeedEntry =
  | { type: 'upsert'; folder: FolderJson; previous_folder_id?: string | null }
  | { type: 'remove'; id: string; folder_id?: string | null }
  | { type: 'owner'; owner: FolderJson['owner'] }

export interface FeedAnswer {
  changes: FeedEntry[]
  cursor: string
  has_more: boolean
}

/** What a run reached, so a test can hold the generator to covering every kind of entry. */
export interface ReplayStats {
  cases: number
  checks: number
  writes: number
  entries: Record<FeedEntry['type'], number>
  cutShort: number
}

export function newReplayStats(): ReplayStats {
  return { cases: 0, checks: 0, writes: 0, entries: { upsert: 0, remove: 0, owner: 0 }, cutShort: 0 }
}

export async function assertOnRawSql<T>(
  backend: Backend,
  numRuns: number,
  arbitrary: fc.Arbitrary<T>,
  run: (rig: PropertyRig, value: T) => Promise<void>,
  /** values run first, within numRuns: histories that once failed */
  examples: T[] = [],
): Promise<void> {
  const opened = await backend.open()
  const app = await appOver(opened.store)
  const sql = await openRawSql(opened.url)
  const rig = { app, sql, store: opened.store }
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)
  try {
    await fc.assert(
      fc.asyncProperty(arbitrary, (value) => run(rig, value)),
      {
        numRuns,
        examples: examples.map((value): [T] => [value]),
        ...(seed === undefined ? {} : { seed }),
      },
    )
  } finally {
    await sql.close()
    await app.close()
    await opened.cleanup()
  }
}

/** A GET with a case's session that asserts a 200. */
export type CaseGet = (url: string) => Promise<LightMyRequestResponse>

/** Imports a case's users (the first is the owner, with `session`) and the owner's root folders. */
export async function openCase(
  rig: PropertyRig,
  session: string,
  users: { id: string; username: string }[],
  folders: { id: string; name: string }[],
): Promise<CaseGet> {
  const owner = users[0]?.id as string
  await rig.store.importData(
    validateImport(
      {
        users: users.map((u) => ({ ...u, email: null, avatar_url: null, password_hash: null })),
        sessions: [{ id: session, user_id: owner }],
        folders: folders.map((f) => ({ ...f, folder_id: null, owner_id: owner })),
      },
      Date.now(),
    ),
  )
  return async (url) => {
    const res = await rig.app.inject({ url, headers: { cookie: `session_id=${session}` } })
    assert.equal(res.statusCode, 200, `${url}: ${res.payload}`)
    return res
  }
}

/** One answer of a feed: at most `limit` entries, each counted and handed to `apply` in order. */
export async function readFeed(
  get: CaseGet,
  url: string,
  limit: number,
  stats: ReplayStats,
  apply: (entry: FeedEntry) => void,
): Promise<FeedAnswer> {
  const body = (await get(url)).json<FeedAnswer>()
  assert.ok(body.changes.length <= limit, `${body.changes.length} entries above limit ${limit}`)
  for (const entry of body.changes) {
    stats.entries[entry.type]++
    apply(entry)
  }
  if (body.has_more) stats.cutShort++
  return body
}

/** Every folder of `parent`'s listing (null: the root), page by page. */
export async function listAll(get: CaseGet, parent: string | null): Promise<FolderJson[]> {
  const found: FolderJson[] = []
  for (let page = 1; ; page++) {
    const res = await get(
      `/v1/folders?limit=100&page=${page}${parent === null ? '' : `&folder_id=${parent}`}`,
    )
    const body = res.json<{ folders: FolderJson[]; total: number }>()
    found.push(...body.folders)
    if (page * 100 >= body.total) return found
  }
}

/**
 * Runs one case's ops in order: `step` writes or reads and says whether it wrote; `check`
 * ops, and the end of the case, run `quiet` (read to the present and compare) when
 * something was written since the last.
 */
export async function replayOps<Op extends { op: string }>(
  ops: Op[],
  stats: ReplayStats,
  step: (op: Op) => Promise<boolean>,
  quiet: () => Promise<void>,
): Promise<void> {
  let dirty = true
  const check = async () => {
    await quiet()
    stats.checks++
    dirty = false
  }
  for (const op of ops) {
    if (op.op === 'check') {
      if (dirty) await check()
    } else if (await step(op)) {
      stats.writes++
      dirty = true
    }
  }
  await check()
  stats.cases++
}
