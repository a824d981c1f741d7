/**
 * How often a follower of a feed may ask (docs/client.md "Pacing"): never again at once
 * after an answer that came back empty before its `wait` ran out (a draining or broken
 * service answers so at once, and asking again at once would flood it), and after repeated
 * 410s only after growing, jittered pauses (a service whose owner is reset over and over by
 * imports must not be listed thousands of times a second by every follower at once).
 */

/** The pause after an empty answer that came back before its wait ran out. */
export const EARLY_EMPTY_PAUSE_MS = 1_000

/** True when an answer asked to be held `waitSeconds` came back empty and sooner than that. */
export function cameBackEarly(
  body: { changes: readonly unknown[]; has_more: boolean },
  waitSeconds: number,
  elapsedMs: number,
): boolean {
  return waitSeconds > 0 && !body.has_more && body.changes.length === 0 && elapsedMs < waitSeconds * 1000
}

export interface BackoffOptions {
  /** the pause after the second failure in a row (the first is not paused) */
  firstMs?: number
  /** the longest pause */
  capMs?: number
  /** a number in [0, 1); defaults to Math.random */
  random?: () => number
}

/**
 * Growing pauses for failures in a row: none after the first (one 410 is routine: the
 * retention ran out), then about firstMs, 2 firstMs, 4 firstMs ... up to capMs. Each pause
 * is drawn between half and all of its step ("equal jitter"), so followers reset together
 * spread out, and never come back sooner than half the step.
 */
export class Backoff {
  readonly #firstMs: number
  readonly #capMs: number
  readonly #random: () => number
  #failures = 0

  constructor(options: BackoffOptions = {}) {
    this.#firstMs = options.firstMs ?? 1_000
    this.#capMs = options.capMs ?? 60_000
    this.#random = options.random ?? Math.random
  }

  /** Records a failure; the pause to take before trying again (ms). */
  failed(): number {
    this.#failures++
    if (this.#failures === 1) return 0
    const step = Math.min(this.#capMs, this.#firstMs * 2 ** Math.min(this.#failures - 2, 30))
    return step / 2 + (this.#random() * step) / 2
  }

  succeeded(): void {
    this.#failures = 0
  }
}
