import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { openStore } from '../../../src/store/open-store.js'
import type { ReadRoutingStats } from '../../../src/store/replica-stats.js'
import type { Store } from '../../../src/store/store.js'
import { replicaBackend, TEST_SETTINGS } from './backends.js'
import { waitForReplay } from '../../../harness/replay.js'
import { createEmptyDatabase, withDatabase } from './postgres.js'

/**
 * A fresh database on the primary (TEST_DATABASE_URL) read through its streaming replica
 * (TEST_DATABASE_READ_URL, made by .ci/postgres-replica.sh): the replica holds every database
 * of the primary, so the same database name on the replica's port is its copy.
 */

export { waitForReplay }

const PRIMARY_URL = process.env.TEST_DATABASE_URL ?? ''
const REPLICA_URL = process.env.TEST_DATABASE_READ_URL ?? ''

export const replicaSkip: string | false = replicaBackend.skip

/** Pausing replay, changing the replica's settings and stopping it need the postgres superuser. */
export const superuserSkip: string | false =
  replicaSkip !== false
    ? replicaSkip
    : process.getuid?.() !== 0
      ? 'not root: su postgres is needed to pause, configure or stop the replica'
      : false

const replicaPort = () => new URL(REPLICA_URL).port || '5432'

/** Runs SQL on the replica as the postgres superuser (local socket, peer authentication). */
export function replicaSuperuser(sql: string, database = 'postgres'): string {
  return execFileSync(
    'su',
    ['postgres', '-c', `psql -p ${replicaPort()} -d ${database} -qAtX -v ON_ERROR_STOP=1 -c "${sql}"`],
    { encoding: 'utf8' },
  ).trim()
}

/** Pauses WAL replay on the replica and resolves once it is paused (replicaSuperuser resumes it). */
export async function pauseReplay(): Promise<void> {
  replicaSuperuser('SELECT pg_wal_replay_pause()')
  for (let i = 0; i < 50 && replicaSuperuser('SELECT pg_get_wal_replay_pause_state()') !== 'paused'; i++) {
    await sleep(50)
  }
  if (replicaSuperuser('SELECT pg_get_wal_replay_pause_state()') !== 'paused') {
    throw new Error('replay did not pause')
  }
}

/**
 * Stops or starts the replica's cluster (`15 replica` unless REPLICA_CLUSTER says otherwise);
 * starting one that runs already is fine.
 */
export function replicaCluster(action: 'stop' | 'start'): void {
  const cluster = process.env.REPLICA_CLUSTER ?? 'replica'
  if (action === 'start') {
    const status = execFileSync('pg_lsclusters', ['-h', '15', cluster], { encoding: 'utf8' })
    if (/\bonline\b/.test(status)) return
  }
  const mode = action === 'stop' ? ['-m', 'fast'] : []
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', '15', cluster, action, ...mode])
}

/** Resolves once the store's replica answered a probe (it is in rotation), or throws. */
async function waitForReplicaInRotation(store: Store, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (routing(store).replicas[0]?.lagSeconds == null) {
    if (Date.now() > deadline) throw new Error('the replica did not come into rotation')
    await sleep(50)
  }
}

export function routing(store: Store): ReadRoutingStats {
  const stats = store.readRouting?.()
  if (stats === undefined) throw new Error('this store routes no reads')
  return stats
}

export interface ReplicatedDatabase {
  /** the store, reading on the replica */
  store: Store
  /** the primary's URL of the database, for raw SQL and for a store without replicas */
  url: string
  /** the replica's URL of the same database */
  readUrl: string
  cleanup(): Promise<void>
}

/**
 * A fresh, migrated database whose store reads on the replica; `prepare` (an import) runs
 * before the replica is awaited, so the store starts with the replica caught up and in rotation.
 */
export async function replicatedDatabase(
  prepare: (store: Store) => Promise<unknown> = () => Promise.resolve(),
  settings: { dbReplicaTimeoutMs?: number } = {},
): Promise<ReplicatedDatabase> {
  const database = await createEmptyDatabase(PRIMARY_URL)
  const name = new URL(database.url).pathname.slice(1)
  const readUrl = withDatabase(REPLICA_URL, decodeURIComponent(name))
  let store: Store | undefined
  try {
    store = await openStore({
      ...TEST_SETTINGS,
      ...settings,
      databaseUrl: database.url,
      databaseReadUrls: [readUrl],
    })
    await prepare(store)
    await waitForReplay(database.url, readUrl)
    await waitForReplicaInRotation(store)
  } catch (error) {
    await store?.close()
    await database.drop()
    throw error
  }
  const opened = store
  return {
    store: opened,
    url: database.url,
    readUrl,
    async cleanup() {
      await opened.close()
      await database.drop()
    },
  }
}
