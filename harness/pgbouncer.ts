import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * A private PgBouncer in transaction mode, started by .ci/pgbouncer.sh (the one stock
 * configuration CI runs) on a free port in front of the PostgreSQL server of a URL: for what
 * restarts a pooler, or configures one otherwise (`extra` lines of pgbouncer.ini), without
 * touching the one CI starts for every suite (TEST_POOLER_URL).
 */

const SCRIPT = fileURLToPath(new URL('../.ci/pgbouncer.sh', import.meta.url))
const BINARY = '/usr/sbin/pgbouncer'

/** Why a private PgBouncer cannot be started here, or false; under CI nothing is skipped. */
export const pgbouncerSkip: string | false =
  process.env.CI === 'true'
    ? false
    : !process.env.TEST_DATABASE_URL
      ? 'TEST_DATABASE_URL is not set'
      : !existsSync(BINARY)
        ? 'pgbouncer is not installed (apt-get install pgbouncer; .ci/pgbouncer.sh does)'
        : false

export interface Pgbouncer {
  port: number
  /** `url` (a database on the server behind it) through this PgBouncer */
  through(url: string): string
  /** stops it (SIGTERM: every client connection is cut at once) */
  stop(): void
  /** starts it again; returns when it listens */
  start(): void
  /** stops it and removes its directory */
  close(): void
}

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/**
 * Starts a PgBouncer for the role and server of `databaseUrl` (its user list holds that
 * role, as the script writes it); `extra` is appended to the [pgbouncer] section.
 */
export async function startPgbouncer(databaseUrl: string, extra = ''): Promise<Pgbouncer> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'folder-service-pgbouncer-'))
  const env = {
    ...process.env,
    TEST_DATABASE_URL: databaseUrl,
    PGBOUNCER_PORT: String(port),
    PGBOUNCER_DIR: dir,
    PGBOUNCER_EXTRA: extra,
  }
  const run = (fn: string) =>
    execFileSync('bash', ['-c', `source '${SCRIPT}' && ${fn}`], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  run('start_pgbouncer')
  return {
    port,
    through(url) {
      const parsed = new URL(url)
      parsed.hostname = '127.0.0.1'
      parsed.port = String(port)
      return parsed.toString()
    },
    stop: () => run('stop_pgbouncer'),
    start: () => run('start_pgbouncer'),
    close() {
      run('stop_pgbouncer')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
