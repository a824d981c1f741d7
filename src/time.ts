/**
 * Timestamps travel as epoch milliseconds inside the service and as RFC 3339 UTC strings
 * with millisecond precision and `Z` outside it (docs/api.md, "200 body" and "Headers of a 200").
 */

const DAY_MS = 86_400_000

// Four-digit years only, so every stored instant formats back as RFC 3339.
const MIN_MS = new Date('0001-01-01T00:00:00.000Z').getTime()
const MAX_MS = new Date('9999-12-31T23:59:59.999Z').getTime()
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

/**
 * Parses an RFC 3339 date-time with a UTC offset into epoch ms (sub-millisecond digits are
 * truncated, so both backends store the same instant). null for anything else, including
 * impossible dates such as February 30th and years outside 0001-9999.
 */
export function parseTimestamp(text: string): number | null {
  const m = RFC3339.exec(text)
  if (m === null) return null
  // Plain arithmetic rather than a Date per timestamp: an import parses two a record, and
  // the Date setters were a fifth of the reader's CPU.
  const year = Number(m[1])
  const month = Number(m[2])
  const day = Number(m[3])
  const hour = Number(m[4])
  const minute = Number(m[5])
  const second = Number(m[6])
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'))
  if (year < 1 || month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return null
  if (day < 1 || day > daysInMonth(year, month)) return null
  let offsetMinutes = 0
  if (m[8] === undefined) {
    const sign = m[9] === '-' ? -1 : 1
    const offH = Number(m[10])
    const offM = Number(m[11])
    if (offH > 23 || offM > 59) return null
    offsetMinutes = sign * (offH * 60 + offM)
  }
  const ms =
    daysFromCivil(year, month, day) * DAY_MS +
    hour * 3_600_000 +
    minute * 60_000 +
    second * 1000 +
    millis -
    offsetMinutes * 60_000
  return ms >= MIN_MS && ms <= MAX_MS ? ms : null
}

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28
}

/** Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear
  return era * 146_097 + dayOfEra - 719_468
}

const pad2 = (n: number) => (n < 10 ? '0' : '') + String(n)
const pad3 = (n: number) => (n < 10 ? '00' : n < 100 ? '0' : '') + String(n)
const pad4 = (n: number) => (n < 10 ? '000' : n < 100 ? '00' : n < 1000 ? '0' : '') + String(n)

/** `YYYY-MM-DDT` of a day counted from 1970-01-01 (H. Hinnant's civil_from_days). */
function datePrefix(days: number): string {
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const dayOfEra = z - era * 146_097
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  )
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153)
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  return `${pad4(year)}-${pad2(month)}-${pad2(day)}T`
}

let cachedDay = NaN
let cachedDayPrefix = ''

/**
 * Exactly `new Date(ms).toISOString()` for the four-digit years the service stores, in
 * plain arithmetic: a page of 50 folders formats 100 timestamps, and a Date per timestamp
 * was a tenth of the request's CPU. The date part of the previous call is kept, since
 * folders of one page are often from the same day.
 */
export function formatTimestamp(ms: number): string {
  const day = Math.floor(ms / DAY_MS)
  if (day !== cachedDay) {
    cachedDay = day
    cachedDayPrefix = datePrefix(day)
  }
  let rest = ms - day * DAY_MS
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  const seconds = Math.floor(rest / 1000)
  return `${cachedDayPrefix}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${pad3(rest - seconds * 1000)}Z`
}
