import pg from 'pg'
import type { QueryConfig, QueryResult, QueryResultRow } from 'pg'
import { StoreUnavailableError } from '../store.js'
import { parseHostList, type DatabaseHost } from '../../database-url/host-list.js'
import {
  cannotConnect,
  isDeadConnection,
  isLostPrimary,
  isPoolerMisuse,
  isReadOnlyRefusal,
  isUnavailable,
  NotPrimaryError,
  translate,
} from './postgres-errors.js'
import { PRIMARY_ROLE, PrimaryFinder, roleProblem, type RoleRow } from './primary-finder.js'
import { beginStatement, cancelAfter, SessionlessClient } from './transaction-pooler.js'
import { activeTracing, type DatabaseServer, type Tracing } from '../../tracing/tracing.js'

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
  /**
   * What the URL reaches (DATABASE_POOLER): the server (`none`, the default), or a pooler
   * in transaction mode, through which nothing may outlive a transaction (transaction-pooler.ts)
   */
  pooler?: 'none' | 'transaction'
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
  // Behind a transaction pooler the session settings are not startup parameters (a stock
  // PgBouncer refuses them): each transaction sets them (beginStatement), and a lone
  // statement's timeout is kept by the client (Connections.once).
  const session =
    settings.pooler === 'transaction'
      ? { Client: SessionlessClient }
      : {
          statement_timeout: settings.statementTimeoutMs,
          // A transaction left open (a stalled process) must not hold the import's table locks.
          idle_in_transaction_session_timeout: settings.statementTimeoutMs,
        }
  const pool = new pg.Pool({
    connectionString: url,
    max: settings.poolSize,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    query_timeout: settings.statementTimeoutMs + CLIENT_TIMEOUT_GRACE_MS,
    ...session,
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

/** A pool on one server, and that server's `host:port` for messages. */
interface HostPool {
  host: DatabaseHost
  pool: pg.Pool
}

export interface FollowSettings {
  /** how long a statement waits for a primary to be found (FAILOVER_WAIT_MS) */
  failoverWaitMs: number
}

export class Connections {
  /** `host:port` (each host's, comma-separated), for messages: never the URL, which may hold a password */
  readonly target: string
  /** one server for good: a single-host URL without target_session_attrs (as it always was) */
  private readonly fixed: HostPool | undefined
  /** a host list (or read-write): the primary is found, and followed when it moves */
  private readonly finder: PrimaryFinder | undefined
  private active: HostPool | undefined
  /** pooled connections of `active` already seen to be on the primary (read-write only) */
  private readonly verified = new WeakSet<Client>()
  private closing: Promise<void> | undefined
  /** statements sent (a transaction counts once), for /metrics: what the server was asked */
  statements = 0
  /** behind a pooler in transaction mode (PoolSettings.pooler) */
  private readonly pooled: boolean
  /** what opens a transaction (beginStatement) */
  private readonly begin: string

  constructor(
    url: string,
    private readonly settings: PoolSettings,
    private readonly follow: FollowSettings = { failoverWaitMs: 0 },
    /** what these servers are to the service, as a statement's span says (a replica's pool, or the primary's) */
    role: DatabaseServer['role'] = 'primary',
  ) {
    this.pooled = settings.pooler === 'transaction'
    this.begin = beginStatement(this.pooled, settings.statementTimeoutMs)
    const list = parseHostList(url)
    this.target = list.hosts.map((host) => host.target).join(',')
    const [only] = list.hosts
    if (!list.follows && only !== undefined) {
      this.fixed = { host: only, pool: createPool(only.url, settings) }
    } else {
      this.finder = new PrimaryFinder(list, settings.connectTimeoutMs)
      this.requirePrimary = list.attrs === 'read-write'
    }
    // Traced (src/tracing/): each statement and transaction in a span; off, nothing changes here.
    const tracing = activeTracing()
    if (tracing !== null) this.traceStatements(tracing, role)
  }

  /** Runs every statement and transaction inside a span naming it and its server (never the URL). */
  private traceStatements(tracing: Tracing, role: DatabaseServer['role']): void {
    const servers = new WeakMap<DatabaseHost, DatabaseServer>()
    const server = (host: DatabaseHost): DatabaseServer => {
      let known = servers.get(host)
      if (known === undefined) {
        known = { target: host.target, database: databaseOf(host.url), role }
        servers.set(host, known)
      }
      return known
    }
    const once = this.once.bind(this)
    this.once = (at, query) => tracing.statement(statementName(query), server(at.host), () => once(at, query))
    const transactionOn = this.transactionOn.bind(this)
    this.transactionOn = (at, work) =>
      tracing.statement('transaction', server(at.host), () => transactionOn(at, work))
  }

  private readonly requirePrimary: boolean = false

  /** The primary finder's counters and changes; undefined on a single fixed server. */
  get primary(): PrimaryFinder | undefined {
    return this.finder
  }

  /**
   * Runs one statement. `retry`: the statement only reads. On one fixed server, when the
   * pooled connection turns out dead (the server restarted since it was opened) it runs once
   * more on a fresh one, so a server restart usually costs no request an error; timeouts and
   * refused connections are never retried there: they would only double the wait. Following
   * a primary, a read (or a write the server refused as read-only, which did nothing) cut off
   * by a lost primary runs again on the primary found next, until FAILOVER_WAIT_MS is spent.
   */
  async query<R extends QueryResultRow>(
    query: QueryConfig,
    { retry }: { retry: boolean },
  ): Promise<QueryResult<R>> {
    if (this.fixed !== undefined) return this.fixedQuery(this.fixed, query, retry)
    return this.followQuery(query, retry, Date.now() + this.follow.failoverWaitMs)
  }

  private async followQuery<R extends QueryResultRow>(
    query: QueryConfig,
    retry: boolean,
    deadline: number,
  ): Promise<QueryResult<R>> {
    for (;;) {
      // No wait past FAILOVER_WAIT_MS after the primary was lost, however long this statement
      // queued first (session lookups wait for a batch): the request's budget, not the statement's.
      const budget = Date.now() - (this.finder?.withoutPrimaryMs() ?? 0) + this.follow.failoverWaitMs
      const active = await this.primaryPool(Math.min(deadline, budget))
      try {
        return await this.once<R>(active, query)
      } catch (error) {
        if (!isLostPrimary(error)) throw translate(active.host.target, error)
        this.lost(active)
        if (!(retry || isReadOnlyRefusal(error)) || Date.now() >= deadline) {
          throw translate(active.host.target, error)
        }
      }
    }
  }

  private async fixedQuery<R extends QueryResultRow>(
    fixed: HostPool,
    query: QueryConfig,
    retry: boolean,
  ): Promise<QueryResult<R>> {
    try {
      return await this.once<R>(fixed, query)
    } catch (error) {
      // A failed checkout arrives as StoreUnavailableError: no pooled connection died,
      // the server could not be reached, and a second try would only wait as long again.
      if (!retry || error instanceof StoreUnavailableError || !isDeadConnection(error)) {
        throw translate(this.target, error)
      }
    }
    try {
      return await this.once<R>(fixed, query)
    } catch (error) {
      throw translate(this.target, error)
    }
  }

  private async once<R extends QueryResultRow>(at: HostPool, query: QueryConfig): Promise<QueryResult<R>> {
    const client = await this.checkout(at)
    this.statements++
    const timeout = this.pooled
      ? cancelAfter(client, this.settings.statementTimeoutMs, this.settings.connectTimeoutMs)
      : undefined
    try {
      const result = await client.query<R>(query)
      client.release((await timeout?.stop()) === true ? CANCEL_SENT : undefined)
      return result
    } catch (error) {
      // A statement the server refused leaves the connection usable; anything else (lost
      // connection, client-side timeout with the answer still due, a cancel sent that may
      // still arrive, statement names out of step with a pooler) does not.
      const cancelled = (await timeout?.stop()) === true
      client.release(
        cancelled || isUnavailable(error) || isPoolerMisuse(error) || !(error instanceof pg.DatabaseError)
          ? toError(error)
          : undefined,
      )
      throw error
    }
  }

  /**
   * Runs `work` in one transaction on one connection: COMMIT when it resolves, ROLLBACK
   * when it throws (the error is rethrown unchanged, translated when it is an outage).
   * Never run again: `work` may have consumed its input (an import's stream). Cut off by a
   * lost primary, the transaction never committed, and the finder looks again for the next.
   */
  async transaction<T>(work: (client: Client) => Promise<T>): Promise<T> {
    const at = this.fixed ?? (await this.primaryPool(Date.now() + this.follow.failoverWaitMs))
    return this.transactionOn(at, work)
  }

  private async transactionOn<T>(at: HostPool, work: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.checkout(at)
    this.statements++
    // Reusable only after COMMIT or ROLLBACK succeeded: otherwise the session state is unknown.
    let reusable = false
    try {
      await client.query(this.begin)
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
      // Statement names out of step with a pooler's server connections: not reused either.
      if (isPoolerMisuse(error)) reusable = false
      if (this.finder !== undefined && isLostPrimary(error)) this.lost(at)
      throw translate(at.host.target, error)
    } finally {
      client.release(reusable ? undefined : new Error('connection state unknown after a failed transaction'))
    }
  }

  /**
   * Readiness: `statement` answered by the server in use, at once. Following a primary, a
   * search for one still inside FAILOVER_WAIT_MS counts as ready (requests wait for it and
   * are served); only once a wait has run out without a primary is the answer "unavailable".
   */
  async ping(statement: QueryConfig): Promise<void> {
    if (this.finder === undefined) {
      await this.query(statement, { retry: true })
      return
    }
    try {
      await this.followQuery(statement, true, Date.now())
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || error.timedOut) throw error
      if (this.finder.withoutPrimaryMs() >= this.follow.failoverWaitMs) throw error
    }
  }

  /** Waits up to `ms` for a server to use (the primary, when following one); throws 503 else. */
  async ready(ms: number): Promise<void> {
    if (this.fixed === undefined) await this.primaryPool(Date.now() + ms)
  }

  /** The single-host URL of the server statements go to now (the primary, found first if need be). */
  async primaryUrl(): Promise<string> {
    const at = this.fixed ?? (await this.primaryPool(Date.now() + this.follow.failoverWaitMs))
    return at.host.url
  }

  /**
   * A session on the server in use (the LISTEN connection) failed or was lost: following a
   * primary, the next use looks for it again, since it may have moved.
   */
  sessionLost(): void {
    if (this.active !== undefined) this.lost(this.active)
  }

  /** Ends every connection; resolves when they are closed. Safe to call more than once. */
  close(): Promise<void> {
    this.finder?.close()
    this.closing ??= (this.fixed ?? this.active)?.pool.end() ?? Promise.resolve()
    return this.closing
  }

  /**
   * The pool on the primary, found first when none is known: a new host gets a new pool,
   * and the old host's pool is ended (its connections are on a server that lost its role).
   */
  private async primaryPool(deadline: number): Promise<HostPool> {
    if (this.finder === undefined) throw new Error('no primary finder on a fixed server')
    const host = await this.finder.find(deadline)
    if (this.closing !== undefined) throw new Error('the PostgreSQL store is closed')
    const active = this.active
    if (active?.host === host) return active
    const next = { host, pool: createPool(host.url, this.settings) }
    this.active = next
    void active?.pool.end().catch(() => undefined)
    return next
  }

  private lost(at: HostPool): void {
    this.finder?.lost(at.host)
  }

  private async checkout(at: HostPool): Promise<Client> {
    if (this.closing !== undefined) throw new Error('the PostgreSQL store is closed')
    let client: Client
    try {
      client = await at.pool.connect()
    } catch (error) {
      throw cannotConnect(at.host.target, error)
    }
    if (!this.requirePrimary || this.verified.has(client)) return client
    // A new connection: the host may have been demoted since the finder chose it (libpq
    // checks each connection the same way under target_session_attrs=read-write).
    try {
      const { rows } = await client.query<RoleRow>(PRIMARY_ROLE)
      const problem = roleProblem(rows[0])
      if (problem !== null) throw new NotPrimaryError(`PostgreSQL at ${at.host.target} is ${problem}`)
    } catch (error) {
      client.release(toError(error))
      throw error instanceof NotPrimaryError
        ? new StoreUnavailableError(error.message, { cause: error })
        : error
    }
    this.verified.add(client)
    return client
  }
}

/** Why a connection whose statement outlived its timeout is not reused. */
const CANCEL_SENT = new Error('a cancel request was sent on this connection')
/** A statement as its span names it: its prepared name, else its first keyword (never its text). */
function statementName(query: QueryConfig): string {
  return query.name ?? /^\s*([a-z]+)/i.exec(query.text)?.[1]?.toUpperCase() ?? 'statement'
}

/** The database a single-host URL names (its path), for spans; '' when it names none. */
function databaseOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.slice(1))
  } catch {
    return ''
  }
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}
