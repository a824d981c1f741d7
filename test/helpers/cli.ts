import assert from 'node:assert/strict'
import { copyFileSync, cpSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { childEnv, runNode, startNode, type StartedChild } from './child-process.js'
import { appOver } from './fixtures.js'
import { parseDatabaseUrl } from '../../src/store/open-store.js'
import type { Store } from '../../src/store/store.js'
import type { Backend } from './backends.js'

/**
 * Drives the built command line (`node dist/cli/main.js`, what `npx folder-service` runs)
 * as a child process, and looks at its effect from outside: row counts straight from the
 * database and GET /v1/folders through the real app on a store of its own.
 */

const REPO = fileURLToPath(new URL('../../', import.meta.url))

/** The build under test: what `npm run build` (the `pretest` script) wrote. */
export const BUILT_CLI_MAIN = join(REPO, 'dist', 'cli', 'main.js')

let snapshot: string | undefined

/**
 * The entry point the tests run: a private copy of dist/ (with web/ and package.json) taken
 * once per test file, beside a link to the repository's node_modules. A rebuild of dist/ while the
 * suite runs (another `npm test`, `tsc --watch`) rewrites files in place, and a process
 * that starts meanwhile would load half-written modules; the copy cannot change under us.
 */
export function cliMain(): string {
  if (snapshot !== undefined && existsSync(snapshot)) return snapshot
  if (!existsSync(BUILT_CLI_MAIN)) {
    throw new Error(`${BUILT_CLI_MAIN} is missing: build first (npx tsc -p tsconfig.build.json)`)
  }
  const root = mkdtempSync(join(tmpdir(), 'folder-service-cli-dist-'))
  process.once('exit', () => rmSync(root, { recursive: true, force: true }))
  cpSync(join(REPO, 'dist'), join(root, 'dist'), { recursive: true })
  // The folder browser's static files ship beside dist/ (package.json "files").
  cpSync(join(REPO, 'web'), join(root, 'web'), { recursive: true })
  copyFileSync(join(REPO, 'package.json'), join(root, 'package.json'))
  symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'), 'dir')
  snapshot = join(root, 'dist', 'cli', 'main.js')
  return snapshot
}

export interface CliOptions {
  /** added to (or, when undefined, removed from) the inherited environment */
  env?: Record<string, string | undefined>
  /** working directory; a throwaway one by default, so the default database lands nowhere that matters */
  cwd?: string
  timeoutMs?: number
}

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

let scratchCwd: string | undefined

function defaultCwd(): string {
  if (scratchCwd === undefined || !existsSync(scratchCwd)) {
    scratchCwd = mkdtempSync(join(tmpdir(), 'folder-service-cli-cwd-'))
    const dir = scratchCwd
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  }
  return scratchCwd
}

/** Runs `folder-service ...args` to completion. Never rejects for a non-zero exit; does for a hang. */
export async function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const timeoutMs = options.timeoutMs ?? 20_000
  const run = await runNode([cliMain(), ...args], {
    env: childEnv(options.env),
    cwd: options.cwd ?? defaultCwd(),
    timeoutMs,
    killSignal: 'SIGTERM',
  })
  if (run.timedOut) {
    throw new Error(`folder-service ${args.join(' ')} did not finish in ${timeoutMs} ms\n${run.stderr}`)
  }
  if (run.code === null) {
    throw new Error(`folder-service ${args.join(' ')} was killed by ${run.signal}\n${run.stderr}`)
  }
  return { code: run.code, signal: run.signal, stdout: run.stdout, stderr: run.stderr }
}

/** Runs several independent commands, at most `limit` at a time, results in input order. */
export async function runAll(
  commands: string[][],
  options: CliOptions = {},
  limit = 2,
): Promise<CliResult[]> {
  const results: CliResult[] = new Array<CliResult>(commands.length)
  let next = 0
  const worker = async () => {
    while (next < commands.length) {
      const index = next++
      results[index] = await runCli(commands[index] as string[], options)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, commands.length) }, worker))
  return results
}

export function describeRun(args: string[], result: CliResult): string {
  return `folder-service ${args.join(' ')}\nexit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`
}

/** Exit 0 and nothing on stderr. */
export function assertOk(result: CliResult, args: string[] = []): void {
  assert.equal(result.code, 0, describeRun(args, result))
  assert.equal(result.stderr, '', describeRun(args, result))
}

/**
 * README "Command line": a non-zero exit and exactly one line on stderr, with no stack trace;
 * `pattern` (when given) must match that line.
 */
export function assertOneLineError(result: CliResult, pattern?: RegExp, args: string[] = []): string {
  const context = describeRun(args, result)
  assert.notEqual(result.code, 0, context)
  assert.notEqual(result.code, null, context)
  const lines = result.stderr.split('\n').filter((line) => line.trim() !== '')
  assert.equal(lines.length, 1, `expected exactly one stderr line\n${context}`)
  assert.doesNotMatch(result.stderr, /^\s+at /m, context)
  const line = lines[0] as string
  if (pattern !== undefined) assert.match(line, pattern, context)
  return line
}

export const UUID_LINE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The one id a creating command prints (lower-case UUID on a line of its own). */
export function printedId(result: CliResult, args: string[] = []): string {
  assertOk(result, args)
  const id = result.stdout.trim()
  assert.match(id, UUID_LINE, describeRun(args, result))
  return id
}

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

export interface ListedFolder {
  id: string
  name: string
  folder_id: string | null
}

export interface Listing {
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

/** A running `folder-service serve` (or any long-running command), its output so far, and how it ended. */
export type ServeProcess = StartedChild

export function startCli(args: string[], options: CliOptions = {}): ServeProcess {
  return startNode([cliMain(), ...args], {
    env: childEnv(options.env),
    cwd: options.cwd ?? defaultCwd(),
  })
}

/** Resolves with `promise`, or rejects once `ms` have passed. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
