import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { faultData, seed } from '../helpers/fixtures/fault-data.js'
import { childEnv, startNode } from '../helpers/processes/child-process.js'
import { assertOneLineError } from '../helpers/processes/cli-asserts.js'
import { ROOT } from '../helpers/processes/build.js'
import { runCli, startService, type CliResult } from '../helpers/processes/cli.js'

/**
 * SQLite faults seen through the built CLI, as an operator meets them: a database path that
 * cannot be created or opened, a file that is not a database, a write lock held by another
 * process during an import. Each is a one-line error and a non-zero exit, never a stack
 * trace, a hang or a half-written database; a missing file in a writable place is created.
 */

function counts(path: string): Record<string, number> {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    const n = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
    return { users: n('users'), sessions: n('sessions'), folders: n('folders'), files: n('files') }
  } finally {
    db.close()
  }
}

/** Another process that opens the file and holds its write lock until told to let go. */
async function holdWriteLock(path: string): Promise<{ release(): Promise<void>; child: ChildProcess }> {
  const script = `
    const Database = require('better-sqlite3')
    const db = new Database(${JSON.stringify(path)})
    db.exec('BEGIN IMMEDIATE')
    db.prepare("INSERT INTO users (id, username, is_suspended, created_at, updated_at) VALUES ('ffffffff-0000-4000-8000-000000000000', 'uncommitted', 0, 0, 0)").run()
    process.stdout.write('locked\\n')
    process.stdin.resume()
    process.stdin.on('end', () => { db.exec('ROLLBACK'); db.close(); process.exit(0) })
  `
  const holder = startNode(['-e', script], { env: childEnv(), cwd: ROOT })
  await holder.waitForLine(/locked/, 30_000).catch((error: unknown) => {
    throw new Error(`lock holder exited ${holder.child.exitCode}: ${holder.stderr()}`, { cause: error })
  })
  return {
    child: holder.child,
    release: async () => {
      holder.child.stdin?.end()
      await holder.exited
    },
  }
}

describe('SQLite faults through the built CLI', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fs-sqlite-faults-'))
  })
  after(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('refuses a database path under a regular file: one line, non-zero exit', async () => {
    const file = join(dir, 'plain-file')
    writeFileSync(file, 'not a directory\n')
    const args = ['serve', '--db', `sqlite:${join(file, 'sub', 'db.sqlite')}`, '--port', '0']
    assertOneLineError(await runCli(args), /SQLite|plain-file|ENOTDIR|not a directory|cannot open/i, args)
  })

  it('refuses a database path no directory can be made for, within seconds: one line, non-zero exit', async () => {
    // Node's recursive mkdir loops forever on /proc/forbidden (mkdir there says ENOENT
    // although /proc exists); start-up must end with a word whatever the path.
    for (const path of ['/proc/forbidden/x.db', '/proc/self/forbidden/deeper/x.db', '/dev/null/x.db']) {
      const args = ['serve', '--db', `sqlite:${path}`, '--port', '0']
      const run = await runCli(args, { timeoutMs: 10_000 })
      assertOneLineError(run, /SQLite database .* does not exist|cannot open SQLite database/, args)
      assert.ok(run.ms < 5_000, `${path}: took ${run.ms} ms`)
    }
  })

  it('refuses a file that is not a database, and leaves it as it was', async () => {
    const file = join(dir, 'notes.sqlite')
    const content = 'these are notes, not a database\n'.repeat(200)
    writeFileSync(file, content)
    const args = ['serve', '--db', `sqlite:${file}`, '--port', '0']
    assertOneLineError(await runCli(args), /not a database|SQLite|file/i, args)
    assert.equal(readFileSync(file, 'utf8'), content)
  })

  it('creates a missing database file in an existing directory', async () => {
    const file = join(dir, 'db.sqlite')
    const service = await startService(`sqlite:${file}`)
    try {
      assert.ok(existsSync(file))
      assert.equal((await fetch(`${service.base}/healthz`)).status, 200)
      assert.equal((await fetch(`${service.base}/readyz`)).status, 200)
      assert.deepEqual(counts(file), { users: 0, sessions: 0, folders: 0, files: 0 })
    } finally {
      const status = await service.stop()
      assert.deepEqual(status, { code: 0, signal: null })
    }
  })

  it('fails an import while another process holds the write lock: one line after the busy timeout, nothing written', async () => {
    const file = join(dir, 'locked.sqlite')
    const url = `sqlite:${file}`
    await seed(url, faultData(1, 5))
    const before = counts(file)
    const data = faultData(2, 10)
    const importFile = join(dir, 'import.json')
    writeFileSync(importFile, JSON.stringify(data.doc))

    const args = ['import', importFile, '--db', url]
    const lock = await holdWriteLock(file)
    let run: CliResult
    try {
      run = await runCli(args, { env: { SQLITE_BUSY_TIMEOUT_MS: '300' }, timeoutMs: 30_000 })
    } finally {
      await lock.release()
    }
    assertOneLineError(run, /busy|locked/i, args)
    assert.ok(run.ms >= 300, `failed after ${run.ms} ms, before the busy timeout`)
    assert.ok(run.ms < 15_000, `took ${run.ms} ms`)
    assert.deepEqual(counts(file), before, 'nothing of the import was written')

    // The same file imports once the lock is gone: it was the lock, not the data.
    const again = await runCli(args, { env: { SQLITE_BUSY_TIMEOUT_MS: '300' } })
    assert.equal(again.code, 0, again.stderr)
    assert.equal(counts(file).folders, before.folders! + data.doc.folders.length)
  })
})
