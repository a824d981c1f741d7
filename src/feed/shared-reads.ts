/**
 * Reads shared by the followers one commit wakes (many clients following the same feed from
 * the same point): the first woken follower's read, by what it asks, serves every other
 * follower woken by the same generation, and its answer object is theirs too, so that the
 * serialisation, the event frame and the session checks after it are made once
 * (session-recheck.ts). Only woken followers share, and only with reads asked for the same
 * generation (the key holds it): such a read began after the wake, so it is at least as new
 * as the commit that woke them all, which is all a woken follower's answer must be. A read
 * begun before a commit may miss it; a fresh request never shares.
 *
 * A read is kept for {@link SHARED_READ_MS} after it began, not just while in flight: the
 * watcher wakes a large group in slices (watcher.ts), and the later slices must find the read
 * of the first. A failed read is forgotten at once, so the next follower reads again.
 */

export const SHARED_READ_MS = 2_000

export class SharedReads<T> {
  /** by key, in the order they began (a Map keeps insertion order), so the oldest are first */
  private readonly reads = new Map<string, { began: number; read: Promise<T> }>()

  /** `read()`'s promise, or the one begun for `key` within the last SHARED_READ_MS. */
  share(key: string, read: () => Promise<T>): Promise<T> {
    const now = Date.now()
    for (const [oldKey, old] of this.reads) {
      if (now - old.began < SHARED_READ_MS) break
      this.reads.delete(oldKey)
    }
    const kept = this.reads.get(key)
    if (kept !== undefined) return kept.read
    const begun = read()
    const entry = { began: now, read: begun }
    this.reads.set(key, entry)
    begun.catch(() => {
      if (this.reads.get(key) === entry) this.reads.delete(key)
    })
    return begun
  }
}
