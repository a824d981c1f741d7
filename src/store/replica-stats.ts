/**
 * What a backend with read replicas reports (ServingStore.readRouting and
 * onReplicaRefused): where routed reads were served, why a replica could not serve one, why
 * a replica is never read. Backend-neutral, and without imports, so /metrics reads it
 * without loading a database driver; the replicas themselves are in postgres/replicas.ts.
 */

/** Why a read that could go to a replica was served by the primary. */
export type FallbackReason =
  /** the replica has not replayed the owner's generation yet */
  | 'lagging'
  /** the replica did not find the parent folder (or the owner): the primary decides */
  | 'not-found'
  /** the replica cancelled the read to replay WAL (a recovery conflict) */
  | 'conflict'
  /** no connection or no answer in time */
  | 'timeout'
  /** the replica refused the connection or lost it */
  | 'unavailable'
  /** any other failure of the statement on the replica */
  | 'error'
  /** the replica is on back-off after failures, or skipped for lagging */
  | 'skipped'

export const FALLBACK_REASONS: readonly FallbackReason[] = [
  'lagging',
  'not-found',
  'conflict',
  'timeout',
  'unavailable',
  'error',
  'skipped',
]

/**
 * Why a URL of DATABASE_READ_URLS is never read: it is not a streaming replica of the
 * database DATABASE_URL names (docs/scale-out.md "Replica identity").
 */
export type ReplicaRefusal =
  /** not in recovery: a primary (another database of it, say) or a promoted replica */
  | 'not-a-replica'
  /** a server of another cluster (another system identifier) */
  | 'other-cluster'
  /** the same cluster, but another database (another oid, name or deployment key) */
  | 'other-database'

export const REPLICA_REFUSALS: readonly ReplicaRefusal[] = [
  'not-a-replica',
  'other-cluster',
  'other-database',
]

/** Totals since start: every routed read counts once, where it was finally served. */
export interface ReadRoutingStats {
  primaryReads: number
  /** every statement (or transaction) sent to the primary, routed or not */
  primaryStatements: number
  replicas: ReadonlyArray<{
    /** `host:port`, never the URL (it may hold a password) */
    name: string
    reads: number
    /** reads this replica could not serve, which the primary served instead */
    fallbacks: Readonly<Record<FallbackReason, number>>
    /** replay lag at the last probe, in seconds; null: not measured (down, not yet probed) */
    lagSeconds: number | null
    /** set while the last identity check found it is not a replica of the primary's database */
    refused: ReplicaRefusal | null
  }>
}
