/**
 * The kinds of value a setting takes (src/config.ts declares which setting takes which): how
 * its text is read, how a value is written back as text (the defaults shown in
 * docs/configuration.md and .env.example), and what the documentation says it accepts.
 */

import { isIP } from 'node:net'
import { availableParallelism } from 'node:os'
import { splitUrlList } from './database-url/host-list.js'
import { postgresUrlProblem } from './database-url/url-problem.js'

export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  constructor(
    readonly setting: string,
    reason: string,
  ) {
    super(`${setting}: ${reason}`)
  }
}

/**
 * One kind of value. `read` gets the text as given (undefined: not given) and the name to
 * blame (the variable, or the flag that gave the text); it returns `fallback` when the text
 * counts as unset, which each kind decides as it always has (`''`, or blank for on/off).
 */
export interface Kind<T> {
  read(raw: string | undefined, name: string, fallback: T): T
  /** the value as it is written in the environment; '' for unset */
  show(value: T): string
  /** what it accepts, for the documentation; `code` marks literal text */
  accepts(code: (literal: string) => string): string
}

function wholeNumber(name: string, raw: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got '${raw}'`)
  }
  return Number(raw)
}

export function integer(min: number, max: number): Kind<number> {
  return {
    read: (raw, name, fallback) =>
      raw === undefined || raw === '' ? fallback : wholeNumber(name, raw, min, max),
    show: String,
    accepts: (code) => `${code(String(min))} to ${code(String(max))}`,
  }
}

/** A port, or unset (null). */
export function optionalPort(): Kind<number | null> {
  return {
    read: (raw, name, fallback) =>
      raw === undefined || raw === '' ? fallback : wholeNumber(name, raw, 0, 65535),
    show: (value) => (value === null ? '' : String(value)),
    accepts: (code) => `empty, or ${code('0')} (any free port) to ${code('65535')}`,
  }
}

function readOnOff(raw: string | undefined, name: string, fallback: boolean): boolean {
  const value = (raw ?? '').trim().toLowerCase()
  if (value === '') return fallback
  if (['on', 'true', '1'].includes(value)) return true
  if (['off', 'false', '0'].includes(value)) return false
  throw new ConfigError(name, `expected on or off (true/false, 1/0), got '${raw}'`)
}

export const onOff: Kind<boolean> = {
  read: readOnOff,
  show: (value) => (value ? 'on' : 'off'),
  accepts: (code) =>
    `${code('on')} or ${code('off')} (${code('true')}/${code('false')}, ${code('1')}/${code('0')})`,
}

function readText(raw: string | undefined, fallback: string): string {
  return raw === undefined || raw === '' ? fallback : raw
}

export function text(accepts: Kind<string>['accepts']): Kind<string> {
  return { read: (raw, _name, fallback) => readText(raw, fallback), show: (value) => value, accepts }
}

export function oneOf<T extends string>(choices: readonly T[]): Kind<T> {
  return {
    read(raw, name, fallback) {
      const value = readText(raw, fallback)
      if (!(choices as readonly string[]).includes(value)) {
        throw new ConfigError(name, `expected one of ${choices.join(', ')}, got '${value}'`)
      }
      return value as T
    },
    show: (value) => value,
    accepts: (code) => choices.map(code).join(', '),
  }
}

/**
 * One CORS origin in the form browsers send in the Origin header (scheme, host, optional
 * port; lower case, default port dropped), so that matching is an exact string compare.
 */
function corsOrigin(name: string, value: string): string {
  const refuse = () =>
    new ConfigError(name, `expected comma-separated origins such as https://app.example.com, got '${value}'`)
  if (!/^https?:\/\/[^/\s?#@]+$/i.test(value)) throw refuse()
  try {
    return new URL(value).origin
  } catch {
    throw refuse()
  }
}

export const corsOrigins: Kind<readonly string[]> = {
  read(raw, name, fallback) {
    const origins = readText(raw, '')
      .split(',')
      .map((origin) => origin.trim())
      .filter((origin) => origin !== '')
      .map((origin) => corsOrigin(name, origin))
    return origins.length === 0 ? fallback : Object.freeze(origins)
  },
  show: (value) => value.join(','),
  accepts: (code) => `comma-separated origins such as ${code('https://app.example.com')}`,
}

/**
 * `''`/`false`, `true`, or comma-separated addresses and CIDR ranges. No hop count: Fastify
 * 5 refuses to trust by hop count alone (it cannot vouch for the immediate peer).
 */
export const trustProxy: Kind<boolean | readonly string[]> = {
  read(raw, name, fallback) {
    const value = (raw ?? '').trim()
    if (value === '') return fallback
    if (value === 'false') return false
    if (value === 'true') return true
    const entries = value.split(',').map((entry) => entry.trim())
    for (const entry of entries) {
      const [address = '', prefix, ...rest] = entry.split('/')
      const family = isIP(address)
      const maxPrefix = family === 6 ? 128 : 32
      const prefixOk = prefix === undefined || (/^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= maxPrefix)
      if (family === 0 || !prefixOk || rest.length > 0) {
        throw new ConfigError(
          name,
          `expected true, false or addresses/CIDR ranges such as 10.0.0.0/8, got '${entry}'`,
        )
      }
    }
    return Object.freeze(entries)
  },
  show: (value) => (typeof value === 'boolean' ? String(value) : value.join(',')),
  accepts: (code) => `${code('false')}, ${code('true')} (any), or comma-separated addresses/CIDRs`,
}

/**
 * Comma-separated postgres:// or postgresql:// URLs, each one pg can connect with: a host
 * (or a `host=` socket directory), a port from 1 to 65535, valid percent escapes. An empty
 * entry (`url,,`) is refused too: it is a typo, not "no replica". The message names the
 * entry by position and never repeats it (it may hold a password).
 */
export const readUrls: Kind<readonly string[]> = {
  read(raw, name, fallback) {
    const value = readText(raw, '')
    if (value.trim() === '') return fallback
    const urls = splitUrlList(value)
    urls.forEach((url, index) => {
      const problem = postgresUrlProblem(url)
      if (problem !== null) {
        throw new ConfigError(
          name,
          `expected comma-separated postgres:// URLs; entry ${index + 1} ${problem}`,
        )
      }
    })
    return Object.freeze(urls)
  },
  show: (value) => value.join(','),
  accepts: (code) => `comma-separated ${code('postgres://')} URLs`,
}

/**
 * One postgres:// or postgresql:// URL (it may list hosts), or unset (null); refused in the
 * same words as a DATABASE_READ_URLS entry, never quoting it.
 */
export const optionalPostgresUrl: Kind<string | null> = {
  read(raw, name, fallback) {
    const value = readText(raw, '').trim()
    if (value === '') return fallback
    const problem = postgresUrlProblem(value)
    if (problem !== null) throw new ConfigError(name, `expected a postgres:// URL; it ${problem}`)
    return value
  },
  show: (value) => value ?? '',
  accepts: (code) => `empty, or a ${code('postgres://')} URL`,
}

/**
 * `on` (LISTEN, or SQLite's data_version) or `off` (the poll alone). A URL here once named
 * a direct LISTEN connection; DATABASE_DIRECT_URL names it now, and the refusal says so.
 */
export const feedNotify: Kind<boolean> = {
  read(raw, name, fallback) {
    const value = readText(raw, '').trim()
    if (/^postgres(ql)?:\/\//i.test(value)) {
      throw new ConfigError(
        name,
        'expected on or off; a direct URL for LISTEN is set with DATABASE_DIRECT_URL',
      )
    }
    return readOnOff(value, name, fallback)
  },
  show: (value) => onOff.show(value),
  accepts: (code) => `${code('on')} or ${code('off')}`,
}

/** A whole number of processes, or `auto`: one per core this process may use. */
export function processCount(max: number): Kind<number> {
  return {
    read(raw, name, fallback) {
      if (raw?.trim().toLowerCase() === 'auto') return Math.min(availableParallelism(), max)
      const value = raw?.trim()
      if (value === undefined || value === '') return fallback
      try {
        return wholeNumber(name, value, 1, max)
      } catch {
        throw new ConfigError(name, `expected auto or a whole number from 1 to ${max}, got '${raw}'`)
      }
    },
    show: String,
    accepts: (code) => `${code('auto')} (one per core), or ${code('1')} to ${code(String(max))}`,
  }
}
