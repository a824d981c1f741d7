import { randomUUID } from 'node:crypto'
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ProblemBody, ProblemCode } from '../../schemas/problem.js'
import { REJECTED_ROUTE } from '../metrics.js'
import { HttpProblem, PROBLEM_CONTENT_TYPE, problems, sendProblem } from '../problems.js'
import { REQUEST_ID_HEADER } from './request-id.js'
import { SECURITY_HEADERS } from './security-headers.js'

/**
 * Errors raised before a request reaches a route, answered in problem+json like every
 * other error (docs/api.md "Errors") instead of in Fastify's or Node's own formats:
 * - the router cannot decode the URL (`/%zz`): Fastify's frameworkErrors;
 * - Node's HTTP server refuses the request before Fastify sees it (bad framing, header
 *   overflow, timeout, an unsupported Expect, CONNECT): {@link ParserRejections};
 * - an HTTP/1.1 request without Host (Node's own check answers with an empty body).
 */

/** Fastify `frameworkErrors`: onRequest hooks have not run, so their headers are set here. */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header(REQUEST_ID_HEADER, request.id).headers(SECURITY_HEADERS)
  const status = error.statusCode ?? 400
  const problem =
    status >= 400 && status < 500
      ? new HttpProblem(status, 'INVALID_INPUT', 'The request URL is malformed.')
      : problems.internal()
  void sendProblem(request, reply, problem)
}

const PARSER_ERRORS: Record<string, { status: number; detail: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, detail: 'The request headers are too large.' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, detail: 'The request did not arrive in time.' },
}
const MALFORMED = { status: 400, detail: 'The request is not valid HTTP/1.1.' }
/** What CONNECT is told: this is an API, not a proxy (docs/api.md "Errors": 405 names what is allowed). */
const CONNECT_ALLOW = 'GET, HEAD'

/** Where requests refused before routing are counted (http_requests_total, route `rejected`). */
export interface RejectionCounter {
  countRejection(method: string, status: number): void
}

/** A problem+json answer built outside Fastify: status line, headers and body. */
function rawProblem(
  status: number,
  code: ProblemCode,
  detail: string,
  extraHeaders: Record<string, string> = {},
): { requestId: string; headers: Record<string, string>; body: string } {
  const requestId = randomUUID()
  const problem: ProblemBody = {
    type: 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
    code,
    detail,
    request_id: requestId,
  }
  const body = JSON.stringify(problem)
  const headers = {
    'content-type': `${PROBLEM_CONTENT_TYPE}; charset=utf-8`,
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    [REQUEST_ID_HEADER]: requestId,
    ...SECURITY_HEADERS,
    ...extraHeaders,
  }
  return { requestId, headers, body }
}

function writeRawProblem(socket: Socket, status: number, answer: ReturnType<typeof rawProblem>): void {
  if (socket.writable) {
    const head = Object.entries(answer.headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('')
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n${head}\r\n${answer.body}`)
  }
  socket.destroy()
}

/**
 * Responses of a connection not yet finished. A pipelining client may send a valid request
 * and garbage in one write: Node's parser hands over the request, then reports the
 * garbage at once; the refusal waits for the answers to the requests before it.
 */
const unfinished = new WeakMap<Socket, { count: number; then: (() => void)[] }>()

function trackResponses(server: Server): void {
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket
    let state = unfinished.get(socket)
    if (state === undefined) {
      state = { count: 0, then: [] }
      unfinished.set(socket, state)
    }
    const tracked = state
    tracked.count++
    response.once('close', () => {
      tracked.count--
      if (tracked.count === 0) for (const next of tracked.then.splice(0)) next()
    })
  })
}

function afterUnfinishedResponses(socket: Socket, next: () => void): void {
  const state = unfinished.get(socket)
  if (state === undefined || state.count === 0) next()
  else state.then.push(next)
}

/**
 * Answers, logs and counts what Node's HTTP server refuses before Fastify sees a request
 * (docs/api.md "Errors": every error is problem+json with the usual headers):
 * - bytes its parser rejects (400, 408, 431): Fastify's clientErrorHandler;
 * - an Expect other than 100-continue (417): Node's `checkExpectation` event;
 * - CONNECT (405): Node's `connect` event, which otherwise closes without a byte.
 * The error is not logged with its fields: Node attaches the raw bytes received
 * (`rawPacket`), which may hold the session cookie.
 */
export class ParserRejections {
  private log: FastifyBaseLogger | undefined

  constructor(private readonly counter: RejectionCounter) {}

  private record(method: string, status: number, requestId: string, reason: string): void {
    this.counter.countRejection(method, status)
    this.log?.info(
      { request_id: requestId, method, route: REJECTED_ROUTE, status, reason },
      'request rejected',
    )
  }

  /** Fastify `clientErrorHandler` (a closure: Fastify calls it with its own `this`). */
  readonly clientError = (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const { status, detail } = PARSER_ERRORS[error.code ?? ''] ?? MALFORMED
    const answer = rawProblem(status, 'INVALID_INPUT', detail)
    this.record('UNKNOWN', status, answer.requestId, error.code ?? 'unknown')
    afterUnfinishedResponses(socket, () => writeRawProblem(socket, status, answer))
  }

  /** Listens on the app's server; call once, right after creating the app. */
  attach(app: FastifyInstance): void {
    this.log = app.log
    const server = app.server
    trackResponses(server)
    server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
      const answer = rawProblem(417, 'INVALID_INPUT', 'Only the expectation 100-continue is supported.')
      this.record(request.method ?? 'UNKNOWN', 417, answer.requestId, 'expectation')
      response.shouldKeepAlive = false
      response.writeHead(417, answer.headers).end(answer.body)
    })
    server.on('connect', (request: IncomingMessage, socket: Socket) => {
      const answer = rawProblem(405, 'METHOD_NOT_ALLOWED', `Allowed methods: ${CONNECT_ALLOW}.`, {
        allow: CONNECT_ALLOW,
      })
      this.record(request.method ?? 'CONNECT', 405, answer.requestId, 'connect')
      writeRawProblem(socket, 405, answer)
    })
  }
}

/** HTTP/1.1 requires Host (RFC 9112 section 3.2); checked here so the 400 is problem+json. */
export function missingHost(request: FastifyRequest): HttpProblem | undefined {
  const raw = request.raw
  if (request.headers.host === undefined && raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1) {
    return problems.invalidInput('An HTTP/1.1 request must carry a Host header.')
  }
  return undefined
}
