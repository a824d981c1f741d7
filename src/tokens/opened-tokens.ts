/**
 * The payloads of the tokens sealed or opened last, by token: opening one again costs a map
 * lookup instead of an AES-GCM decryption. Every follower of one feed sends (or, as an event
 * stream, goes on from) the cursor of the same answer, so one commit made every follower
 * decrypt the same token: about an eighth of the service's CPU for a wake of event streams.
 * A token is remembered with the key and binding it was sealed for, and opens from here only
 * under exactly those, so what it yields is what decrypting it would yield. First in, first
 * out, at most {@link OPENED_TOKENS} tokens (under 200 KB).
 */

export const OPENED_TOKENS = 1024

interface Opened {
  key: Buffer
  binding: string
  plain: Buffer
}

const opened = new Map<string, Opened>()

/** Remembers `token` as sealing `plain` under `key` for `binding` (a copy: the caller keeps its buffer). */
export function rememberToken(key: Buffer, token: string, binding: string, plain: Buffer): void {
  if (opened.has(token)) return
  if (opened.size >= OPENED_TOKENS) {
    const oldest = opened.keys().next()
    if (oldest.done !== true) opened.delete(oldest.value)
  }
  opened.set(token, { key, binding, plain: Buffer.from(plain) })
}

/** The payload `token` was remembered with, when remembered under this very `key` and `binding`. */
export function recallToken(key: Buffer, token: string, binding: string): Buffer | null {
  const entry = opened.get(token)
  if (entry === undefined || entry.key !== key || entry.binding !== binding) return null
  // a copy: callers may keep views into it
  return Buffer.from(entry.plain)
}
