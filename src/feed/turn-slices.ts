/**
 * Work for many followers done a slice per turn of the event loop: what each item starts (a
 * wake's shared read and session check, a write to its socket) runs in that turn, so that
 * serving 10,000 followers is many short turns, between which timers, other requests and
 * the sockets' writes go on, rather than one stall of the loop as long as the whole task.
 */

/**
 * Followers served in one turn at most. 64 rather than 256: the same CPU a delivery, a
 * shorter longest turn; 32 measured no different (docs/performance.md "Fan-out").
 */
export const WAKE_SLICE = 64

/**
 * Calls `each` on `items` in order: items weighing WAKE_SLICE in this turn (at least one
 * item; `weight` counts the followers an item stands for, 1 by default), the rest in later
 * turns (setImmediate). `items` is read as it is then: pass a copy of what may change.
 */
export function inTurnSlices<T>(
  items: readonly T[],
  each: (item: T) => void,
  weight: (item: T) => number = () => 1,
  from = 0,
): void {
  let i = from
  for (let served = 0; i < items.length && served < WAKE_SLICE; i++) {
    const item = items[i] as T
    each(item)
    served += weight(item)
  }
  if (i < items.length) setImmediate(() => inTurnSlices(items, each, weight, i))
}
