import { UsageError } from './run-command.js'

/** `30d`, `12h`, `15m`, `90s` -> milliseconds (`session add --ttl`, README, "Command line"). */

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const MAX_MS = 100 * 365 * UNIT_MS.d!

export function parseDuration(text: string): number {
  const match = /^([1-9][0-9]*)([smhd])$/.exec(text)
  const ms = match === null ? NaN : Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? NaN)
  if (!(ms > 0 && ms <= MAX_MS)) {
    throw new UsageError(
      `--ttl must be a positive duration such as 30d, 12h, 15m or 90s (at most 100 years), got '${text}'`,
    )
  }
  return ms
}
