/**
 * A Map bounded by `capacity` whose order is recency: what was set or touched last is kept
 * longest, the least recent goes first when a set would exceed the bound. The bound counts
 * entries, or with `weigh` the sum of the entries' weights (the listing cache's bytes). Every
 * recency-ordered bound of the service is one of these: the listing cache's answers, the
 * listings' checkpoints, failed sign-ins per address, sealed changes cursors per folder.
 *
 * A general LRU library (`lru-cache`) measured faster per operation (docs/design.md
 * "Dependencies and why": `npm run bench:lru`), by fractions of a microsecond on paths that
 * read the database or send an answer besides; this Map in recency order is kept instead of a
 * runtime dependency whose edge cases differ (a zero capacity, an entry over the bound).
 */
export class RecencyMap<K, V> {
  private readonly entries = new Map<K, V>()
  private held = 0

  /**
   * @param capacity the bound: a number of entries, or with `weigh` a total weight
   * @param weigh an entry's share of the capacity, when entries are not counted alike
   */
  constructor(
    readonly capacity: number,
    private readonly weigh?: (key: K, value: V) => number,
  ) {}

  /** Entries held now. */
  get size(): number {
    return this.entries.size
  }

  /** The capacity used now: the entries' total weight, or their count. */
  get weight(): number {
    return this.weigh === undefined ? this.entries.size : this.held
  }

  /** The value of `key`, without making it more recent. */
  peek(key: K): V | undefined {
    return this.entries.get(key)
  }

  /** The value of `key`, made the most recent. */
  touch(key: K): V | undefined {
    const value = this.entries.get(key)
    if (value !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, value)
    }
    return value
  }

  /**
   * Sets `key` as the most recent; past the capacity the least recent go. An entry that alone
   * weighs more than the capacity is not kept, and what `key` held stays as it was.
   */
  set(key: K, value: V): void {
    if (this.weigh === undefined) {
      this.entries.delete(key)
      this.entries.set(key, value)
      if (this.entries.size > this.capacity) {
        const oldest = this.entries.keys().next()
        if (oldest.done !== true) this.entries.delete(oldest.value)
      }
      return
    }
    const weight = this.weigh(key, value)
    if (weight > this.capacity) return
    this.delete(key)
    this.entries.set(key, value)
    this.held += weight
    for (const [oldKey, oldValue] of this.entries) {
      if (this.held <= this.capacity) break
      this.entries.delete(oldKey)
      this.held -= this.weigh(oldKey, oldValue)
    }
  }

  delete(key: K): void {
    if (this.weigh !== undefined) {
      const value = this.entries.get(key)
      if (value !== undefined) this.held -= this.weigh(key, value)
    }
    this.entries.delete(key)
  }

  clear(): void {
    this.entries.clear()
    this.held = 0
  }
}
