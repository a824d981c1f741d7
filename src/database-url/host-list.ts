/**
 * A PostgreSQL URL that may list several hosts, the way libpq and `pg_autoctl show uri`
 * write it: `postgres://user:pass@h1:5432,h2:5433,h3/db?target_session_attrs=read-write`.
 * node-postgres connects to one host only, so the URL is split here into one single-host
 * URL per host, tried in order by the primary finder (store/postgres/primary-finder.ts).
 * Read both by the settings (a URL refused at start-up) and by the PostgreSQL store (the
 * hosts it connects to), so it belongs to neither: src/database-url/ sits below both.
 *
 * `target_session_attrs`: `read-write` or `primary` (the host must be writable and not in
 * recovery), `any` or absent (the first host that answers). Any other value, an empty host
 * entry or a bad port makes the URL unusable: the problem is said without quoting the URL,
 * which may hold a password.
 */

type SessionAttrs = 'read-write' | 'any'

export interface DatabaseHost {
  /** `host:port`, for messages and logs */
  target: string
  /**
   * the URL with this one host and no target_session_attrs, for node-postgres; with
   * sslmode=prefer the finder may switch it to `plainUrl` (see there)
   */
  url: string
  /**
   * With sslmode=prefer (what `pg_autoctl show uri` writes), the URL with sslmode=disable:
   * libpq falls back to a plain connection when the server has no SSL, node-postgres does
   * not, so the finder does (primary-finder.ts) and keeps using the one that worked.
   */
  plainUrl?: string
}

export interface HostList {
  hosts: readonly DatabaseHost[]
  attrs: SessionAttrs
  /**
   * Whether the service follows a primary that moves: several hosts, or one host with
   * `read-write`/`primary` (a cloud endpoint whose name moves). Otherwise the URL is used
   * as it always was, one pool on one server.
   */
  follows: boolean
}

const ATTRS: Record<string, SessionAttrs> = {
  'read-write': 'read-write',
  primary: 'read-write',
  any: 'any',
}

const DEFAULT_PORT = '5432'

/** scheme, optional credentials, the host part, and the rest (path, query, fragment) */
const URL_PARTS = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)(.*)$/i

/** one host entry: a name or IPv4 address, or a bracketed IPv6 address, then an optional port */
const HOST_ENTRY = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]/@]+)(?::(\d*))?$/

export class HostListError extends Error {}

function portOf(raw: string | undefined, index: number): string {
  if (raw === undefined || raw === '') return DEFAULT_PORT
  const port = Number(raw)
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new HostListError(`host ${index + 1} has port ${raw} (expected 1 to 65535)`)
  }
  return String(port)
}

/** `rest` (path, query, fragment) without target_session_attrs, and that parameter's value. */
function splitAttrs(rest: string): { rest: string; attrs: string | undefined } {
  const queryAt = rest.indexOf('?')
  if (queryAt === -1) return { rest, attrs: undefined }
  const fragmentAt = rest.indexOf('#', queryAt)
  const query = rest.slice(queryAt + 1, fragmentAt === -1 ? undefined : fragmentAt)
  const kept: string[] = []
  let attrs: string | undefined
  for (const pair of query.split('&')) {
    const [key = '', value = ''] = pair.split('=', 2)
    if (key === 'target_session_attrs') attrs = decodeURIComponent(value)
    else if (pair !== '') kept.push(pair)
  }
  const fragment = fragmentAt === -1 ? '' : rest.slice(fragmentAt)
  return { rest: rest.slice(0, queryAt) + (kept.length > 0 ? `?${kept.join('&')}` : '') + fragment, attrs }
}

const SSLMODE_PREFER = /([?&])sslmode=prefer(&|#|$)/

function plainFallback(url: string): { plainUrl?: string } {
  return SSLMODE_PREFER.test(url) ? { plainUrl: url.replace(SSLMODE_PREFER, '$1sslmode=disable$2') } : {}
}

/**
 * Splits a postgres:// URL into its hosts; throws HostListError with a reason that never
 * quotes the URL.
 */
export function parseHostList(url: string): HostList {
  const parts = URL_PARTS.exec(url)
  if (parts === null) throw new HostListError('is not a postgres:// URL')
  const [, scheme = '', credentials, hostPart = '', tail = ''] = parts
  const { rest, attrs: rawAttrs } = splitAttrs(tail)
  let attrs: SessionAttrs = 'any'
  if (rawAttrs !== undefined) {
    const known = ATTRS[rawAttrs]
    if (known === undefined) {
      throw new HostListError(`has target_session_attrs=${rawAttrs} (expected read-write, primary or any)`)
    }
    attrs = known
  }
  const entries = hostPart.split(',')
  // One host, or none (a socket directory in ?host=): node-postgres reads the URL as it always did.
  if (entries.length === 1) {
    const single = `${scheme}${credentials === undefined ? '' : `${credentials}@`}${hostPart}${rest}`
    return {
      hosts: [{ target: describeSingle(single), url: single }],
      attrs,
      follows: attrs === 'read-write',
    }
  }
  const hosts = entries.map((entry, index): DatabaseHost => {
    const match = HOST_ENTRY.exec(entry)
    if (match === null) {
      throw new HostListError(
        entry === ''
          ? `has an empty host entry (host ${index + 1})`
          : `has a malformed host entry (host ${index + 1})`,
      )
    }
    const [, host = '', rawPort] = match
    const port = portOf(rawPort, index)
    const url = `${scheme}${credentials === undefined ? '' : `${credentials}@`}${host}:${port}${rest}`
    return { target: `${host}:${port}`, url, ...plainFallback(url) }
  })
  return { hosts, attrs, follows: true }
}

/**
 * `host:port` (or the socket directory) of a single-host URL, for messages. Built from the
 * URL's parts rather than the URL itself, so the user name and password never appear.
 */
function describeSingle(url: string): string {
  try {
    const parsed = new URL(url)
    const host = parsed.searchParams.get('host') ?? decodeURIComponent(parsed.hostname)
    const port = parsed.searchParams.get('port') ?? (parsed.port === '' ? DEFAULT_PORT : parsed.port)
    return host === '' ? `localhost:${port}` : `${host}:${port}`
  } catch {
    return 'the configured address'
  }
}

/**
 * Splits a comma-separated list of URLs (DATABASE_READ_URLS) whose entries may themselves
 * list hosts with commas: a piece that follows an entry still in its host part (no path or
 * query yet) and does not begin with a scheme is that entry's next host. Anything else is an
 * entry of its own, so `url,,url` keeps its empty entry and `url,junk` its junk, to be refused.
 */
export function splitUrlList(value: string): string[] {
  const urls: string[] = []
  for (const piece of value.split(',').map((part) => part.trim())) {
    const last = urls.at(-1)
    if (last !== undefined && piece !== '' && OPEN_HOST_PART.test(last) && !SCHEME.test(piece)) {
      urls[urls.length - 1] = `${last},${piece}`
    } else {
      urls.push(piece)
    }
  }
  return urls
}

const SCHEME = /^postgres(ql)?:\/\//i
const OPEN_HOST_PART = /^postgres(ql)?:\/\/[^/?#]*$/i
