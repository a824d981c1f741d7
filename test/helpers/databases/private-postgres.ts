import { execFile, execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'

/**
 * A throwaway PostgreSQL server of the test's own (initdb into a temp directory, its own
 * port), for faults that stop the whole server. The machine's shared cluster is never
 * touched: other suites use it at the same time.
 *
 * Needs root (to run the server as the `postgres` OS user with runuser) and the PostgreSQL
 * binaries; {@link privatePostgresSkip} says why not when they are missing.
 */

const execFileAsync = promisify(execFile)

const BIN_DIRS = [process.env.PG_BIN, '/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin'].filter(
  (d): d is string => d !== undefined && d !== '',
)

function binDir(): string | undefined {
  return BIN_DIRS.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')))
}

function postgresUid(): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined
  } catch {
    return undefined
  }
}

/** Why the private server cannot run here, or false when it can. */
export function privatePostgresSkip(): string | false {
  if (process.getuid?.() !== 0) return 'needs root, to run a private PostgreSQL server as the postgres user'
  if (binDir() === undefined) return `no PostgreSQL binaries (initdb, pg_ctl) in ${BIN_DIRS.join(', ')}`
  if (postgresUid() === undefined) return 'no postgres OS user'
  try {
    execFileSync('runuser', ['--help'], { stdio: 'ignore' })
  } catch {
    return 'no runuser command'
  }
  return false
}

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export interface PrivatePostgres {
  port: number
  /** URL of the database `folder_service` (trust auth, user postgres) */
  url: string
  start(): Promise<void>
  /** pg_ctl stop -m fast: connections are terminated, the server refuses new ones */
  stop(): Promise<void>
  isRunning(): boolean
  /** stops the server (immediate) and removes its directory; safe to call twice */
  destroy(): void
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir()
  const owner = postgresUid()
  if (bin === undefined || owner === undefined) throw new Error('private PostgreSQL is not available')
  const dir = mkdtempSync(join(tmpdir(), 'fs-private-pg-'))
  chownSync(dir, owner.uid, owner.gid)
  const data = join(dir, 'data')
  const port = await freePort()
  const asPostgres = (command: string, args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', join(bin, command), ...args], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    })
  const asPostgresAsync = async (command: string, args: string[]) => {
    await execFileAsync('runuser', ['-u', 'postgres', '--', join(bin, command), ...args], {
      cwd: dir,
      timeout: 60_000,
    })
  }
  let running = false
  let destroyed = false
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40`
  // Not awaited in one go with the load: async, so the test's own load keeps running meanwhile.
  const start = async () => {
    await asPostgresAsync('pg_ctl', [
      '-D',
      data,
      '-o',
      options,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      'start',
    ])
    running = true
  }
  const stop = async () => {
    await asPostgresAsync('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop'])
    running = false
  }
  const destroy = () => {
    if (destroyed) return
    destroyed = true
    process.removeListener('exit', destroy)
    if (running) {
      try {
        asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
      } catch {
        // already gone
      }
      running = false
    }
    rmSync(dir, { recursive: true, force: true })
  }
  // Even when a test fails half-way or the runner is interrupted, no server is left behind.
  process.once('exit', destroy)
  try {
    asPostgres('initdb', [
      '-D',
      data,
      '-A',
      'trust',
      '-U',
      'postgres',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ])
    await start()
    const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' })
    await admin.connect()
    try {
      await admin.query('CREATE DATABASE folder_service')
    } finally {
      await admin.end()
    }
  } catch (error) {
    destroy()
    throw error
  }
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/folder_service`,
    start,
    stop,
    isRunning: () => running,
    destroy,
  }
}
