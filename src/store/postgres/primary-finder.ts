import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { StoreUnavailableError } from '../store.js'
import type { PrimaryChange, PrimaryStats } from '../failover-stats.js'
import type { DatabaseHost, HostList } from '../../database-url/host-list.js'
import { reasonOf } from './postgres-errors.js'
import { activeTracing } from '../../tracing/tracing.js'

/**
 * Finds the primary among the hosts of a multi-host DATABASE_URL, as libpq does with
 * `target_session_attrs` (node-postgres takes one host only): the hosts are tried in order,
 * each on a short-lived connection, and the first that answers (`any`), or the first that is
 * not in recovery and not read-only (`read-write`), is the primary until a statement on it
 * says otherwise (isLostPrimary). Then the next caller starts a search, which repeats a pass
 * over the hosts every PASS_PAUSE_MS until a primary answers (every SLOW_PASS_PAUSE_MS once
 * the outage is long), so that the service is back as soon as the database is, with or
 * without callers; every caller waits for it up to its own deadline. One search at a time,
 * however many callers wait.
 */

/** Pause between passes once no primary has been known for LONG_OUTAGE_MS: fewer probes. */
const SLOW_PASS_PAUSE_MS = 500
const LONG_OUTAGE_MS = 30_000

/** node-postgres's error when it asked for SSL and the server has none */
const NO_SSL = 'does not support SSL'

/** Pause between two passes over the hosts while none is the primary. */
const PASS_PAUSE_MS = 100

/** What makes a host the primary under `read-write`; the same check libpq makes. */
export const PRIMARY_ROLE = `SELECT pg_is_in_recovery() AS recovery,
                                    current_setting('transaction_read_only') = 'on' AS read_only`

export interface RoleRow {
  recovery: boolean
  read_only: boolean
}

/** Why a server is not a usable primary, or null when it is. */
export function roleProblem(row: RoleRow | undefined): string | null {
  if (row === undefined) return 'no answer to the role check'
  if (row.recovery) return 'in recovery (a standby)'
  if (row.read_only) return 'read-only'
  return null
}

export class PrimaryFinder {
  private current: DatabaseHost | null = null
  /** the primary before the one lost, for the change line */
  private previous: DatabaseHost | null = null
  private search: Promise<void> | null = null
  private lastReasons = 'not searched yet'
  private lostAt: number | null = null
  private changes = 0
  private totalWithoutPrimaryMs = 0
  private closed = false
  private readonly listeners = new Set<(change: PrimaryChange) => void>()

  constructor(
    private readonly list: HostList,
    private readonly connectTimeoutMs: number,
  ) {}

  /** `host:port` of every host, for messages */
  get targets(): string {
    return this.list.hosts.map((host) => host.target).join(',')
  }

  /**
   * The primary, found first when none is known. Rejects with StoreUnavailableError (naming
   * each host's reason, never a password) once `deadline` (Date.now() time) has passed
   * without one; a search already under way goes on for other callers.
   */
  async find(deadline: number): Promise<DatabaseHost> {
    if (this.current !== null) return this.current
    if (this.closed) throw new Error('the PostgreSQL store is closed')
    this.search ??= this.searchPasses().finally(() => {
      this.search = null
    })
    // Traced, the wait is a span of the statement that waits (src/tracing/).
    const wait = activeTracing()?.primaryWait(this.targets)
    const remaining = deadline - Date.now()
    if (remaining > 0) {
      const timer = new AbortController()
      await Promise.race([
        this.search,
        sleep(remaining, undefined, { signal: timer.signal }).catch(() => undefined),
      ])
      timer.abort()
    }
    wait?.end(this.stats().primary)
    if (this.current !== null) return this.current
    throw new StoreUnavailableError(`no PostgreSQL primary among ${this.targets}: ${this.lastReasons}`)
  }

  /** A statement on `host` said it is gone or no longer the primary: the next caller searches. */
  lost(host: DatabaseHost): void {
    if (this.current !== host) return
    this.previous = host
    this.current = null
    this.lostAt = Date.now()
  }

  /** Called with each change of primary host (not the first one found). */
  onChange(listener: (change: PrimaryChange) => void): void {
    this.listeners.add(listener)
  }

  stats(): PrimaryStats {
    return {
      primary: this.current?.target ?? null,
      changes: this.changes,
      withoutPrimaryMs: this.totalWithoutPrimaryMs + this.withoutPrimaryMs(),
    }
  }

  /** How long no primary has been known (ms): 0 while one is. */
  withoutPrimaryMs(): number {
    return this.lostAt === null ? 0 : Date.now() - this.lostAt
  }

  close(): void {
    this.closed = true
  }

  private async searchPasses(): Promise<void> {
    while (!this.closed) {
      const reasons: string[] = []
      for (const host of this.list.hosts) {
        const problem = await this.probe(host)
        if (problem === null) {
          this.settle(host)
          return
        }
        reasons.push(`${host.target} ${problem}`)
      }
      this.lastReasons = reasons.join('; ')
      await sleep(this.withoutPrimaryMs() < LONG_OUTAGE_MS ? PASS_PAUSE_MS : SLOW_PASS_PAUSE_MS)
    }
  }

  private settle(host: DatabaseHost): void {
    const now = Date.now()
    const withoutPrimaryMs = this.lostAt === null ? 0 : now - this.lostAt
    this.totalWithoutPrimaryMs += withoutPrimaryMs
    this.lostAt = null
    this.current = host
    const from = this.previous
    if (from === null || from === host) return
    this.changes++
    for (const listener of this.listeners) listener({ from: from.target, to: host.target, withoutPrimaryMs })
  }

  /**
   * null when `host` serves as the primary; else why not, in a few words. With
   * sslmode=prefer, a server without SSL is tried again without it, as libpq does, and the
   * host keeps the URL that worked.
   */
  private async probe(host: DatabaseHost): Promise<string | null> {
    const problem = await this.probeUrl(host.url)
    if (host.plainUrl === undefined || problem === null || !problem.includes(NO_SSL)) return problem
    const plain = await this.probeUrl(host.plainUrl)
    if (!plain?.startsWith('unreachable')) host.url = host.plainUrl
    return plain
  }

  private async probeUrl(url: string): Promise<string | null> {
    const client = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: this.connectTimeoutMs,
      query_timeout: this.connectTimeoutMs,
      fallback_application_name: 'folder-service (primary finder)',
    })
    // A probe's connection may die at any moment; the failure is its answer, not a crash.
    client.on('error', () => undefined)
    try {
      await client.connect()
      if (this.list.attrs === 'any') return null
      const { rows } = await client.query<RoleRow>(PRIMARY_ROLE)
      return roleProblem(rows[0])
    } catch (error) {
      return `unreachable (${reasonOf(error)})`
    } finally {
      void client.end().catch(() => undefined)
    }
  }
}
