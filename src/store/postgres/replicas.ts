import type { QueryConfig, QueryResultRow } from 'pg'
import {
  FALLBACK_REASONS,
  type FallbackReason,
  type ReadRoutingStats,
  type ReplicaRefusal,
} from '../replica-stats.js'
import { Connections, type PoolSettings } from './postgres-connections.js'
import { replicaFailureOf } from './postgres-errors.js'
import { IDENTITY, IDENTITY_COLUMNS, identityMismatch, type DatabaseIdentity } from './replica-identity.js'

/**
 * Reads on streaming replicas that never serve a stale answer (docs/scale-out.md).
 *
 * A routed statement returns, in the same statement (one snapshot), the owner's listing
 * generation as the database that ran it sees it, in a column of its first row. The session's
 * generation comes from the primary on every request; a replica whose generation is equal
 * or newer has replayed every write that session's answer must show, so its rows are served.
 * Anything else (older, owner or parent not found, a failure) sends the read to the primary,
 * which is always right.
 *
 * Health: a failure (refused or lost connection, timeout, recovery conflict, other error)
 * puts the replica on a back-off that doubles while failures go on; a replica lagging on many
 * reads in a row is skipped for a while. A timer probes each replica: it brings one whose
 * back-off ran out back into rotation once it answers as a replica, and measures replay lag.
 *
 * Identity: a replica is read only once a probe found it is a replica of the primary's very
 * database (replica-identity.ts), and every probe checks again; one that is not is refused,
 * reported once, and probed on (it may be pointed at the right database later).
 */

/**
 * The owner's listing generation in the snapshot a routed statement's row was read in: int8
 * as text; null when the owner does not exist in that snapshot.
 */
export type SnapshotGeneration<R> = (row: R) => string | null

export interface ReplicaSettings extends PoolSettings {
  urls: readonly string[]
}

const FIRST_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 30_000
/** Reads in a row that found the replica behind the session before it is skipped. */
const LAGGING_IN_A_ROW = 32
const LAGGING_SKIP_MS = 2000
const PROBE_INTERVAL_MS = 1000

/**
 * Whether the server is a replica (a promoted one has a history of its own and is never
 * read), and how far its replay is behind what it has received: 0 when it has replayed all
 * of it, else the time since the last transaction it replayed committed.
 */
const PROBE: QueryConfig = {
  name: 'folder_service_replica_probe',
  text: `SELECT pg_is_in_recovery() AS recovery,
                CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
                     ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())
                END::float8 AS lag,
                ${IDENTITY_COLUMNS}`,
}

type ProbeRow = DatabaseIdentity & { recovery: boolean; lag: number | null }

type RefusalListener = (replica: string, reason: ReplicaRefusal) => void

const noFallbacks = (): Record<FallbackReason, number> =>
  Object.fromEntries(FALLBACK_REASONS.map((reason) => [reason, 0])) as Record<FallbackReason, number>

class Replica {
  readonly connections: Connections
  reads = 0
  readonly fallbacks = noFallbacks()
  lagSeconds: number | null = null
  refused: ReplicaRefusal | null = null
  /** Date.now() before which the replica is not read */
  private skipUntil = 0
  private backoffMs = 0
  /**
   * the replica is read only once a probe saw it answer as a replica of the primary's
   * database: at start, and again after a back-off
   */
  private awaitingProbe = true
  private laggingInARow = 0
  private probing = false

  constructor(url: string, settings: PoolSettings) {
    this.connections = new Connections(url, settings, undefined, 'replica')
  }

  get name(): string {
    return this.connections.target
  }

  usable(now: number): boolean {
    return !this.awaitingProbe && now >= this.skipUntil
  }

  served(): void {
    this.reads++
    this.laggingInARow = 0
    this.backoffMs = 0
  }

  lagged(now: number): void {
    if (++this.laggingInARow >= LAGGING_IN_A_ROW) {
      this.laggingInARow = 0
      this.skipUntil = now + LAGGING_SKIP_MS
    }
  }

  failed(now: number): void {
    this.backoffMs = Math.min(this.backoffMs === 0 ? FIRST_BACKOFF_MS : this.backoffMs * 2, MAX_BACKOFF_MS)
    this.skipUntil = now + this.backoffMs
    this.awaitingProbe = true
    this.lagSeconds = null
  }

  /**
   * One probe at a time; success (a replica of `primary`'s database) puts the replica in
   * rotation, a replica of another database is refused and `refused` hears of it once.
   */
  async probe(
    now: number,
    primary: () => Promise<DatabaseIdentity>,
    refused: RefusalListener,
  ): Promise<void> {
    if (this.probing || (this.awaitingProbe && now < this.skipUntil)) return
    this.probing = true
    try {
      // Until the primary has told its identity (it is down, or its schema not made yet)
      // there is nothing to compare with: the replica stays as it is, out of rotation at first.
      const expected = await primary().catch(() => undefined)
      if (expected === undefined) return
      const { rows } = await this.connections.query<ProbeRow>(PROBE, { retry: true })
      const row = rows[0]
      if (row === undefined) throw new Error('the probe returned no row')
      const mismatch = row.recovery ? identityMismatch(expected, row) : 'not-a-replica'
      if (mismatch !== null) {
        if (this.refused !== mismatch) refused(this.name, mismatch)
        this.refused = mismatch
        this.lagSeconds = null
        this.awaitingProbe = true
        return
      }
      this.refused = null
      this.lagSeconds = row.lag
      this.awaitingProbe = false
    } catch {
      this.failed(Date.now())
    } finally {
      this.probing = false
    }
  }
}

export class ReadRouter {
  private readonly replicas: Replica[]
  private primaryReads = 0
  private next = 0
  private readonly timer: NodeJS.Timeout | undefined
  /** the primary's identity, read once it answers (it cannot change under a running process) */
  private primaryIdentity: Promise<DatabaseIdentity> | undefined
  private readonly refusalListeners: RefusalListener[] = []

  /** `primary` runs the primary's identity query; the router reads nothing else there. */
  constructor(
    settings: ReplicaSettings | undefined,
    private readonly primary: Pick<Connections, 'query'>,
  ) {
    this.replicas = settings === undefined ? [] : settings.urls.map((url) => new Replica(url, settings))
    if (this.replicas.length > 0) {
      this.timer = setInterval(() => this.probeAll(), PROBE_INTERVAL_MS)
      this.timer.unref()
      this.probeAll()
    }
  }

  private identityOfPrimary(): Promise<DatabaseIdentity> {
    this.primaryIdentity ??= this.primary
      .query<DatabaseIdentity>(IDENTITY, { retry: true })
      .then(({ rows }) => rows[0] ?? Promise.reject(new Error('the primary returned no identity')))
    // A failure (the primary down, its schema not made yet) is asked again at the next probe.
    this.primaryIdentity.catch(() => (this.primaryIdentity = undefined))
    return this.primaryIdentity
  }

  private probeAll(): void {
    const now = Date.now()
    const refused: RefusalListener = (replica, reason) => {
      for (const listener of this.refusalListeners) listener(replica, reason)
    }
    for (const replica of this.replicas) void replica.probe(now, () => this.identityOfPrimary(), refused)
  }

  /** `listener` hears of the replicas refused so far at once, then of each new refusal. */
  onRefused(listener: RefusalListener): void {
    this.refusalListeners.push(listener)
    for (const { name, refused } of this.replicas) if (refused !== null) listener(name, refused)
  }

  /** The next usable replica in turn, or the one in turn when none is usable (for the count). */
  private pick(now: number): { replica: Replica; usable: boolean } | undefined {
    const count = this.replicas.length
    if (count === 0) return undefined
    const start = this.next++ % count
    for (let i = 0; i < count; i++) {
      const replica = this.replicas[(start + i) % count] as Replica
      if (replica.usable(now)) return { replica, usable: true }
    }
    return { replica: this.replicas[start] as Replica, usable: false }
  }

  /**
   * The rows of `statement`: from a replica whose snapshot holds the owner at generation
   * `minGeneration` or newer (never when `minGeneration` is undefined), else from `primary`.
   * No rows on a replica is no proof of absence: the primary is asked.
   */
  async read<R extends QueryResultRow>(
    statement: QueryConfig,
    generationOf: SnapshotGeneration<R>,
    minGeneration: number | undefined,
    primary: () => Promise<R[]>,
  ): Promise<R[]> {
    const picked = minGeneration === undefined ? undefined : this.pick(Date.now())
    if (picked !== undefined && minGeneration !== undefined) {
      const { replica, usable } = picked
      const served = usable
        ? await this.tryReplica<R>(replica, statement, generationOf, minGeneration)
        : 'skipped'
      if (typeof served !== 'string') return served
      replica.fallbacks[served]++
    }
    this.primaryReads++
    return primary()
  }

  private async tryReplica<R extends QueryResultRow>(
    replica: Replica,
    statement: QueryConfig,
    generationOf: SnapshotGeneration<R>,
    minGeneration: number,
  ): Promise<R[] | FallbackReason> {
    let rows: R[]
    try {
      rows = (await replica.connections.query<R>(statement, { retry: true })).rows
    } catch (error) {
      replica.failed(Date.now())
      return replicaFailureOf(error)
    }
    const first = rows[0]
    if (first === undefined) return 'not-found'
    const generation = generationOf(first)
    if (generation === null || Number(generation) < minGeneration) {
      replica.lagged(Date.now())
      return 'lagging'
    }
    replica.served()
    return rows
  }

  stats(): Omit<ReadRoutingStats, 'primaryStatements'> {
    return {
      primaryReads: this.primaryReads,
      replicas: this.replicas.map(({ name, reads, fallbacks, lagSeconds, refused }) => ({
        name,
        reads,
        fallbacks: { ...fallbacks },
        lagSeconds,
        refused,
      })),
    }
  }

  get hasReplicas(): boolean {
    return this.replicas.length > 0
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer)
    await Promise.all(this.replicas.map((replica) => replica.connections.close()))
  }
}
