import { execFile, execFileSync } from 'node:child_process'
import pg from 'pg'
import { parseHostList } from '../src/database-url/host-list.js'
import { PrimaryFinder } from '../src/store/postgres/primary-finder.js'

/**
 * The pg_auto_failover formation of .ci/postgres-failover.sh (a monitor and three data nodes
 * on loopback, TEST_FAILOVER_URL its `pg_autoctl show uri` with a role of the run): a fresh
 * database on it, a planned switchover, a crash of the primary (its keeper and postgres
 * killed, so the monitor fails over rather than the keeper restarting postgres), and psql
 * writes through the multi-host URL as another client would.
 */

const FORMATION_URL = process.env.TEST_FAILOVER_URL ?? ''
const DIR = process.env.FAILOVER_DIR ?? '/var/lib/postgresql/failover-ci'
const MONITOR_PORT = process.env.FAILOVER_PORT ?? '6000'

/**
 * Why the formation tests cannot run, or false. Under CI=true they run anyway and fail: CI
 * starts the formation, so a missing one is a broken CI, not a reason to skip.
 */
export const formationSkip: string | false =
  process.env.CI === 'true'
    ? false
    : FORMATION_URL === ''
      ? 'TEST_FAILOVER_URL is not set (.ci/postgres-failover.sh starts a pg_auto_failover formation)'
      : process.getuid?.() !== 0
        ? 'not root: su postgres is needed to drive pg_autoctl'
        : false

function asPostgres(command: string): string {
  return execFileSync('su', ['postgres', '-c', `PATH=/usr/lib/postgresql/15/bin:$PATH; ${command}`], {
    encoding: 'utf8',
  }).trim()
}

function monitorSql(sql: string): string {
  return asPostgres(`psql -p ${MONITOR_PORT} -d pg_auto_failover -qAtX -c "${sql}"`)
}

/** The node the monitor has as primary (reported and assigned), or null during a change. */
export function primaryNode(): { name: string; port: number } | null {
  const row = monitorSql(
    "SELECT nodename || ' ' || nodeport FROM pgautofailover.node WHERE reportedstate = 'primary' AND goalstate = 'primary'",
  )
  if (row === '') return null
  const [name = '', port = ''] = row.split(' ')
  return { name, port: Number(port) }
}

/**
 * The monitor's events from `since` (Date.now() time) on, a line each: when, which node,
 * its reported and goal states, its LSN and why. What the formation did, for a test's
 * message when the database itself lost an acknowledged write.
 */
export function formationEvents(since: number): string {
  return monitorSql(
    `SELECT to_char(eventtime, 'HH24:MI:SS.MS') || ' ' || nodename || ' ' || reportedstate || '/' || goalstate || ' ' || reportedlsn || ' ' || description FROM pgautofailover.event WHERE eventtime >= to_timestamp(${since} / 1000.0) ORDER BY eventid`,
  )
}

/** True once the monitor sees one primary and two secondaries again. */
export function formationHealthy(): boolean {
  const states = monitorSql(
    'SELECT reportedstate::text || goalstate::text FROM pgautofailover.node ORDER BY 1',
  )
  return states === ['primaryprimary', 'secondarysecondary', 'secondarysecondary'].join('\n')
}

/**
 * `pg_autoctl perform switchover`, resolved when the monitor reports it done; asynchronous,
 * so the load and the followers of the same process go on meanwhile.
 */
export function switchover(): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      'su',
      [
        'postgres',
        '-c',
        `PATH=/usr/lib/postgresql/15/bin:$PATH; pg_autoctl perform switchover --pgdata ${DIR}/monitor --formation default`,
      ],
      (error) =>
        error === null
          ? resolve()
          : reject(new Error('pg_autoctl perform switchover failed', { cause: error })),
    )
  })
}

/**
 * Kills the primary's keeper and its postgres at once (kill -9 of the process group the
 * keeper and postgres share), as a host crash would; returns the node's name.
 */
export function crashPrimary(): string {
  const node = primaryNode()
  if (node === null) throw new Error('no primary to crash')
  const postmaster = asPostgres(`head -n 1 ${DIR}/${node.name}/postmaster.pid`)
  const group = execFileSync('ps', ['-o', 'pgid=', '-p', postmaster], { encoding: 'utf8' }).trim()
  execFileSync('kill', ['-9', '--', `-${group}`])
  return node.name
}

/**
 * Starts a node's keeper again (it rejoins as a secondary), in the formation's directory as
 * .ci/postgres-failover.sh starts them: a keeper started here would keep this checkout as its
 * working directory, and once the checkout is removed it can no longer restart its postgres,
 * so the kept formation's next switchover fails. (`cd X && keeper &` would put the `cd` in the
 * background too, in a shell that holds this call's output pipe open for the keeper's life.)
 */
export function restartNode(name: string): void {
  asPostgres(
    `cd ${DIR} || exit 1; setsid nohup pg_autoctl run --pgdata ${DIR}/${name} >>${DIR}/${name}.log 2>&1 </dev/null &`,
  )
}

/** The single-host URL of the formation's primary now. */
async function primaryUrl(url: string): Promise<string> {
  const finder = new PrimaryFinder(parseHostList(url), 2000)
  try {
    return (await finder.find(Date.now() + 10_000)).url
  } finally {
    finder.close()
  }
}

/** `url` (one host or several) with its database replaced by `database`. */
function onDatabase(url: string, database: string): string {
  return url.replace(/\/[^/?]*(\?|$)/, `/${database}$1`)
}

/**
 * The folder names under `parentId` as the primary the monitor names holds them, read by
 * one connection to that node alone, without TLS (the formation has none), not through the
 * host list: a restarted old primary may accept connections for a moment before its keeper
 * demotes it. Waits up to 30 s for a primary.
 */
export async function primaryFolderNames(url: string, parentId: string): Promise<Set<string>> {
  const deadline = Date.now() + 30_000
  let node = primaryNode()
  while (node === null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500))
    node = primaryNode()
  }
  if (node === null) throw new Error('no primary to read the folders from')
  const client = await nodeClient(url, node.port, 5000)
  try {
    return await folderNames(client, parentId)
  } finally {
    await client.end()
  }
}

/** A connection to the formation's node on `port` alone, without TLS (the formation has none). */
async function nodeClient(url: string, port: number | string, timeoutMs: number): Promise<pg.Client> {
  const single = url.replace(/@[^/]*\//, `@127.0.0.1:${port}/`).replace(/\?.*$/, '')
  const client = new pg.Client({ connectionString: single, connectionTimeoutMillis: timeoutMs })
  await client.connect()
  return client
}

async function folderNames(client: pg.Client, parentId: string): Promise<Set<string>> {
  const { rows } = await client.query<{ name: string }>(
    'SELECT name FROM folders WHERE folder_id = $1 AND NOT is_deleted',
    [parentId],
  )
  return new Set(rows.map((row) => row.name))
}

/**
 * Each node of the formation as it is now, read on one connection to it alone: whether it is
 * in recovery and which of `names` it lacks under `parentId`. For a failed check's message.
 */
export async function nodesLacking(url: string, parentId: string, names: readonly string[]): Promise<string> {
  const nodes = monitorSql("SELECT nodename || ' ' || nodeport FROM pgautofailover.node ORDER BY nodeid")
  const lines: string[] = []
  for (const row of nodes.split('\n').filter((line) => line !== '')) {
    const [name = '', port = ''] = row.split(' ')
    let client: pg.Client | null = null
    try {
      client = await nodeClient(url, port, 2000)
      const recovery = (await client.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r')).rows[0]?.r
      const held = await folderNames(client, parentId)
      const lacking = names.filter((one) => !held.has(one))
      lines.push(
        `${name} (${port}): ${recovery === true ? 'in recovery' : 'read-write'}, ${held.size} folders, lacks ${lacking.join(' ') || 'none'}`,
      )
    } catch (error) {
      lines.push(`${name} (${port}): ${String(error)}`)
    } finally {
      await client?.end().catch(() => undefined)
    }
  }
  return lines.join('\n')
}

/** A fresh database on the formation: its multi-host URL, and a drop for the end. */
export async function formationDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `fs_failover_${process.pid}_${Date.now().toString(36)}`
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: await primaryUrl(FORMATION_URL) })
    await client.connect()
    try {
      await client.query(sql)
    } finally {
      await client.end()
    }
  }
  await admin(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`)
  return {
    url: onDatabase(FORMATION_URL, name),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  }
}

export interface PsqlWrite {
  name: string
  startedAt: number
  endedAt: number
  ok: boolean
}

/** One INSERT through psql (libpq: the host list, target_session_attrs=read-write). */
export function psqlInsert(url: string, sql: string, name: string): Promise<PsqlWrite> {
  const startedAt = Date.now()
  return new Promise((resolve) => {
    execFile(
      'psql',
      [url, '-qAtX', '-v', 'ON_ERROR_STOP=1', '-c', sql],
      { env: { ...process.env, PGCONNECT_TIMEOUT: '2' }, timeout: 10_000 },
      (error) => resolve({ name, startedAt, endedAt: Date.now(), ok: error === null }),
    )
  })
}
