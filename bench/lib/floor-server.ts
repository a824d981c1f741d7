import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import pg from 'pg'
import { FLOOR_KINDS, READY_PATH, type FloorKind, type RecordedResponse } from './floor.js'

/**
 * The floor under the service: each kind is a few lines that answer every request with the
 * bytes and headers of one real response of the service, so the service is measured
 * against what it sits on, in the same run, on the same data and working set.
 *
 * - `node`: a bare node:http server (the ceiling: no routing, no database, no serialisation);
 * - `fastify`: Fastify with one route sending the same bytes;
 * - `node-lookup`, `fastify-lookup`: the same plus the one session lookup per request the
 *   service cannot avoid (the session, its user and the listing generation): SQLite on a
 *   read-only better-sqlite3 connection, or PostgreSQL with one pg query per request. An
 *   unknown session gets 401, so the lookup's answer is used.
 *
 * Usage: node --import tsx bench/lib/floor-server.ts KIND PORT RESPONSE_JSON [DATABASE_URL]
 */

/** The service's pool default (DB_POOL_SIZE). */
const POOL_SIZE = 10
const SESSION_ID = /(?:^|;\s*)session_id=([0-9a-fA-F-]{36})(?:;|$)/

type Lookup = (sessionId: string) => Promise<boolean>

function sqliteLookup(path: string): Lookup {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  const statement = db
    .prepare(
      `SELECT u.id, u.username, u.avatar_url, u.is_suspended, u.listing_generation
         FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
    )
    .raw()
  return (id) => Promise.resolve(statement.get(id.toLowerCase(), Date.now()) !== undefined)
}

function postgresLookup(url: string): Lookup {
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE })
  const query = {
    name: 'floor_session_user',
    text: `SELECT u.id, u.username, u.avatar_url, u.is_suspended, u.listing_generation::text
             FROM sessions s JOIN users u ON u.id = s.user_id
            WHERE s.id = $1 AND (s.expires_at IS NULL OR s.expires_at > now())`,
  }
  return async (id) => (await pool.query({ ...query, values: [id] })).rowCount === 1
}

function lookupFor(url: string | undefined): Lookup {
  if (url === undefined) throw new Error('the lookup kinds need a DATABASE_URL')
  if (url.startsWith('sqlite:')) return sqliteLookup(url.slice('sqlite:'.length))
  return postgresLookup(url)
}

const sessionOf = (cookie: string | undefined) =>
  cookie === undefined ? null : (SESSION_ID.exec(cookie)?.[1] ?? null)

const [kindText, portText, file, url] = process.argv.slice(2)
if (!FLOOR_KINDS.includes(kindText as FloorKind) || portText === undefined || file === undefined) {
  process.stderr.write(`usage: floor-server.ts ${FLOOR_KINDS.join('|')} PORT RESPONSE_JSON [DATABASE_URL]\n`)
  process.exit(2)
}
const kind = kindText as FloorKind
const port = Number(portText)
const recorded = JSON.parse(readFileSync(file, 'utf8')) as RecordedResponse
const body = Buffer.from(recorded.body, 'base64')
const flatHeaders = recorded.headers.flat()
const headerObject = Object.fromEntries(recorded.headers)
const lookUp = kind.endsWith('-lookup') ? lookupFor(url) : null
// As the service's default (KEEP_ALIVE_TIMEOUT_MS): connections are reused the same way.
const KEEP_ALIVE_MS = 72_000
const ready = () => process.stdout.write(`listening on ${port}\n`)

if (kind === 'node' || kind === 'node-lookup') {
  const send = (response: ServerResponse) => {
    response.writeHead(recorded.status, flatHeaders)
    response.end(body)
  }
  const handle =
    lookUp === null
      ? (request: IncomingMessage, response: ServerResponse) => {
          request.resume()
          send(response)
        }
      : (request: IncomingMessage, response: ServerResponse) => {
          request.resume()
          const id = sessionOf(request.headers.cookie)
          if (id === null) return void response.writeHead(request.url === READY_PATH ? 200 : 401).end()
          lookUp(id).then(
            (found) => (found ? send(response) : response.writeHead(401).end()),
            () => response.writeHead(500).end(),
          )
        }
  const server = createServer(handle)
  server.keepAliveTimeout = KEEP_ALIVE_MS
  server.listen(port, '127.0.0.1', ready)
  process.on('SIGTERM', () => server.close(() => process.exit(0)))
} else {
  const app = Fastify({ logger: false, keepAliveTimeout: KEEP_ALIVE_MS })
  if (lookUp !== null) {
    app.addHook('onRequest', async (request, reply) => {
      const id = sessionOf(request.headers.cookie)
      if (id === null) return reply.code(request.url === READY_PATH ? 200 : 401).send()
      if (!(await lookUp(id))) return reply.code(401).send()
    })
  }
  app.get('/*', (_request, reply) => {
    reply.code(recorded.status).headers(headerObject).send(body)
  })
  await app.listen({ port, host: '127.0.0.1' })
  ready()
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
}
