import pg from 'pg'

/**
 * The LISTEN side of the change notifications (migration 011: the users table's triggers
 * NOTIFY the owner's id on CHANGES_CHANNEL when its listing generation changes, delivered at
 * commit). One dedicated connection per process, outside the pool: a pooled connection is
 * handed to other statements, and LISTEN belongs to a session. When the connection is lost it
 * is opened again with growing pauses, and once listening again it reports a commit of
 * unknown owner, since notifications sent meanwhile are gone. Behind a pooler in transaction
 * mode (PgBouncer) a LISTEN succeeds but nothing arrives, so there it goes to
 * DATABASE_DIRECT_URL, or is not made and the poll alone wakes followers (postgres-store.ts).
 */

const CHANGES_CHANNEL = 'folder_service_changes'

const FIRST_RETRY_MS = 250
const LAST_RETRY_MS = 10_000

export interface ListenerOptions {
  /** an owner's generation changed (its id), or anything may have (null: after a reconnect) */
  onCommit: (ownerId: string | null) => void
  /** the connection failed or was lost: its server may no longer be the primary */
  onLost?: () => void
  connectTimeoutMs: number
}

export class ChangeListener {
  private client: pg.Client | null = null
  private retryMs = FIRST_RETRY_MS
  private retry: NodeJS.Timeout | null = null
  private started = false
  private closed = false

  /** the client listening now, and how to drop it (a reconnect follows at once) */
  private drop: (() => void) | null = null

  constructor(
    /** where to listen: the primary's URL, found anew at each connect */
    private readonly locate: () => Promise<string>,
    private readonly options: ListenerOptions,
  ) {}

  /** Connects and listens, once; later calls do nothing. */
  start(): void {
    if (this.started || this.closed) return
    this.started = true
    void this.connect()
  }

  /** Ends the connection and every retry; safe to call twice. */
  async close(): Promise<void> {
    this.closed = true
    if (this.retry !== null) clearTimeout(this.retry)
    const client = this.client
    this.client = null
    await client?.end().catch(() => undefined)
  }

  private scheduleRetry(): void {
    if (this.closed) return
    this.retry = setTimeout(() => void this.connect(), this.retryMs)
    this.retry.unref()
    this.retryMs = Math.min(this.retryMs * 2, LAST_RETRY_MS)
  }

  /**
   * The primary moved: the connection (or the next attempt, after its back-off) goes to the
   * new one at once. Commits on the new primary before LISTEN are covered by the unknown-owner
   * hint sent once listening again.
   */
  reconnect(): void {
    if (!this.started || this.closed) return
    this.retryMs = FIRST_RETRY_MS
    if (this.drop !== null) {
      this.drop()
      return
    }
    if (this.retry !== null) {
      clearTimeout(this.retry)
      this.retry = null
      void this.connect()
    }
  }

  private async connect(): Promise<void> {
    this.retry = null
    let url: string
    try {
      url = await this.locate()
    } catch {
      this.scheduleRetry()
      return
    }
    if (this.closed) return
    const client = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: this.options.connectTimeoutMs,
      keepAlive: true,
      fallback_application_name: 'folder-service (listen)',
    })
    let lost = false
    // Not reported: the poll still wakes followers, so a lost connection costs latency only.
    const onLost = () => {
      if (lost) return
      lost = true
      if (this.client === client) {
        this.client = null
        this.drop = null
      }
      void client.end().catch(() => undefined)
      this.options.onLost?.()
      this.scheduleRetry()
    }
    client.on('error', onLost)
    client.on('end', onLost)
    client.on('notification', (message) => {
      if (message.channel === CHANGES_CHANNEL) this.options.onCommit(message.payload ?? null)
    })
    try {
      await client.connect()
      await client.query(`LISTEN ${CHANGES_CHANNEL}`)
    } catch {
      onLost()
      return
    }
    if (this.closed) {
      await client.end().catch(() => undefined)
      return
    }
    this.client = client
    this.drop = onLost
    this.retryMs = FIRST_RETRY_MS
    // Whatever committed while no connection listened was not heard.
    this.options.onCommit(null)
  }
}
