import pg from 'pg'
import { StoreUnavailableError } from '../store.js'

/**
 * Which node-postgres failures mean "the database cannot be used right now" (HTTP 503,
 * StoreUnavailableError) rather than "this statement is wrong" (propagated as is), and how
 * to describe them in one line that never contains the connection password.
 */

/**
 * SQLSTATEs of an unusable server or connection: class 08 (connection exception), class 53
 * (insufficient resources: too many connections, disk full, out of memory), 57P01-57P05
 * (terminated by an administrator, crash shutdown, starting up, database dropped, idle
 * session timeout), 25006 (a write on a read-only server: a primary that was demoted), and the
 * two timeouts (TIMED_OUT_SQLSTATE).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|53...|57P0.|57014|55P03|25006)$/

/**
 * A statement the server cancelled for taking too long: 57014 (statement_timeout; most
 * often a wait for a lock that a long import or another writer holds) and 55P03
 * (lock_timeout, when the server sets one). The database answered: not "unreachable".
 */
const TIMED_OUT_SQLSTATE = new Set(['57014', '55P03'])

/** SQLSTATEs that say the connection died under the statement, before or while it ran. */
const DEAD_CONNECTION_SQLSTATE = new Set(['57P01', '57P02'])

/** Socket-level errors (Node system error codes) of an unreachable or vanished server. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
])

/**
 * node-postgres reports its own connection failures as plain Errors with these messages
 * (pg/lib/client.js, pg-pool/index.js): lost connection, client-side query_timeout,
 * pool connect timeout (also when every pooled connection stays busy), unusable client.
 */
const DRIVER_UNAVAILABLE =
  /^(Connection terminated|Query read timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed)/

const DRIVER_DEAD_CONNECTION =
  /^(Connection terminated unexpectedly|Client has encountered a connection error)/

function codeOf(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? code : undefined
}

/** The error and its causes, outermost first (the migration runner and pg-pool wrap the driver's error). */
function* causes(error: unknown): Generator<Error> {
  let current = error
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    yield current
    current = current.cause
  }
}

function isUnavailableCause(error: Error): boolean {
  const code = codeOf(error)
  if (error instanceof pg.DatabaseError) return code !== undefined && UNAVAILABLE_SQLSTATE.test(code)
  if (code !== undefined && NETWORK_CODES.has(code)) return true
  return DRIVER_UNAVAILABLE.test(error.message)
}

/** True when the failure is the database's or the connection's, not the statement's. */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true
  for (const cause of causes(error)) if (isUnavailableCause(cause)) return true
  return false
}

/**
 * True when a pooled connection turned out to be dead (the server restarted or an
 * administrator terminated it), as opposed to a server that is down or silent: a read that
 * failed this way may run again at once on a fresh connection.
 */
export function isDeadConnection(error: unknown): boolean {
  for (const cause of causes(error)) {
    const code = codeOf(cause)
    if (cause instanceof pg.DatabaseError) return code !== undefined && DEAD_CONNECTION_SQLSTATE.has(code)
    if (code === 'ECONNRESET' || code === 'EPIPE') return true
    if (DRIVER_DEAD_CONNECTION.test(cause.message)) return true
  }
  return false
}

/**
 * The one-line reason of a failure. Server messages and socket error codes name no secret;
 * an AggregateError (IPv4 and IPv6 both refused) has an empty message but a code.
 */
export function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = codeOf(error)
  if (!(error instanceof pg.DatabaseError) && code !== undefined && NETWORK_CODES.has(code)) return code
  const firstLine = error.message.split('\n')[0]?.trim() ?? ''
  return firstLine === '' ? (code ?? error.name) : firstLine
}

/**
 * What a pooler in transaction mode answers a client that was not told of it (CONTRACT 17):
 * 26000 (a statement name prepared on another server connection) and 42P05 (a name another
 * client prepared on this one), and PgBouncer's refusal of a startup parameter. The service
 * never deallocates a statement, so on a direct connection neither SQLSTATE happens.
 */
const POOLER_MISUSE_SQLSTATE = new Set(['26000', '42P05'])
const REFUSED_STARTUP_PARAMETER = /unsupported startup parameter/

/** The one line that says what to do about it. */
const POOLER_HINT =
  'DATABASE_URL looks like a connection pooler in transaction mode: set DATABASE_POOLER=transaction (docs/operations.md "Behind a connection pooler")'

/** True for the errors of a transaction pooler used as a direct connection. */
export function isPoolerMisuse(error: unknown): boolean {
  for (const cause of causes(error)) {
    const code = codeOf(cause)
    if (cause instanceof pg.DatabaseError && code !== undefined && POOLER_MISUSE_SQLSTATE.has(code))
      return true
    if (REFUSED_STARTUP_PARAMETER.test(cause.message)) return true
  }
  return false
}

/** A failure to obtain a connection: always "unavailable", whatever the reason. */
export function cannotConnect(target: string, error: unknown): StoreUnavailableError {
  const hint = isPoolerMisuse(error) ? `; ${POOLER_HINT}` : ''
  return new StoreUnavailableError(`cannot connect to PostgreSQL at ${target}: ${reasonOf(error)}${hint}`, {
    cause: error,
  })
}

/** Driver errors become typed errors at the adapter boundary. */
export function translate(target: string, error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error
  // Answered 503 with Retry-After, never 500: the database is fine, its address is not.
  if (isPoolerMisuse(error)) {
    return new StoreUnavailableError(`PostgreSQL at ${target}: ${reasonOf(error)}; ${POOLER_HINT}`, {
      cause: error,
    })
  }
  if (!isUnavailable(error)) return error
  const root = [...causes(error)].find(isUnavailableCause) ?? error
  const code = root instanceof pg.DatabaseError ? codeOf(root) : undefined
  if (code !== undefined && TIMED_OUT_SQLSTATE.has(code)) {
    return new StoreUnavailableError(
      `PostgreSQL at ${target} timed out waiting for a lock or for the statement to finish: ${reasonOf(root)}`,
      { cause: error, timedOut: true },
    )
  }
  return new StoreUnavailableError(`PostgreSQL at ${target} is unavailable: ${reasonOf(root)}`, {
    cause: error,
  })
}

/**
 * SQLSTATEs that say the server stopped being a usable primary: 25006 (a write on a server
 * that became read-only: a demoted or draining primary), 57P01-57P03 (terminated by an
 * administrator, crash shutdown, starting up: a switchover or a restart), class 08.
 */
const LOST_PRIMARY_SQLSTATE = /^(25006|57P0[123]|08...)$/

/**
 * True when the failure says the primary may have moved or gone: the server could not be
 * reached or answered (connection refused, reset or timed out, no connection in time, no
 * answer in time), the connection was ended under the statement, or the server refused a
 * write as read-only. A statement the server cancelled for time (57014) or refused for
 * resources (class 53) came from a live primary and is not one. The primary finder then
 * looks again; a host that turns out to be the primary still keeps its pool.
 */
export function isLostPrimary(error: unknown): boolean {
  for (const cause of causes(error)) {
    if (cause instanceof NotPrimaryError) return true
    const code = codeOf(cause)
    if (cause instanceof pg.DatabaseError) return code !== undefined && LOST_PRIMARY_SQLSTATE.test(code)
    if (cause instanceof StoreUnavailableError) {
      if (cause.cause === undefined) return false
      continue
    }
    if (code !== undefined && NETWORK_CODES.has(code)) return true
    if (DRIVER_UNAVAILABLE.test(cause.message)) return true
  }
  return false
}

/** A pooled connection found its server in recovery or read-only: it is no longer the primary. */
export class NotPrimaryError extends Error {
  override readonly name = 'NotPrimaryError'
}

/** True for SQLSTATE 25006: the server refused the write before doing anything. */
export function isReadOnlyRefusal(error: unknown): boolean {
  for (const cause of causes(error)) if (codeOf(cause) === '25006') return true
  return false
}

/** Why a read on a replica failed: each sends that read to the primary and the replica to back-off. */
export type ReplicaFailure = 'conflict' | 'timeout' | 'unavailable' | 'error'

/**
 * SQLSTATEs of a statement a hot standby cancelled, or a session it ended, to replay WAL
 * (a recovery conflict): 40001 "canceling statement due to conflict with recovery" (snapshot,
 * lock, tablespace, buffer pin), 40P01 (a deadlock with the startup process), 57P04 (the
 * database was dropped on the primary).
 */
const RECOVERY_CONFLICT_SQLSTATE = new Set(['40001', '40P01', '57P04'])

/** pg-pool's and node-postgres's own timers: no connection in time, no answer in time. */
const DRIVER_TIMEOUT = /^(timeout exceeded when trying to connect|Query read timeout)/

export function replicaFailureOf(error: unknown): ReplicaFailure {
  for (const cause of causes(error)) {
    const code = codeOf(cause)
    if (cause instanceof pg.DatabaseError && code !== undefined) {
      if (RECOVERY_CONFLICT_SQLSTATE.has(code)) return 'conflict'
      if (code === '57014') return 'timeout'
    } else if (DRIVER_TIMEOUT.test(cause.message)) {
      return 'timeout'
    }
  }
  return isUnavailable(error) ? 'unavailable' : 'error'
}
