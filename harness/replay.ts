import { setTimeout as sleep } from 'node:timers/promises'
import { withClient } from './postgres-client.js'

/**
 * Waiting for a streaming replica to catch up, for the replica bench and the replica tests:
 * resolves once the replica has replayed everything the primary had written when called.
 */

export async function waitForReplay(
  primaryUrl: string,
  replicaUrl: string,
  timeoutMs = 20_000,
): Promise<void> {
  const { rows } = await withClient(primaryUrl, (client) =>
    client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'),
  )
  const lsn = rows[0]?.lsn
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const replayed = await withClient(replicaUrl, (client) =>
      client.query<{ done: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [lsn]),
    ).then(
      (result) => result.rows[0]?.done === true,
      () => false, // the database may not exist on the replica yet
    )
    if (replayed) return
    if (Date.now() > deadline) throw new Error(`the replica did not replay ${lsn} within ${timeoutMs} ms`)
    await sleep(20)
  }
}
