import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { ProblemBody } from '../schemas/problem.js'
import { HttpProblem, PROBLEM_CONTENT_TYPE, problems, sendProblem } from './problems.js'
import { REQUEST_ID_HEADER } from './request-id.js'
import { SECURITY_HEADERS } from './security-headers.js'

/**
 * Errors raised before a request reaches a route, answered in problem+json like every
 * other error (CONTRACT section 6) instead of in Fastify's or Node's own formats:
 * - the router cannot decode the URL (`/%zz`): Fastify's frameworkErrors;
 * - Node's HTTP parser refuses the bytes (bad framing, header overflow, timeout):
 *   Fastify's clientErrorHandler, writing to the socket since there is no request;
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

/**
 * Fastify `clientErrorHandler`. The error is not logged with its fields: Node attaches the
 * raw bytes received (`rawPacket`), which may hold the session cookie.
 */
export function clientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const { status, detail } = PARSER_ERRORS[error.code ?? ''] ?? MALFORMED
  const title = STATUS_CODES[status] ?? 'Error'
  const requestId = randomUUID()
  const problem: ProblemBody = {
    type: 'about:blank',
    title,
    status,
    code: 'INVALID_INPUT',
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
  }
  if (socket.writable) {
    const head = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('')
    socket.write(`HTTP/1.1 ${status} ${title}\r\n${head}\r\n${body}`)
  }
  socket.destroy()
}

/** HTTP/1.1 requires Host (RFC 9112 section 3.2); checked here so the 400 is problem+json. */
export function missingHost(request: FastifyRequest): HttpProblem | undefined {
  const raw = request.raw
  if (request.headers.host === undefined && raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1) {
    return problems.invalidInput('An HTTP/1.1 request must carry a Host header.')
  }
  return undefined
}
