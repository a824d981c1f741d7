/**
 * Finished listing answers (body, ETag, Link), least recently used first out, within a
 * byte budget.
 *
 * Correctness rests on the key, not on expiry: it holds the owner's listing generation,
 * which the database changes in the same transaction as any write that a listing of that
 * owner could show (see the generation migrations), and which is read with the session on
 * every request. A write therefore makes every older entry of that owner unreachable at
 * once, on every instance, whoever wrote; unreachable entries simply age out. Nothing about
 * authentication is cached: the session, its expiry and the frozen flag are read anew on
 * every request, before the cache is consulted.
 */

export interface CachedListing {
  /**
   * The body as UTF-8 bytes, encoded once: sent as a string, every answer was encoded
   * again on its way to the socket (a quarter of the service's CPU on cached answers).
   */
  body: Buffer
  etag: string
  link: string
}

/** The body counts its exact bytes; key, ETag and Link are ASCII, one byte a character. */
function sizeOf(key: string, entry: CachedListing): number {
  return key.length + entry.body.length + entry.etag.length + entry.link.length
}

export class ListingCache {
  /** Insertion order is recency order: a hit moves its entry to the end. */
  private readonly entries = new Map<string, CachedListing>()
  private bytes = 0

  /** @param maxBytes bound on the cached strings; 0 disables the cache. */
  constructor(private readonly maxBytes: number) {}

  get enabled(): boolean {
    return this.maxBytes > 0
  }

  /** Bytes held now (for tests and metrics). */
  get size(): number {
    return this.bytes
  }

  get(key: string): CachedListing | undefined {
    const entry = this.entries.get(key)
    if (entry !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, entry)
    }
    return entry
  }

  set(key: string, entry: CachedListing): void {
    const size = sizeOf(key, entry)
    if (size > this.maxBytes) return
    const previous = this.entries.get(key)
    if (previous !== undefined) this.forget(key, previous)
    this.entries.set(key, entry)
    this.bytes += size
    for (const [oldKey, oldEntry] of this.entries) {
      if (this.bytes <= this.maxBytes) break
      this.forget(oldKey, oldEntry)
    }
  }

  private forget(key: string, entry: CachedListing): void {
    this.entries.delete(key)
    this.bytes -= sizeOf(key, entry)
  }
}
