import type { ChangeSignals, ServingStore } from '../store/store.js'

/**
 * The process's one watcher of owners' listing generations, for held (long-poll) requests of
 * the changes feed. Waiters are keyed by owner; while any exist, it reads the generations of
 * all waited-on owners in ONE statement per interval and wakes exactly the waiters whose
 * owner's generation is no longer the one they parked on. With no one waiting it does
 * nothing at all (no timer). Holds are bounded per process and per holder (a session), so
 * one client cannot take every connection (docs/api.md "Wait"); past either bound
 * {@link hold} says no.
 *
 * The store's commit hints (NOTIFY, data_version) make it read at once ({@link nudge})
 * rather than at the next interval; the interval stays, so a lost hint costs latency only.
 */

/**
 * How a wait ended: a change (read the feed), the time ran out, the client left, shutdown, or
 * its session no longer passes the checks (answer the problem; see {@link SessionSweep}).
 */
export type WaitEnd = 'changed' | 'timeout' | 'gone' | 'closed' | 'session'

/**
 * The held requests' sessions read again while they wait (docs/api.md "Wait"): a revoke, an
 * expiry or a freeze writes nothing to the feeds' log, so without this a held request would
 * learn of it only when its wait ends. Every `everyMs` while anything is held, the sessions
 * holding are read in statements of many (never one each), and the waits of those refused
 * end with 'session'; with nothing held, no timer runs.
 */
export interface SessionSweep {
  everyMs: number
  /** of `holders` (session ids), those whose session a request would now be refused for */
  refused(holders: readonly string[]): Promise<ReadonlySet<string>>
}

export interface WatcherOptions {
  /** time between two reads of the generations */
  intervalMs: number
  /** holds allowed at once in this process */
  maxWaiters: number
  /** holds one holder (a session) may have at once */
  maxPerHolder: number
  /** told about a failed read (the watcher keeps going and reads again next interval) */
  onError?: (error: unknown) => void
  /** the store's commit hints, given the watcher's nudge (absent: the interval alone) */
  signals?: (nudge: (ownerId: string | null) => void) => ChangeSignals | null
  /** the held sessions read again while they wait (absent: only when a wait ends) */
  sessions?: SessionSweep
}

interface Waiter {
  ownerId: string
  /** the session holding it */
  holder: string
  baseline: number
  settle: (end: WaitEnd, generation?: number) => void
}

/** A waiter parked by its caller ({@link Hold.park}): the sweep ends it at its deadline. */
interface Parked extends Waiter {
  /** epoch ms */
  deadline: number
}

/** A waiter taken out by a poll, to be told of the generation that woke it. */
interface Woken {
  waiter: Waiter
  generation: number | undefined
}

/**
 * Waiters woken in one turn of the event loop at most: what each does next (its shared read,
 * its session check, its write) runs in that turn, so a wake of 10,000 followers is many
 * short turns, between which timers, other requests and the sockets' writes go on, rather
 * than one stall of the loop as long as the whole wake.
 */
export const WAKE_SLICE = 256

function wakeInSlices(woken: readonly Woken[], from: number, end: 'changed' | 'session' = 'changed'): void {
  const to = Math.min(woken.length, from + WAKE_SLICE)
  for (let i = from; i < to; i++) {
    const { waiter, generation } = woken[i] as Woken
    waiter.settle(end, generation)
  }
  if (to < woken.length) setImmediate(() => wakeInSlices(woken, to, end))
}

/**
 * After a sweep, the next comes no sooner than this: a parked wait may end this much after
 * its deadline, so that many deadlines cost a few sweeps a second, not one sweep each.
 */
const SWEEP_GRAIN_MS = 250

/** One held request's slot: counted against the bound from {@link ChangeWatcher.hold} to release. */
export interface Hold {
  /**
   * Resolves when `ownerId`'s generation differs from `baseline`, at `deadline` (epoch ms),
   * when `signal` aborts, or when the watcher closes, whichever comes first.
   */
  until(ownerId: string, baseline: number, deadline: number, signal: AbortSignal): Promise<WaitEnd>
  /**
   * The owner's generation that ended the last wait with 'changed' (read on the primary),
   * else null: a read after the wake must be at least that new, or a lagging replica could
   * answer without the change that woke it.
   */
  readonly wokenAt: number | null
  /**
   * {@link until} for a caller that keeps its own state (an event stream): `wake` is called
   * once, never within this call, with how the wait ended. No promise, timer or listener of
   * its own: one small record in the owner's set, whose deadline the watcher's one sweep
   * timer ends. The returned function takes the record back (the client left) without a wake.
   */
  park(ownerId: string, baseline: number, deadline: number, wake: (end: WaitEnd) => void): () => void
  release(): void
}

export class ChangeWatcher {
  private readonly byOwner = new Map<string, Set<Waiter>>()
  private holds = 0
  private readonly byHolder = new Map<string, number>()
  /** the waiters parked by their callers, for the deadline sweep */
  private readonly parked = new Set<Parked>()
  private sweepTimer: NodeJS.Timeout | null = null
  private sweepAt = Infinity
  private sessionTimer: NodeJS.Timeout | null = null
  private checkingSessions = false
  private timer: NodeJS.Timeout | null = null
  private polling = false
  /** a hint came during a read, which may have missed its commit: read again right after */
  private again = false
  private closed = false
  private readonly signals: ChangeSignals | null

  constructor(
    private readonly store: Pick<ServingStore, 'ownerGenerations'>,
    private readonly options: WatcherOptions,
  ) {
    this.signals = options.signals?.((ownerId) => this.nudge(ownerId)) ?? null
  }

  /**
   * A commit may have changed `ownerId`'s generation (null: any owner's): read the
   * generations now. Hints about owners nobody here waits for cost nothing.
   */
  nudge(ownerId: string | null): void {
    if (this.closed || this.byOwner.size === 0) return
    if (ownerId !== null && !this.byOwner.has(ownerId)) return
    if (this.polling) {
      this.again = true
      return
    }
    this.stop()
    void this.poll()
  }

  /** Holds in use (for tests and metrics). */
  get size(): number {
    return this.holds
  }

  /** Whether held requests are still accepted (false once shutdown began). */
  get open(): boolean {
    return !this.closed
  }

  /**
   * A slot for one held request of `holder`, or null when the process, or that holder, holds
   * its maximum already.
   */
  hold(holder: string): Hold | null {
    const held = this.byHolder.get(holder) ?? 0
    if (this.holds >= this.options.maxWaiters || held >= this.options.maxPerHolder) return null
    this.holds++
    this.byHolder.set(holder, held + 1)
    let released = false
    let wokenAt: number | null = null
    return {
      // Not async: a held request awaits the park itself, one suspended frame fewer per hold.
      until: (ownerId, baseline, deadline, signal) => {
        wokenAt = null
        return this.park(holder, ownerId, baseline, deadline, signal, (generation) => {
          wokenAt = generation
        })
      },
      get wokenAt() {
        return wokenAt
      },
      park: (ownerId, baseline, deadline, wake) => {
        wokenAt = null
        return this.parkRecord(holder, ownerId, baseline, deadline, wake, (generation) => {
          wokenAt = generation
        })
      },
      release: () => {
        if (released) return
        released = true
        this.holds--
        const left = (this.byHolder.get(holder) ?? 1) - 1
        if (left === 0) this.byHolder.delete(holder)
        else this.byHolder.set(holder, left)
      },
    }
  }

  /** Ends every wait with 'closed' and refuses to park from now on (shutdown). */
  close(): void {
    this.closed = true
    for (const waiters of this.byOwner.values()) for (const waiter of waiters) waiter.settle('closed')
    this.stop()
    this.stopSweep()
    this.stopSessionChecks()
    this.signals?.pause()
  }

  private park(
    holder: string,
    ownerId: string,
    baseline: number,
    deadline: number,
    signal: AbortSignal,
    woken: (generation: number) => void,
  ): Promise<WaitEnd> {
    if (this.closed) return Promise.resolve('closed')
    if (signal.aborted) return Promise.resolve('gone')
    return new Promise<WaitEnd>((resolve) => {
      const onAbort = () => waiter.settle('gone')
      const timeout = setTimeout(() => waiter.settle('timeout'), Math.max(0, deadline - Date.now()))
      let ended = false
      const waiter: Waiter = {
        ownerId,
        holder,
        baseline,
        settle: (end, generation) => {
          // Once: a slice may still hold a waiter that its client's leaving already ended.
          if (ended) return
          ended = true
          if (generation !== undefined) woken(generation)
          clearTimeout(timeout)
          signal.removeEventListener('abort', onAbort)
          this.unregister(waiter)
          resolve(end)
        },
      }
      signal.addEventListener('abort', onAbort, { once: true })
      this.register(waiter)
    })
  }

  private parkRecord(
    holder: string,
    ownerId: string,
    baseline: number,
    deadline: number,
    wake: (end: WaitEnd) => void,
    woken: (generation: number) => void,
  ): () => void {
    if (this.closed) {
      queueMicrotask(() => wake('closed'))
      return () => undefined
    }
    let ended = false
    const waiter: Parked = {
      ownerId,
      holder,
      baseline,
      deadline,
      settle: (end, generation) => {
        // Once: a slice may still hold a record taken back meanwhile (the client left).
        if (ended) return
        ended = true
        if (generation !== undefined) woken(generation)
        this.unregister(waiter)
        wake(end)
      },
    }
    this.register(waiter)
    this.parked.add(waiter)
    this.sweepBy(deadline)
    return () => {
      ended = true
      this.unregister(waiter)
    }
  }

  private register(waiter: Waiter): void {
    let waiters = this.byOwner.get(waiter.ownerId)
    if (waiters === undefined) {
      waiters = new Set()
      this.byOwner.set(waiter.ownerId, waiters)
    }
    waiters.add(waiter)
    this.signals?.resume()
    this.schedule()
    this.scheduleSessionChecks()
  }

  /** Takes `waiter` out (safe twice); with nobody left waiting, nothing runs. */
  private unregister(waiter: Waiter): void {
    const waiters = this.byOwner.get(waiter.ownerId)
    if (waiters?.delete(waiter) === true && waiters.size === 0) this.byOwner.delete(waiter.ownerId)
    if (this.parked.delete(waiter as Parked) && this.parked.size === 0) this.stopSweep()
    if (this.byOwner.size === 0) {
      this.stop()
      this.stopSessionChecks()
      this.signals?.pause()
    }
  }

  private scheduleSessionChecks(): void {
    const sweep = this.options.sessions
    if (sweep === undefined || this.sessionTimer !== null || this.checkingSessions) return
    if (this.closed || this.byOwner.size === 0) return
    this.sessionTimer = setTimeout(() => {
      this.sessionTimer = null
      void this.checkSessions(sweep)
    }, sweep.everyMs)
  }

  private stopSessionChecks(): void {
    if (this.sessionTimer !== null) clearTimeout(this.sessionTimer)
    this.sessionTimer = null
  }

  /** Ends with 'session' the waits whose session is now refused; the rest wait on. */
  private async checkSessions(sweep: SessionSweep): Promise<void> {
    this.checkingSessions = true
    const byHolder = new Map<string, Waiter[]>()
    for (const waiters of this.byOwner.values()) {
      for (const waiter of waiters) {
        const held = byHolder.get(waiter.holder)
        if (held === undefined) byHolder.set(waiter.holder, [waiter])
        else held.push(waiter)
      }
    }
    try {
      const refused = await sweep.refused([...byHolder.keys()])
      const ended: Woken[] = []
      for (const holder of refused) {
        for (const waiter of byHolder.get(holder) ?? []) ended.push({ waiter, generation: undefined })
      }
      for (const { waiter } of ended) this.unregister(waiter)
      wakeInSlices(ended, 0, 'session')
    } catch (error) {
      // An outage: the checks at the end of each wait still hold; try again next time.
      this.options.onError?.(error)
    } finally {
      this.checkingSessions = false
      this.scheduleSessionChecks()
    }
  }

  private sweepBy(deadline: number): void {
    if (this.sweepTimer !== null && this.sweepAt <= deadline) return
    this.stopSweep()
    this.sweepAt = deadline
    this.sweepTimer = setTimeout(() => this.sweep(), Math.max(0, deadline - Date.now()))
  }

  private sweep(): void {
    this.sweepTimer = null
    this.sweepAt = Infinity
    const now = Date.now()
    let next = Infinity
    for (const waiter of [...this.parked]) {
      if (waiter.deadline <= now) waiter.settle('timeout')
      else next = Math.min(next, waiter.deadline)
    }
    if (next !== Infinity && this.parked.size > 0) this.sweepBy(Math.max(next, now + SWEEP_GRAIN_MS))
  }

  private stopSweep(): void {
    if (this.sweepTimer !== null) clearTimeout(this.sweepTimer)
    this.sweepTimer = null
    this.sweepAt = Infinity
  }

  private schedule(): void {
    if (this.timer !== null || this.polling || this.closed || this.byOwner.size === 0) return
    const delay = this.again ? 0 : this.options.intervalMs
    this.again = false
    this.timer = setTimeout(() => void this.poll(), delay)
  }

  private stop(): void {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }

  private async poll(): Promise<void> {
    this.timer = null
    this.polling = true
    try {
      const owners = [...this.byOwner.keys()]
      if (owners.length === 0) return
      const generations = await this.store.ownerGenerations(owners)
      const woken: Woken[] = []
      for (const ownerId of owners) {
        const now = generations.get(ownerId)
        for (const waiter of this.byOwner.get(ownerId) ?? []) {
          // A vanished owner wakes too: its requests then answer whatever the feed says.
          if (now !== waiter.baseline) woken.push({ waiter, generation: now })
        }
      }
      // Out at once, so that a poll while the later slices wait cannot wake them twice.
      for (const { waiter } of woken) this.unregister(waiter)
      wakeInSlices(woken, 0)
    } catch (error) {
      this.options.onError?.(error)
    } finally {
      this.polling = false
      this.schedule()
    }
  }
}
