import { HostListError, parseHostList } from './host-list.js'

/**
 * Whether a postgres:// URL can be used, asked by the settings (DATABASE_READ_URLS at
 * load) and by the store's opener (DATABASE_URL, which may also be a SQLite path): one
 * check, so a URL refused at start-up is refused in the same words wherever it was given.
 */

/** Why one postgres:// URL (one host or a list) cannot be used, or null; the reason never quotes the URL. */
export function postgresUrlProblem(url: string): string | null {
  if (url === '') return 'is empty'
  if (!/^postgres(ql)?:\/\/[^\s]+$/i.test(url)) return 'is not a postgres:// URL (or has a space)'
  let hosts
  try {
    hosts = parseHostList(url).hosts
  } catch (error) {
    return error instanceof HostListError ? error.message : 'cannot be parsed'
  }
  // Each host's URL is what node-postgres reads: it must parse too.
  for (const host of hosts) {
    const problem = singleUrlProblem(host.url)
    if (problem !== null) return problem
  }
  return null
}

function singleUrlProblem(url: string): string | null {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'cannot be parsed (check its host and port)'
  }
  if (parsed.port === '0') return 'has port 0 (expected 1 to 65535)'
  if (parsed.hostname === '' && !parsed.searchParams.has('host')) return 'names no host'
  try {
    decodeURIComponent(parsed.username + parsed.password + parsed.pathname)
  } catch {
    return 'has a malformed percent escape'
  }
  return null
}
