/**
 * A Map bounded to `capacity` entries whose order is recency: what was set or touched last is
 * kept longest, the least recent goes first when a set would exceed the bound. The service's
 * small bounded maps (failed sign-ins per address, sealed changes cursors per folder) are
 * this; a Map in recency order measured cheaper than a general LRU library for them
 * (`npm run bench:lru`).
 */
export class RecencyMap<K, V> {
  private readonly entries = new Map<K, V>()

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.entries.size
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

  /** Sets `key` as the most recent; past the capacity the least recent goes. */
  set(key: K, value: V): void {
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next()
      if (oldest.done !== true) this.entries.delete(oldest.value)
    }
  }

  delete(key: K): void {
    this.entries.delete(key)
  }

  clear(): void {
    this.entries.clear()
  }
}
