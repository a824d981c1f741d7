import net from 'node:net'
import pg from 'pg'

/**
 * The connections' manners behind a connection pooler in transaction mode
 * (DATABASE_POOLER=transaction, CONTRACT 17: PgBouncer, RDS Proxy, Supavisor). Consecutive
 * transactions of one client connection may run on different server connections, so nothing
 * may outlive a transaction, and a stock PgBouncer refuses every startup parameter but a few:
 *
 * - no named statements (SessionlessClient): a name prepared on one server connection is
 *   unknown on the next (26000) or already taken there by another client (42P05);
 * - no startup parameters: the statement timeout is set inside each transaction
 *   (`SET LOCAL`, in the same round trip as its BEGIN) and, for a statement on its own, kept
 *   by the client, which asks the server to cancel the statement (a CancelRequest, which a
 *   pooler passes on to the server the statement runs on) when it runs out;
 * - no LISTEN and no session advisory lock through the pooler: LISTEN goes to
 *   DATABASE_DIRECT_URL or is not made (postgres-store.ts); the migrations' lock is
 *   transaction-scoped already.
 *
 * Measured (docs/performance.md): wrapping every lone statement in BEGIN/SET LOCAL/COMMIT
 * costs two more round trips a statement; the client-kept timeout costs nothing until it
 * fires.
 */

/** A statement's config without its name, so the server prepares it unnamed, for this use only. */
function unnamed(config: unknown): unknown {
  if (typeof config !== 'object' || config === null) return config
  // A submittable (pg-copy-streams' COPY) is passed on as it is: it names no statement.
  if (typeof (config as { submit?: unknown }).submit === 'function') return config
  if ((config as { name?: unknown }).name === undefined) return config
  return { ...config, name: undefined }
}

/**
 * The pool's client behind a transaction pooler: every statement is sent unnamed (Parse,
 * Bind and Execute in one round trip, as a statement with parameters always is), whatever
 * the caller's config names it, so the store's statements stay written once for both paths.
 */
export class SessionlessClient extends pg.Client {
  // One signature for pg's overloads: the arguments are passed on unchanged but the name.
  override query(...args: unknown[]): never {
    const [config, ...rest] = args
    return (pg.Client.prototype.query as (...passed: unknown[]) => never).call(this, unnamed(config), ...rest)
  }
}

/**
 * What opens a transaction: BEGIN, and behind a transaction pooler the session settings a
 * direct connection gets at startup, made local to the transaction, in the same round trip.
 */
export function beginStatement(pooled: boolean, statementTimeoutMs: number): string {
  if (!pooled) return 'BEGIN'
  const ms = Math.trunc(statementTimeoutMs)
  // A transaction left open (a stalled process) must not hold the import's table locks.
  return `BEGIN; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms}`
}

/** The cancel key the server (or the pooler) gave the connection at startup; pg keeps it untyped. */
interface CancelKey {
  host: string
  port: number
  processID: number | null
  secretKey: number | null
}

/** The protocol's CancelRequest code (1234 5678). */
const CANCEL_REQUEST_CODE = 80877102

/**
 * Asks the server to cancel the statement `client` is running: a CancelRequest on a new
 * connection to the same address, as libpq's PQcancel sends it. Resolves once the server
 * (or the pooler) has acted on it and closed that connection, or after `timeoutMs`; never
 * rejects: the client-side timer that follows still ends the wait.
 */
function sendCancel(client: pg.Client, timeoutMs: number): Promise<void> {
  const { host, port, processID, secretKey } = client as unknown as CancelKey
  if (processID === null || secretKey === null) return Promise.resolve()
  const packet = Buffer.alloc(16)
  packet.writeInt32BE(16, 0)
  packet.writeInt32BE(CANCEL_REQUEST_CODE, 4)
  packet.writeInt32BE(processID, 8)
  packet.writeInt32BE(secretKey, 12)
  return new Promise((resolve) => {
    const socket = host.startsWith('/')
      ? net.connect(`${host}/.s.PGSQL.${port}`)
      : net.connect({ host, port })
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve()
    }
    const timer = setTimeout(done, timeoutMs)
    // Written, not ended: the server (or pooler) closes once it has acted on it, as libpq waits
    // for. A client that closes first crashes PgBouncer 1.18 (its cancel client is freed while
    // still linked: "bad client state: 0", fixed in 1.20).
    socket.on('connect', () => socket.write(packet))
    socket.on('end', done)
    socket.on('error', done)
    socket.on('close', done)
    // The server answers nothing: it reads the request and closes.
    socket.resume()
  })
}

/**
 * The statement timeout of a lone statement behind a transaction pooler: after `ms`, the
 * server is asked to cancel it (it then fails with 57014, as statement_timeout would).
 * `stop()` says whether the cancel was sent, once it has been acted on: the connection is
 * then not reused (a cancel that arrived late could hit its next statement), and is closed
 * only after the pooler is done with the cancel.
 */
export function cancelAfter(
  client: pg.Client,
  ms: number,
  connectTimeoutMs: number,
): { stop(): Promise<boolean> } {
  let cancelling: Promise<void> | undefined
  const timer = setTimeout(() => {
    cancelling = sendCancel(client, connectTimeoutMs)
  }, ms)
  return {
    async stop() {
      clearTimeout(timer)
      if (cancelling === undefined) return false
      await cancelling
      return true
    },
  }
}
