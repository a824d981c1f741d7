import { createHash } from 'node:crypto'

/** Test ids: readable ones that sort by a number, and well-spread ones derived from a label. */

/** `prefix-0000-4000-8000-<n as 12 hex digits>`: readable ids whose byte order follows n. */
export function uuid(prefix: string, n: number): string {
  return `${prefix}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
}

/** A well-spread, deterministic UUID (v4 layout) derived from a label. */
export function hashedUuid(label: string): string {
  const h = createHash('sha256').update(label).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`
}
