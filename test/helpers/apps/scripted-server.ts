import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, beforeEach } from 'node:test'

/**
 * A node:http server that answers as a test scripts it: the answers a healthy `serve`
 * cannot be made to give on demand (a Retry-After of years, a body without end, a `next`
 * link to the page itself, a 410 in the middle of a watch). Each request is recorded.
 */
export interface ScriptedServer {
  base: string
  /** what arrived, in order */
  requests: { url: string; headers: IncomingMessage['headers']; at: number }[]
  /** the handler of the next requests; the default answers an empty listing */
  handle: (request: IncomingMessage, response: ServerResponse) => void
  close(): Promise<void>
}

export const EMPTY_LISTING = { folders: [], total: 0, page: 1, limit: 50 }

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const type = status >= 400 ? 'application/problem+json' : 'application/json; charset=utf-8'
  response.writeHead(status, { 'content-type': type, ...headers })
  response.end(JSON.stringify(body))
}

/** A problem body in the service's format (docs/api.md "Errors"). */
export function problemBody(status: number, code: string) {
  return {
    type: 'about:blank',
    title: code,
    status,
    code,
    detail: `scripted ${code}`,
    request_id: `req-${code}`,
  }
}

export async function startScriptedServer(): Promise<ScriptedServer> {
  const server: Server = createServer((request, response) => {
    scripted.requests.push({ url: request.url ?? '', headers: request.headers, at: Date.now() })
    scripted.handle(request, response)
  })
  const scripted: ScriptedServer = {
    base: '',
    requests: [],
    handle: (_request, response) => sendJson(response, 200, EMPTY_LISTING),
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  scripted.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return scripted
}

/**
 * The one scripted server of a test file: started before its tests, closed after them, its
 * record of requests cleared before each test. Call at the top level of the file.
 */
export function useScriptedServer(): () => ScriptedServer {
  let server: ScriptedServer | undefined
  before(async () => {
    server = await startScriptedServer()
  })
  after(() => server?.close())
  beforeEach(() => {
    if (server !== undefined) server.requests.length = 0
  })
  return () => {
    if (server === undefined) throw new Error('the scripted server starts before the tests')
    return server
  }
}
