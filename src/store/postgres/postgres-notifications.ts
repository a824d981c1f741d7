import pg from 'pg'

/**
 * The LISTEN side of the change notifications (migration 011: the users table's triggers
 * NOTIFY the owner's id on CHANGES_CHANNEL when its listing generation changes, delivered at
 * commit). One dedicated connection per process, outside the pool: a pooled connection is
 * handed to other statements, and LISTEN belongs to a session. When the connection is lost it
 * is opened again with growing pauses, and once listening again it reports a commit of
 * unknown owner, since notifications sent meanwhile are gone. Behind a pooler in transaction
 * mode (PgBouncer) the LISTEN succeeds but nothing arrives: the poll alone wakes followers.
 */

const CHANGES_CHANNEL = 'folder_service_changes'

const FIRST_RETRY_MS = 250
const LAST_RETRY_MS = 10_000

export interface ListenerOptions {
  /** an owner's generation changed (its id), or anything may have (null: after a reconnect) */
  onCommit: (ownerId: string | null) => void
  connectTimeoutMs: number
}

export class ChangeListener {
  private client: pg.Client | null = null
  private retryMs = FIRST_RETRY_MS
  private retry: NodeJS.Timeout | null = null
  private started = false
  private closed = false

  constructor(
    private readonly url: string,
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

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: this.options.connectTimeoutMs,
      keepAlive: true,
      fallback_application_name: 'folder-service (listen)',
    })
    let lost = false
    // Not reported: the poll still wakes followers, so a lost connection costs latency only.
    const onLost = () => {
      if (lost) return
      lost = true
      if (this.client === client) this.client = null
      void client.end().catch(() => undefined)
      if (this.closed) return
      this.retry = setTimeout(() => void this.connect(), this.retryMs)
      this.retry.unref()
      this.retryMs = Math.min(this.retryMs * 2, LAST_RETRY_MS)
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
    this.retryMs = FIRST_RETRY_MS
    // Whatever committed while no connection listened was not heard.
    this.options.onCommit(null)
  }
}
