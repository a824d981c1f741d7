/**
 * What a backend that follows a moving primary reports (ServingStore.primaryFailover and
 * onPrimaryChange): for /metrics, the one log line per change, and the listing cache, which
 * drops what the old primary vouched for.
 */

export interface PrimaryChange {
  /** `host:port` of the primary before (never a password) */
  from: string
  to: string
  /** how long no primary was known before this one was found (ms) */
  withoutPrimaryMs: number
}

export interface PrimaryStats {
  /** the primary in use, or null while none is known */
  primary: string | null
  /** changes of primary host since start */
  changes: number
  /** time spent without a known primary since start (ms), the ongoing stretch included */
  withoutPrimaryMs: number
}
