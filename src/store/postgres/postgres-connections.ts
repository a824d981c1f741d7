import pg from 'pg'
import type { QueryConfig, QueryResult, QueryResultRow } from 'pg'
import { StoreUnavailableError } from '../store.js'
import {
  cannotConnect,
  describeTarget,
  isDeadConnection,
  isUnavailable,
  translate,
} from './postgres-errors.js'

/**
 * The connection pool of the PostgreSQL adapter and the only code that checks connections
 * out: every statement runs here, so every failure is translated (postgres-errors.ts) and
 * every broken connection is discarded rather than handed to the next request. The pool
 * then heals by itself: a new connection is opened on demand once the server is back.
 */

export interface PoolSettings {
  /** most connections this process holds */
  poolSize: number
  /** longest wait for a connection, new (TCP + startup + auth) or a free pooled one */
  connectTimeoutMs: number
  /** server-side statement_timeout */
  statementTimeoutMs: number
}

/**
 * The client-side query_timeout is the statement timeout plus this grace: on a live server
 * statement_timeout fires first and the connection survives; only a silent server (network
 * partition, frozen host) is left to the client-side timer, which costs the connection.
 */
export const CLIENT_TIMEOUT_GRACE_MS = 500

/** Idle pooled connections send TCP keepalives after this, so middleboxes keep them open. */
const KEEPALIVE_DELAY_MS = 10_000

function createPool(url: string, settings: PoolSettings): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: settings.poolSize,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    statement_timeout: settings.statementTimeoutMs,
    query_timeout: settings.statementTimeoutMs + CLIENT_TIMEOUT_GRACE_MS,
    // A transaction left open (a stalled process) must not hold the import's table locks.
    idle_in_transaction_session_timeout: settings.statementTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    // fallback_: an application_name given in the URL wins.
    fallback_application_name: 'folder-service',
  })
  // An idle connection closed by the server (restart, pg_terminate_backend, idle timeout)
  // is already removed from the pool when this fires; without a listener the 'error'
  // event would crash the process. Nothing to log: the next checkout opens a new one.
  pool.on('error', () => {})
  // A checked-out connection that dies between two statements emits 'error' too, and the
  // pool listens only while it is idle. Its next statement fails ("not queryable") and
  // the release below discards it.
  pool.on('connect', (client) => {
    client.on('error', () => {})
  })
  return pool
}

export type Client = pg.PoolClient

export class Connections {
  /** `host:port`, for messages: never the URL, which may hold a password */
  readonly target: string
  private readonly pool: pg.Pool
  private closing: Promise<void> | undefined
  /** statements sent (a transaction counts once), for /metrics: what the server was asked */
  statements = 0

  constructor(url: string, settings: PoolSettings) {
    this.target = describeTarget(url)
    this.pool = createPool(url, settings)
  }

  /**
   * Runs one statement. `retry`: the statement only reads, so when the pooled connection
   * turns out dead (the server restarted since it was opened) it runs once more on a fresh
   * one, and a server restart usually costs no request an error. Timeouts and refused
   * connections are never retried: they would only double the wait.
   */
  async query<R extends QueryResultRow>(
    query: QueryConfig,
    { retry }: { retry: boolean },
  ): Promise<QueryResult<R>> {
    try {
      return await this.once<R>(query)
    } catch (error) {
      // A failed checkout arrives as StoreUnavailableError: no pooled connection died,
      // the server could not be reached, and a second try would only wait as long again.
      if (!retry || error instanceof StoreUnavailableError || !isDeadConnection(error)) {
        throw translate(this.target, error)
      }
    }
    try {
      return await this.once<R>(query)
    } catch (error) {
      throw translate(this.target, error)
    }
  }

  private async once<R extends QueryResultRow>(query: QueryConfig): Promise<QueryResult<R>> {
    const client = await this.checkout()
    this.statements++
    try {
      const result = await client.query<R>(query)
      client.release()
      return result
    } catch (error) {
      // A statement the server refused leaves the connection usable; anything else
      // (lost connection, client-side timeout with the answer still due) does not.
      client.release(
        isUnavailable(error) || !(error instanceof pg.DatabaseError) ? toError(error) : undefined,
      )
      throw error
    }
  }

  /**
   * Runs `work` in one transaction on one connection: COMMIT when it resolves, ROLLBACK
   * when it throws (the error is rethrown unchanged, translated when it is an outage).
   */
  async transaction<T>(work: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.checkout()
    this.statements++
    // Reusable only after COMMIT or ROLLBACK succeeded: otherwise the session state is unknown.
    let reusable = false
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query('COMMIT')
      reusable = true
      return result
    } catch (error) {
      // After an outage the transaction dies with the discarded connection; a ROLLBACK
      // would only wait for another timeout.
      if (!isUnavailable(error)) {
        reusable = await client.query('ROLLBACK').then(
          () => true,
          () => false,
        )
      }
      throw translate(this.target, error)
    } finally {
      client.release(reusable ? undefined : new Error('connection state unknown after a failed transaction'))
    }
  }

  /** Ends every connection; resolves when they are closed. Safe to call more than once. */
  close(): Promise<void> {
    this.closing ??= this.pool.end()
    return this.closing
  }

  private async checkout(): Promise<Client> {
    if (this.closing !== undefined) throw new Error('the PostgreSQL store is closed')
    try {
      return await this.pool.connect()
    } catch (error) {
      throw cannotConnect(this.target, error)
    }
  }
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}
