import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { StoreUnavailableError } from '../store/store.js'
import type { ProblemBody, ProblemCode } from '../schemas/problem.js'
import { PARAMETER_RULES } from '../schemas/list-folders-query.js'

/**
 * Every error leaves as RFC 9457 problem+json (docs/api.md "Errors"). Handlers throw an
 * HttpProblem; this plugin's error handler turns it, validation errors, database outages
 * and anything unexpected into the one body shape, and hides internals of 5xx.
 */

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

/** Seconds a client should wait before retrying a 503. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2

export const UNAUTHORIZED_CHALLENGE = 'Cookie realm="folder-service", cookie-name="session_id"'

export class HttpProblem extends Error {
  override readonly name = 'HttpProblem'
  constructor(
    readonly status: number,
    readonly code: ProblemCode,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail)
  }
}

/** 503 UNAVAILABLE with Retry-After: the service cannot answer now, but will. */
const unavailable = (detail: string) =>
  new HttpProblem(503, 'UNAVAILABLE', detail, { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) })

export const problems = {
  invalidInput: (detail: string) => new HttpProblem(400, 'INVALID_INPUT', detail),
  /** 400 naming a query parameter of GET /v1/folders and its rule. */
  invalidParameter: (param: keyof typeof PARAMETER_RULES) =>
    new HttpProblem(400, 'INVALID_INPUT', `Query parameter '${param}' ${PARAMETER_RULES[param]}.`),
  unauthorized: (detail: string) =>
    new HttpProblem(401, 'UNAUTHORIZED', detail, { 'www-authenticate': UNAUTHORIZED_CHALLENGE }),
  frozen: () => new HttpProblem(403, 'FROZEN_ACCOUNT', 'This account is frozen.'),
  folderNotFound: () => new HttpProblem(404, 'NOT_FOUND', 'No folder with that id is visible to this user.'),
  routeNotFound: () => new HttpProblem(404, 'NOT_FOUND', 'No resource at this path.'),
  methodNotAllowed: (allow: string[]) =>
    new HttpProblem(405, 'METHOD_NOT_ALLOWED', `Allowed methods: ${allow.join(', ')}.`, {
      allow: allow.join(', '),
    }),
  unavailable: () => unavailable('The database is unreachable; retry shortly.'),
  timedOut: () =>
    unavailable(
      'The database did not answer in time (busy, or waiting for a lock another writer holds); retry shortly.',
    ),
  shuttingDown: () => unavailable('The service is shutting down; retry on another instance.'),
  cursorExpired: () =>
    new HttpProblem(
      410,
      'CURSOR_EXPIRED',
      'The changes after this cursor are no longer kept: list the folder again and follow its rel="changes" link.',
    ),
  /** More held requests than the process allows (LONG_POLL_MAX_WAITERS). */
  tooManyWaiters: () =>
    new HttpProblem(429, 'RATE_LIMITED', 'Too many requests are waiting for changes here; retry shortly.', {
      'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
    }),
  internal: () => new HttpProblem(500, 'INTERNAL', 'An unexpected error occurred.'),
}

/** The problem details of `problem` for `request`: every field, nothing else. */
export function problemBody(request: FastifyRequest, problem: HttpProblem): ProblemBody {
  return {
    type: 'about:blank',
    title: STATUS_CODES[problem.status] ?? 'Error',
    status: problem.status,
    code: problem.code,
    detail: problem.detail,
    request_id: request.id,
  }
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  problem: HttpProblem,
): FastifyReply {
  return reply
    .code(problem.status)
    .headers(problem.headers)
    .type(PROBLEM_CONTENT_TYPE)
    .send(problemBody(request, problem))
}

/** Fastify's schema validation error for the querystring, named by parameter. */
function fromValidation(error: FastifyError): HttpProblem {
  const first = error.validation?.[0]
  const param = first?.instancePath.replace(/^\//, '').split('/')[0] ?? ''
  if (Object.hasOwn(PARAMETER_RULES, param))
    return problems.invalidParameter(param as keyof typeof PARAMETER_RULES)
  return problems.invalidInput(`The ${error.validationContext ?? 'request'} is malformed.`)
}

/** Maps anything thrown during a request to the problem it answers with. */
export function toProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error
  if (error instanceof StoreUnavailableError)
    return error.timedOut ? problems.timedOut() : problems.unavailable()
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) return fromValidation(fastifyError)
  const status = fastifyError.statusCode
  // Fastify's own client errors (bad URL, body too large, unsupported media type...) and
  // http-errors style ones from plugins (`expose`, e.g. @fastify/static) are malformed
  // input: keep their status, speak in the contract's code. Anything else carrying a
  // statusCode (a driver error, say) is still a bug of ours: 500.
  const fromFramework =
    fastifyError.code?.startsWith('FST_') === true || (error as { expose?: unknown }).expose === true
  if (fromFramework && typeof status === 'number' && status >= 400 && status < 500) {
    return new HttpProblem(status, 'INVALID_INPUT', 'The request is malformed.')
  }
  return problems.internal()
}

export const problemsPlugin = fp(
  (app: FastifyInstance) => {
    app.setErrorHandler((error, request, reply) => {
      const problem = toProblem(error)
      if (problem.status >= 500) {
        request.log.error({ err: error }, problem.status === 503 ? 'database unavailable' : 'unhandled error')
      }
      return sendProblem(request, reply, problem)
    })
    app.setNotFoundHandler((request, reply) => sendProblem(request, reply, problems.routeNotFound()))
  },
  { name: 'problems' },
)
