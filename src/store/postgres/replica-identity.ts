import type { QueryConfig } from 'pg'
import type { ReplicaRefusal } from '../replica-stats.js'

/**
 * Which database a server holds, so that a URL in DATABASE_READ_URLS is read only when it is
 * a streaming replica of the very database DATABASE_URL names (docs/scale-out.md):
 *
 * - `cluster`: pg_control_system()'s system identifier, made by initdb and carried by
 *   physical replication only: a hot standby of another cluster has another one.
 * - `database`: the database's oid and name. The oid is assigned by CREATE DATABASE and kept
 *   by physical replication, so another database of the same cluster (an import of the same
 *   data, a CREATE DATABASE ... TEMPLATE copy) differs in it.
 * - `deployment`: a digest of the cursor key that migration 004 drew at random, which no
 *   import or fresh migration shares: it sets apart two clusters forked from one base
 *   backup whose new databases happen to get the same oid. The key itself never leaves the
 *   server, only its digest.
 */
export interface DatabaseIdentity {
  cluster: string
  database: string
  deployment: string | null
}

/** The identity columns, for the primary alone or beside the replica probe's own. */
export const IDENTITY_COLUMNS = `
  (SELECT system_identifier::text FROM pg_control_system()) AS cluster,
  (SELECT oid::text || '/' || datname FROM pg_database WHERE datname = current_database()) AS database,
  (SELECT encode(sha256(value), 'hex') FROM service_keys WHERE name = 'cursor') AS deployment`

export const IDENTITY: QueryConfig = {
  name: 'folder_service_database_identity',
  text: `SELECT ${IDENTITY_COLUMNS}`,
}

/** Why `replica` is not a replica of `primary`, or null when it is. */
export function identityMismatch(
  primary: DatabaseIdentity,
  replica: DatabaseIdentity,
): ReplicaRefusal | null {
  if (replica.cluster !== primary.cluster) return 'other-cluster'
  if (replica.database !== primary.database || replica.deployment !== primary.deployment) {
    return 'other-database'
  }
  return null
}
