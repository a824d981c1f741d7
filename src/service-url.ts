import type { Config } from './config.js'

/**
 * The address a person on this machine opens to reach the service listening on `host`:`port`.
 * A wildcard listen address (0.0.0.0, ::) is not one a browser or curl can open, so it
 * becomes the loopback address of its family; an IPv6 address is bracketed.
 */
export function openableUrl(host: string, port: number): string {
  const shown =
    host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host
  return `http://${shown}:${port}`
}

/**
 * `serve`'s start-up line for a person at a terminal (a log collector gets the JSON line
 * instead): where to point the browser, or the API docs when the folder browser is off.
 */
function listeningLineForPeople(url: string, folderBrowser: boolean): string {
  return folderBrowser
    ? `folder-service listening at ${url}: open ${url}/ in a browser (API docs: ${url}/docs)`
    : `folder-service listening at ${url} (API docs: ${url}/docs)`
}

/**
 * The start-up line (README "Command line"): at a terminal, a sentence with the URL a person
 * opens; otherwise `log` writes it as JSON for whatever collects the logs.
 */
export function announceListening(
  config: Readonly<Config>,
  address: string,
  log: (message: string) => void,
): void {
  if (process.stdout.isTTY === true) {
    const url = openableUrl(config.host, Number(new URL(address).port))
    process.stdout.write(`${listeningLineForPeople(url, config.folderBrowser)}\n`)
  } else {
    log(`Server listening at ${address}`)
  }
}
