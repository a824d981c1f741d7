/**
 * Finished listing responses (body, ETag, Link), reused while the database is unchanged.
 *
 * Correctness rests on the Store's dataVersion(): a value that changes whenever anything is
 * committed, by this process or any other. The version is read before the data, and the
 * whole cache is dropped the moment it differs, so a response is never older than the
 * database it is served against. Authentication is not cached: the session, its expiry and
 * the frozen flag are checked on every request before the cache is consulted. Backends that
 * cannot tell cheaply whether anything changed (PostgreSQL, written to by other instances)
 * offer no version, and nothing is cached for them.
 */

export interface CachedListing {
  body: string
  etag: string
  link: string
}

function sizeOf(key: string, entry: CachedListing): number {
  return key.length + entry.body.length + entry.etag.length + entry.link.length
}

export class ListingCache {
  private version: string | undefined
  private readonly entries = new Map<string, CachedListing>()
  private bytes = 0

  /**
   * @param maxBytes bound on the cached strings, counted one byte per character (V8 keeps
   * Latin-1 strings, which most listings are, at one byte a character); 0 disables.
   */
  constructor(private readonly maxBytes: number) {}

  get enabled(): boolean {
    return this.maxBytes > 0
  }

  /** The entry for `key` if it was made at `version`; any other version empties the cache. */
  get(version: string, key: string): CachedListing | undefined {
    if (version !== this.version) {
      this.entries.clear()
      this.bytes = 0
      this.version = version
      return undefined
    }
    const entry = this.entries.get(key)
    if (entry !== undefined) {
      // Least recently used goes first: refresh this one's place.
      this.entries.delete(key)
      this.entries.set(key, entry)
    }
    return entry
  }

  /** Keeps an entry made from data read at `version` (read before the data). */
  set(version: string, key: string, entry: CachedListing): void {
    if (version !== this.version) return
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
