import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { appOver } from '../apps/test-app.js'
import { parseDatabaseUrl } from '../../../src/store/open-store.js'
import type { Store } from '../../../src/store/store.js'
import type { Backend } from '../databases/backends.js'

/**
 * What the command-line suites look at from outside a run: row counts straight from the
 * database, GET /v1/folders through the real app on a store of its own, and the files they
 * hand to a command.
 */

/** A temp directory removed by the returned function. */
export function tempDir(prefix = 'folder-service-cli-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

export function writeJson(dir: string, name: string, value: unknown): string {
  const path = join(dir, name)
  writeFileSync(path, JSON.stringify(value))
  return path
}

export interface TableCounts {
  users: number
  sessions: number
  folders: number
  files: number
}

/** Rows in each table of docs/api.md "Data model", read directly: the Store has no count for most. */
export async function tableCounts(url: string): Promise<TableCounts> {
  const sql = (table: string) => `SELECT count(*) AS n FROM ${table}`
  const tables = ['users', 'sessions', 'folders', 'files'] as const
  const target = parseDatabaseUrl(url)
  const counts = { users: 0, sessions: 0, folders: 0, files: 0 }
  if (target.kind === 'sqlite') {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(target.path, { readonly: true, fileMustExist: true })
    try {
      for (const table of tables) counts[table] = Number((db.prepare(sql(table)).get() as { n: number }).n)
    } finally {
      db.close()
    }
  } else {
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: target.url })
    await client.connect()
    try {
      for (const table of tables) {
        const { rows } = await client.query<{ n: string }>(sql(table))
        counts[table] = Number(rows[0]?.n)
      }
    } finally {
      await client.end()
    }
  }
  return counts
}

interface ListedFolder {
  id: string
  name: string
  folder_id: string | null
}

interface Listing {
  status: number
  body: { code?: string; folders?: ListedFolder[]; total?: number }
}

/**
 * A backend's fresh database, the URL a child process opens it with, and the HTTP app on
 * an in-process store of the same database, to see what the CLI did as a client would.
 */
export interface CliDatabase {
  url: string
  store: Store
  app: FastifyInstance
  counts(): Promise<TableCounts>
  /** GET /v1/folders as the holder of `sessionId`, at the root or under `folderId` */
  list(sessionId: string, folderId?: string): Promise<Listing>
  /** the names GET /v1/folders returns (asserting 200) */
  names(sessionId: string, folderId?: string): Promise<string[]>
  close(): Promise<void>
}

export async function openCliDatabase(backend: Backend): Promise<CliDatabase> {
  const opened = await backend.open()
  const { store, url } = opened
  const app = await appOver(store)
  const list = async (sessionId: string, folderId?: string): Promise<Listing> => {
    const query = new URLSearchParams({ limit: '100' })
    if (folderId !== undefined) query.set('folder_id', folderId)
    const response = await app.inject({
      method: 'GET',
      url: `/v1/folders?${query.toString()}`,
      headers: { cookie: `session_id=${sessionId}` },
    })
    return { status: response.statusCode, body: response.json<Listing['body']>() }
  }
  return {
    url,
    store,
    app,
    counts: () => tableCounts(url),
    list,
    async names(sessionId, folderId) {
      const { status, body } = await list(sessionId, folderId)
      assert.equal(status, 200, JSON.stringify(body))
      return (body.folders ?? []).map((f) => f.name)
    },
    async close() {
      await app.close()
      await opened.cleanup()
    },
  }
}

/**
 * Registers hooks that open a database of `backend` (openCliDatabase) and a temporary
 * directory before the suite's tests, and remove both after them.
 */
export function useCliDatabase(backend: Backend): { readonly db: CliDatabase; readonly dir: string } {
  let db: CliDatabase | undefined
  let tmp: ReturnType<typeof tempDir> | undefined
  before(async () => {
    tmp = tempDir()
    db = await openCliDatabase(backend)
  })
  after(async () => {
    await db?.close()
    tmp?.remove()
  })
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useCliDatabase: used outside the suite it was set up in')
    return value
  }
  return {
    get db() {
      return opened(db)
    },
    get dir() {
      return opened(tmp).dir
    },
  }
}
