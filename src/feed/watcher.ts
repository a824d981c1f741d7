import type { ChangeSignals, ServingStore } from '../store/store.js'
import { inTurnSlices } from './turn-slices.js'
import { activeTracing } from '../tracing/tracing.js'

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

/**
 * What a parked record wakes: told once how its wait ended and, when a change ended it, the
 * owner's generation that did (read on the primary: a read after the wake must be at least
 * that new, or a lagging replica could answer without the change). A method of the follower's
 * own state, so that parking and waking make no closure, promise or timer per follower.
 */
export interface Wakeable {
  woken(end: WaitEnd, generation: number | null): void
}

/** One parked follower: a record in its owner's set and in the deadline sweep's. */
class Waiter {
  /** once: a slice may still hold a record that was taken back or ended meanwhile */
  ended = false
  /** a held request's client: the wait ends 'gone', and its slot is released, once it left */
  client: HeldClient | null = null
  slot: Slot | null = null
  constructor(
    /** the session holding it */
    readonly holder: string,
    readonly ownerId: string,
    readonly baseline: number,
    /** epoch ms; the sweep ends the wait then */
    readonly deadline: number,
    readonly target: Wakeable,
  ) {}
}

/** The client of a held request as the watcher checks it: its socket, `destroyed` once it left. */
export interface HeldClient {
  readonly destroyed: boolean
}

/** A parked record, to take back with {@link Hold.unpark} (the client left). */
export type Parked = object

/** A waiter taken out by a poll, to be told of the generation that woke it. */
interface Woken {
  waiter: Waiter
  generation: number | null
}

/**
 * A hint about an owner nobody here waits for is kept this long (ms): a follower of that
 * owner that parks meanwhile may have read before the commit the hint was for, and is read
 * again at once rather than at the next read of every owner.
 */
const UNHEARD_HINT_MS = 2_000

/**
 * While hints name owners, a read of every owner comes no more often than this many times
 * its own last duration (and at least an interval apart): it is the safety net of a lost
 * hint, and at thousands of owners each costs milliseconds (docs/performance.md "Fan-out").
 */
const FULL_READ_SPACING = 50

/**
 * After a sweep, the next comes no sooner than this: a parked wait may end this much after
 * its deadline, so that many deadlines cost a few sweeps a second, not one sweep each.
 */
const SWEEP_GRAIN_MS = 250

/** One held request's slot: counted against the bound from {@link ChangeWatcher.hold} to release. */
export interface Hold {
  /**
   * Resolves when `ownerId`'s generation differs from `baseline`, at `deadline` (epoch ms),
   * when the client leaves, or when the watcher closes, whichever comes first. `client`: a
   * held request's socket, for which the wait is one record and its promise, no timer or
   * listener (the watcher finds a client gone when a slot is wanted, at its deadline sweep
   * and at a wake, and then releases the slot itself).
   */
  until(ownerId: string, baseline: number, deadline: number, client: HeldClient): Promise<WaitEnd>
  /**
   * The owner's generation that ended the last wait with 'changed' (read on the primary),
   * else null: a read after the wake must be at least that new, or a lagging replica could
   * answer without the change that woke it.
   */
  readonly wokenAt: number | null
  /**
   * {@link until} for a follower that keeps its own state and is its own record's target (an
   * event stream): `target` is told once, never within this call, how the wait ended. No
   * promise, timer or listener of its own: one small record in the owner's set, whose
   * deadline the watcher's one sweep timer ends; {@link unpark} takes it back (the client
   * left) without a wake. `wokenAt` is not kept: the target is told the generation.
   */
  parkTarget(ownerId: string, baseline: number, deadline: number, target: Wakeable): Parked
  /** Takes `parked` back without a wake (safe when it already ended). */
  unpark(parked: Parked): void
  release(): void
}

export class ChangeWatcher {
  private readonly byOwner = new Map<string, Set<Waiter>>()
  private holds = 0
  private readonly byHolder = new Map<string, number>()
  /** every waiter, for the deadline sweep */
  private readonly parked = new Set<Waiter>()
  private sweepTimer: NodeJS.Timeout | null = null
  private sweepAt = Infinity
  private sessionTimer: NodeJS.Timeout | null = null
  private checkingSessions = false
  private timer: NodeJS.Timeout | null = null
  private polling = false
  /** a hint came during a read, which may have missed its commit: read again right after */
  private again = false
  /** the owners named by hints since the last read began: the next read after a hint reads these alone */
  private hinted = new Set<string>()
  /** a hint named no owner (a commit of unknown effect): the next read reads every owner */
  private hintedAll = false
  /** when the last read of every owner began (epoch ms): one at least every interval, whatever the hints */
  private lastFullPoll = 0
  /** how long the last read of every owner took (ms) */
  private fullPollMs = 0
  /** owners hinted while nobody here waited for them, with when (epoch ms; UNHEARD_HINT_MS) */
  private readonly unheard = new Map<string, number>()
  private closed = false
  private readonly signals: ChangeSignals | null
  /** traced (src/tracing/): reads kept out of requests' traces, each wake a span of its own */
  private readonly wakes = activeTracing()?.wakes()

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
    if (ownerId !== null && !this.byOwner.has(ownerId)) {
      // Its follower may be reading now and park after: it is read again then (register).
      this.unheard.delete(ownerId)
      this.unheard.set(ownerId, Date.now())
      return
    }
    if (ownerId === null) this.hintedAll = true
    else this.hinted.add(ownerId)
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
    if (this.full(holder)) {
      // Clients that left while held free their slots now, before anyone is refused.
      this.endDeparted()
      if (this.full(holder)) return null
    }
    this.holds++
    this.byHolder.set(holder, (this.byHolder.get(holder) ?? 0) + 1)
    return new Slot(this, holder)
  }

  private full(holder: string): boolean {
    const held = this.byHolder.get(holder) ?? 0
    return this.holds >= this.options.maxWaiters || held >= this.options.maxPerHolder
  }

  /** `slot`'s place given back (once, by the slot). */
  releaseSlot(slot: Slot): void {
    this.holds--
    const left = (this.byHolder.get(slot.holder) ?? 1) - 1
    if (left === 0) this.byHolder.delete(slot.holder)
    else this.byHolder.set(slot.holder, left)
  }

  /**
   * Ends with 'gone' the waits whose client left (its socket destroyed), releasing their
   * slots at once: what a listener per held request would do, done when a slot is wanted,
   * at the deadline sweep and at a wake.
   */
  private endDeparted(): void {
    for (const waiter of [...this.parked]) if (waiter.client?.destroyed === true) this.depart(waiter)
  }

  private depart(waiter: Waiter): void {
    this.settle(waiter, 'gone', null)
    waiter.slot?.release()
  }

  /** Ends every wait with 'closed' and refuses to park from now on (shutdown). */
  close(): void {
    this.closed = true
    for (const waiters of [...this.byOwner.values()])
      for (const waiter of [...waiters]) this.settle(waiter, 'closed', null)
    this.stop()
    this.stopSweep()
    this.stopSessionChecks()
    this.signals?.pause()
  }

  /** `slot`'s wait for a held request of a client: see {@link Hold.until}. */
  wait(
    slot: Slot,
    ownerId: string,
    baseline: number,
    deadline: number,
    client: HeldClient,
  ): Promise<WaitEnd> {
    if (this.closed) return Promise.resolve('closed')
    if (client.destroyed) return Promise.resolve('gone')
    return new Promise<WaitEnd>((resolve) => {
      slot.resolve = resolve
      const waiter = this.parkRecord(slot.holder, ownerId, baseline, deadline, slot)
      waiter.client = client
      waiter.slot = slot
    })
  }

  /** A record for `target` in the owner's set and the deadline sweep's (closed: woken 'closed' soon). */
  parkRecord(holder: string, ownerId: string, baseline: number, deadline: number, target: Wakeable): Waiter {
    const waiter = new Waiter(holder, ownerId, baseline, deadline, target)
    if (this.closed) {
      waiter.ended = true
      queueMicrotask(() => target.woken('closed', null))
      return waiter
    }
    this.register(waiter)
    this.sweepBy(deadline)
    return waiter
  }

  /** Ends `waiter` once: out of the sets, then its target told. */
  private settle(waiter: Waiter, end: WaitEnd, generation: number | null): void {
    if (waiter.ended) return
    waiter.ended = true
    this.unregister(waiter)
    waiter.target.woken(end, generation)
  }

  /** Takes `parked` back without a wake. */
  unpark(parked: Parked): void {
    if (!(parked instanceof Waiter) || parked.ended) return
    parked.ended = true
    this.unregister(parked)
  }

  /**
   * Ends the waits of `woken` with `end`: all out of the sets at once, so that a poll or a
   * sweep while the later slices wait cannot end them twice, then woken in slices.
   */
  private wake(woken: readonly Woken[], end: 'changed' | 'session'): void {
    for (const { waiter } of woken) this.unregister(waiter)
    // A record whose client left while it waited for its slice departs instead.
    inTurnSlices(woken, ({ waiter, generation }) => {
      if (waiter.client?.destroyed === true) this.depart(waiter)
      else this.settle(waiter, end, generation)
    })
  }

  private register(waiter: Waiter): void {
    let waiters = this.byOwner.get(waiter.ownerId)
    if (waiters === undefined) {
      waiters = new Set()
      this.byOwner.set(waiter.ownerId, waiters)
    }
    waiters.add(waiter)
    this.parked.add(waiter)
    this.signals?.resume()
    this.schedule()
    this.scheduleSessionChecks()
    // A commit of this owner was hinted while nobody waited for it: perhaps after the read
    // this follower parks on; its generation is read now, not at the next read of every owner.
    const hinted = this.unheard.get(waiter.ownerId)
    if (hinted !== undefined) {
      this.unheard.delete(waiter.ownerId)
      if (Date.now() - hinted < UNHEARD_HINT_MS) this.nudge(waiter.ownerId)
    }
  }

  /** Takes `waiter` out of both sets (safe twice); with nobody left waiting, nothing runs. */
  private unregister(waiter: Waiter): void {
    const waiters = this.byOwner.get(waiter.ownerId)
    if (waiters?.delete(waiter) === true && waiters.size === 0) this.byOwner.delete(waiter.ownerId)
    if (this.parked.delete(waiter) && this.parked.size === 0) this.stopSweep()
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
      const holders = [...byHolder.keys()]
      const refused = await (this.wakes?.detached(() => sweep.refused(holders)) ?? sweep.refused(holders))
      const ended: Woken[] = []
      for (const holder of refused) {
        for (const waiter of byHolder.get(holder) ?? []) ended.push({ waiter, generation: null })
      }
      this.wake(ended, 'session')
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
      if (waiter.client?.destroyed === true) this.depart(waiter)
      else if (waiter.deadline <= now) this.settle(waiter, 'timeout', null)
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

  /**
   * The owners one read of the generations covers: after hints that named owners (PostgreSQL's
   * NOTIFY, SQLite's commit hints), those alone, so that the commits arriving during one read
   * are read together in the next, one statement for the owners they moved rather than for
   * every owner held; every owner at the interval, after a hint that named none, and while
   * hints keep coming at least once an interval or FULL_READ_SPACING times that read's last
   * duration, whichever is longer (a lost hint costs latency, never a missed change).
   */
  private ownersToRead(): string[] {
    const now = Date.now()
    const hinted = this.hinted
    this.hinted = new Set()
    const spacing = Math.max(this.options.intervalMs, FULL_READ_SPACING * this.fullPollMs)
    const all = this.hintedAll || hinted.size === 0 || now - this.lastFullPoll >= spacing
    this.hintedAll = false
    this.forgetUnheard(now)
    if (all) {
      this.lastFullPoll = now
      return [...this.byOwner.keys()]
    }
    return [...hinted].filter((ownerId) => this.byOwner.has(ownerId))
  }

  /** The unheard hints older than UNHEARD_HINT_MS let go (the oldest are first). */
  private forgetUnheard(now: number): void {
    for (const [ownerId, at] of this.unheard) {
      if (now - at < UNHEARD_HINT_MS) break
      this.unheard.delete(ownerId)
    }
  }

  private async poll(): Promise<void> {
    this.timer = null
    this.polling = true
    try {
      const owners = this.ownersToRead()
      if (owners.length === 0) return
      const full = owners.length === this.byOwner.size && owners.length > 1
      const began = performance.now()
      const read = () => this.store.ownerGenerations(owners)
      const generations = await (this.wakes?.detached(read) ?? read())
      if (full) this.fullPollMs = performance.now() - began
      const woken: Woken[] = []
      for (const ownerId of owners) {
        const now = generations.get(ownerId)
        for (const waiter of this.byOwner.get(ownerId) ?? []) {
          // A vanished owner wakes too: its requests then answer whatever the feed says.
          if (now !== waiter.baseline) woken.push({ waiter, generation: now ?? null })
        }
      }
      if (this.wakes === undefined || woken.length === 0) this.wake(woken, 'changed')
      else {
        const targets = woken.map(({ waiter }) => waiter.target)
        this.wakes.woke(targets, began, () => this.wake(woken, 'changed'))
      }
    } catch (error) {
      this.options.onError?.(error)
    } finally {
      this.polling = false
      this.schedule()
    }
  }
}

/**
 * One held request's slot ({@link Hold}): fields and methods, no closures, and the target
 * of its own waits' records (a long-poll's {@link Hold.until}).
 */
class Slot implements Hold, Wakeable {
  wokenAt: number | null = null
  /** the pending {@link until}'s promise, while one waits */
  resolve: ((end: WaitEnd) => void) | null = null
  private released = false

  constructor(
    private readonly watcher: ChangeWatcher,
    readonly holder: string,
  ) {}

  // Not async: a held request awaits the wait itself, one suspended frame fewer per hold.
  until(ownerId: string, baseline: number, deadline: number, client: HeldClient): Promise<WaitEnd> {
    this.wokenAt = null
    return this.watcher.wait(this, ownerId, baseline, deadline, client)
  }

  woken(end: WaitEnd, generation: number | null): void {
    this.wokenAt = generation
    const resolve = this.resolve
    this.resolve = null
    resolve?.(end)
  }

  parkTarget(ownerId: string, baseline: number, deadline: number, target: Wakeable): Parked {
    return this.watcher.parkRecord(this.holder, ownerId, baseline, deadline, target)
  }

  unpark(parked: Parked): void {
    this.watcher.unpark(parked)
  }

  release(): void {
    if (this.released) return
    this.released = true
    this.watcher.releaseSlot(this)
  }
}
