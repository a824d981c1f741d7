/**
 * A PostgreSQL URL that may list several hosts, the way libpq and `pg_autoctl show uri`
 * write it: `postgres://user:pass@h1:5432,h2:5433,h3/db?target_session_attrs=read-write`.
 * node-postgres connects to one host only, so the URL is split here into one single-host
 * URL per host, tried in order by the primary finder (store/postgres/primary-finder.ts).
 * Read both by the settings (a URL refused at start-up) and by the PostgreSQL store (the
 * hosts it connects to), so it belongs to neither: src/database-url/ sits below both.
 *
 * The query's `host=` and `port=` may list hosts and ports too, as libpq reads them
 * (`postgres://u@h,h/db?port=5432,5433`; see parseHostList).
 *
 * `target_session_attrs`: `read-write` or `primary` (the host must be writable and not in
 * recovery), `any` or absent (the first host that answers). Any other value, an empty host
 * entry, a bad port or ports that do not match the hosts make the URL unusable: the problem
 * is said without quoting the URL, which may hold a password.
 */

import { isIP } from 'node:net'

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

function portOf(raw: string, index: number): string {
  if (raw === '') return DEFAULT_PORT
  const port = /^[0-9]+$/.test(raw) ? Number(raw) : NaN
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new HostListError(`host ${index + 1} has port ${raw} (expected 1 to 65535)`)
  }
  return String(port)
}

/** The query parameters the host list is made of; the others are passed on to every host. */
const LIST_KEYS = ['host', 'port', 'target_session_attrs'] as const
type ListKey = (typeof LIST_KEYS)[number]

interface Tail {
  /** the path, e.g. `/db` */
  path: string
  /** the query's `key=value` pairs as written, target_session_attrs left out */
  pairs: string[]
  /** the same without host and port */
  kept: string[]
  fragment: string
  /** host, port and target_session_attrs, decoded; the last one given wins, as in libpq */
  given: Partial<Record<ListKey, string>>
}

/** `rest` (path, query, fragment) split into the host list's parameters and the others. */
function splitTail(rest: string): Tail {
  const queryAt = rest.indexOf('?')
  const fragmentAt = rest.indexOf('#', queryAt === -1 ? 0 : queryAt)
  const pathEnd = queryAt !== -1 ? queryAt : fragmentAt !== -1 ? fragmentAt : rest.length
  const fragment = fragmentAt === -1 ? '' : rest.slice(fragmentAt)
  const query = queryAt === -1 ? '' : rest.slice(queryAt + 1, fragmentAt === -1 ? undefined : fragmentAt)
  const pairs: string[] = []
  const kept: string[] = []
  const given: Tail['given'] = {}
  for (const pair of query.split('&')) {
    if (pair === '') continue
    const [key = '', value = ''] = pair.split('=', 2)
    if ((LIST_KEYS as readonly string[]).includes(key)) given[key as ListKey] = decoded(key, value)
    if (key !== 'target_session_attrs') pairs.push(pair)
    if (!(LIST_KEYS as readonly string[]).includes(key)) kept.push(pair)
  }
  return { path: rest.slice(0, pathEnd), pairs, kept, fragment, given }
}

function decoded(key: string, value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    throw new HostListError(`has a malformed percent escape in ${key}=`)
  }
}

const withQuery = (path: string, pairs: string[], fragment: string) =>
  path + (pairs.length > 0 ? `?${pairs.join('&')}` : '') + fragment

const SSLMODE_PREFER = /([?&])sslmode=prefer(&|#|$)/

function plainFallback(url: string): { plainUrl?: string } {
  return SSLMODE_PREFER.test(url) ? { plainUrl: url.replace(SSLMODE_PREFER, '$1sslmode=disable$2') } : {}
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`

/** One entry of the host part: a host and its port as written ('' when none). */
function hostEntry(entry: string, index: number): { host: string; port: string } {
  const match = HOST_ENTRY.exec(entry)
  if (match === null) {
    throw new HostListError(
      entry === ''
        ? `has an empty host entry (host ${index + 1})`
        : `has a malformed host entry (host ${index + 1})`,
    )
  }
  return { host: match[1] ?? '', port: match[2] ?? '' }
}

/** A host name of the query's `host=` list, as the host part of a URL writes it. */
function queryHost(name: string, index: number): string {
  if (name === '') throw new HostListError(`has an empty host entry (host ${index + 1})`)
  if (name.startsWith('/')) {
    throw new HostListError(
      `has a socket directory in a host list (host ${index + 1}); list host names or addresses`,
    )
  }
  if (isIP(name) === 6) return `[${name}]`
  if (!/^[^\s:[\]/@?#%]+$/.test(name))
    throw new HostListError(`has a malformed host entry (host ${index + 1})`)
  return name
}

/**
 * Splits a postgres:// URL into its hosts; throws HostListError with a reason that never
 * quotes the URL. Hosts and ports are read as libpq reads them: a `host=` or `port=` in the
 * query replaces the host part's (the last one given wins); either may be a comma-separated
 * list, and the ports must be one per host, or one for every host; an empty port is 5432.
 * Each host's URL names its own host and port alone, so where its statements go is its
 * `target`, which /metrics and the log lines show.
 */
export function parseHostList(url: string): HostList {
  const parts = URL_PARTS.exec(url)
  if (parts === null) throw new HostListError('is not a postgres:// URL')
  const [, scheme = '', credentials, hostPart = '', tail = ''] = parts
  const { path, pairs, kept, fragment, given } = splitTail(tail)
  let attrs: SessionAttrs = 'any'
  if (given.target_session_attrs !== undefined) {
    const known = ATTRS[given.target_session_attrs]
    if (known === undefined) {
      throw new HostListError(
        `has target_session_attrs=${given.target_session_attrs} (expected read-write, primary or any)`,
      )
    }
    attrs = known
  }
  const entries = hostPart.split(',')
  const names = given.host?.split(',') ?? null
  const ports = given.port?.split(',') ?? null
  const userinfo = credentials === undefined ? '' : `${credentials}@`
  // One host, or none (a socket directory in ?host=): node-postgres reads the URL as it always
  // did, query host and port included (it too lets them win over the host part).
  if ((names ?? entries).length === 1 && (ports ?? entries).length === 1) {
    if (given.port !== undefined) portOf(given.port, 0)
    const single = `${scheme}${userinfo}${hostPart}${withQuery(path, pairs, fragment)}`
    return {
      hosts: [{ target: describeSingle(single), url: single }],
      attrs,
      follows: attrs === 'read-write',
    }
  }
  // The host part's entries give the hosts, or with host= only the ports (libpq keeps them).
  const netloc = hostPart === '' ? [{ host: '', port: '' }] : entries.map(hostEntry)
  const hosts = names?.map(queryHost) ?? netloc.map((entry) => entry.host)
  const empty = hosts.indexOf('')
  if (empty !== -1) throw new HostListError(`has an empty host entry (host ${empty + 1})`)
  const portTexts = ports ?? netloc.map((entry) => entry.port)
  if (portTexts.length !== 1 && portTexts.length !== hosts.length) {
    throw new HostListError(
      `has ${count(portTexts.length, 'port')} for ${count(hosts.length, 'host')} (expected one port per host, or one for all)`,
    )
  }
  return {
    hosts: hosts.map((host, index): DatabaseHost => {
      const port = portOf(portTexts.length === 1 ? (portTexts[0] ?? '') : (portTexts[index] ?? ''), index)
      const hostUrl = `${scheme}${userinfo}${host}:${port}${withQuery(path, kept, fragment)}`
      return { target: `${host}:${port}`, url: hostUrl, ...plainFallback(hostUrl) }
    }),
    attrs,
    follows: true,
  }
}

/**
 * `host:port` (or the socket directory) of a single-host URL, for messages. Built from the
 * URL's parts rather than the URL itself, so the user name and password never appear.
 */
function describeSingle(url: string): string {
  try {
    const parsed = new URL(url)
    // node-postgres takes the last host= and port= of the query, when not empty, over the host part.
    const host = parsed.searchParams.getAll('host').at(-1) || decodeURIComponent(parsed.hostname)
    const port = parsed.searchParams.getAll('port').at(-1) || parsed.port || DEFAULT_PORT
    return host === '' ? `localhost:${port}` : `${host}:${port}`
  } catch {
    return 'the configured address'
  }
}

/**
 * Splits a comma-separated list of URLs (DATABASE_READ_URLS) whose entries may themselves
 * list hosts with commas: a piece that follows an entry still in its host part (no path or
 * query yet), or in the value of its query's `host=` or `port=` list, and does not begin with
 * a scheme is that entry's next host or port. Anything else is an entry of its own, so
 * `url,,url` keeps its empty entry and `url,junk` its junk, to be refused.
 */
export function splitUrlList(value: string): string[] {
  const urls: string[] = []
  for (const piece of value.split(',').map((part) => part.trim())) {
    const last = urls.at(-1)
    const continues =
      last !== undefined &&
      (OPEN_HOST_PART.test(last) || (OPEN_QUERY_LIST.test(last) && LIST_ITEM.test(piece)))
    if (continues && piece !== '' && !SCHEME.test(piece)) {
      urls[urls.length - 1] = `${last},${piece}`
    } else {
      urls.push(piece)
    }
  }
  return urls
}

const SCHEME = /^postgres(ql)?:\/\//i
const OPEN_HOST_PART = /^postgres(ql)?:\/\/[^/?#]*$/i
/** an entry whose query ends in the value of host= or port= */
const OPEN_QUERY_LIST = /[?&](?:host|port)=[^&#]*$/
/** a next item of such a list: no key of its own before the next parameter */
const LIST_ITEM = /^[^=/&#]*(?:[&#]|$)/
