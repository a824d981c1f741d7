/**
 * Waiting before a retry: the Retry-After header (RFC 9110 section 10.2.3, delay-seconds
 * or an HTTP-date) and a sleep that an AbortSignal cuts short.
 */

/**
 * The longest delay one timer takes: setTimeout runs a longer one (2^31 ms and above, about
 * 24.8 days) at once, so longer waits are made of several timers.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** Milliseconds to wait, or null when the header is absent or unreadable. */
export function retryAfterMs(header: string | null, now: number = Date.now()): number | null {
  if (header === null) return null
  const value = header.trim()
  if (/^[0-9]+$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, date - now)
}

/**
 * Resolves once `ms` have passed, never sooner (a timer may fire a little early, and one
 * timer cannot span more than MAX_TIMER_MS: the rest is waited by the next), or rejects
 * with the signal's reason as soon as it aborts. `Infinity` waits until the abort.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error)
      return
    }
    const end = Date.now() + ms
    let timer: ReturnType<typeof setTimeout> | undefined
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason as Error)
    }
    const arm = () => {
      const left = end - Date.now()
      if (left > 0) {
        timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS))
        return
      }
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    arm()
  })
}
