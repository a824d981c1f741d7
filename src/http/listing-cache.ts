import { RecencyMap } from '../recency-map.js'

/**
 * Finished listing answers (body, ETag, Link), least recently used first out, within a
 * byte budget, so that a repeated request costs no Store read, serialisation or hashing.
 *
 * Correctness rests on the key, not on expiry: the route files each answer under the
 * listing's `listingKey`, which holds the owner's listing generation; a write makes every
 * older entry of that owner unreachable at once, and unreachable entries simply age out.
 * Nothing about authentication is cached: the session, its expiry and the frozen flag are
 * read anew on every request, before the cache is consulted.
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
  /** the answers within the byte budget, least recently used out first */
  private readonly entries: RecencyMap<string, CachedListing>

  /** @param maxBytes bound on the cached strings; 0 disables the cache. */
  constructor(private readonly maxBytes: number) {
    this.entries = new RecencyMap(maxBytes, sizeOf)
  }

  get enabled(): boolean {
    return this.maxBytes > 0
  }

  /** Bytes held now (for tests and metrics). */
  get size(): number {
    return this.entries.weight
  }

  /** The answer filed under `key`, made the most recently used. */
  get(key: string): CachedListing | undefined {
    return this.entries.touch(key)
  }

  /** Files `entry` under `key`, unless the cache was cleared since `era` (see era). */
  set(key: string, entry: CachedListing, era = this.era): void {
    if (era !== this.era) return
    this.entries.set(key, entry)
  }

  /**
   * Drops every entry, and refuses entries read before the drop (see era): the primary
   * moved, and what it vouched for no longer counts.
   */
  clear(): void {
    this.entries.clear()
    this.era++
  }

  /**
   * Counts clear() calls: a caller notes it before its reads and hands it to set, so an
   * answer read before a clear is never filed after it.
   */
  era = 0
}
