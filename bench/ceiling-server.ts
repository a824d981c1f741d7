import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

/**
 * Node's ceiling on this machine: a bare node:http server that answers every request with
 * the bytes and headers of one real response of the service. No routing, no database, no
 * serialisation; what the service reaches of this server's req/s is the share left to it.
 *
 * Usage: node --import tsx bench/ceiling-server.ts PORT RESPONSE_JSON
 */

export interface RecordedResponse {
  status: number
  /** header name and value pairs, as the service sent them (hop-by-hop ones left out) */
  headers: [string, string][]
  /** the body, base64 */
  body: string
}

const [portText, file] = process.argv.slice(2)
if (portText === undefined || file === undefined) {
  process.stderr.write('usage: ceiling-server.ts PORT RESPONSE_JSON\n')
  process.exit(2)
}
const recorded = JSON.parse(readFileSync(file, 'utf8')) as RecordedResponse
const body = Buffer.from(recorded.body, 'base64')
const headers = recorded.headers.flat()

const server = createServer((request, response) => {
  request.resume()
  response.writeHead(recorded.status, headers)
  response.end(body)
})
// As the service's default (KEEP_ALIVE_TIMEOUT_MS): connections are reused the same way.
server.keepAliveTimeout = 72_000
server.listen(Number(portText), '127.0.0.1', () => process.stdout.write(`listening on ${portText}\n`))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
