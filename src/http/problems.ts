import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorFormatter } from 'fastify/types/schema.js'
import { StoreUnavailableError } from '../store/store.js'
import type { ProblemBody, ProblemCode } from '../schemas/problem.js'
import { LISTING_PARAMETER_RULES, type ParameterRules } from '../schemas/parameter-rules.js'

/**
 * Every error leaves as RFC 9457 problem+json (docs/api.md "Errors"). Handlers throw an
 * HttpProblem; toProblem turns it, validation errors, database outages and anything
 * unexpected into the one body shape, hiding internals of 5xx (the error handler,
 * plugins/error-handlers.ts, sends it).
 */

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

/** Seconds a client should wait before retrying a 503. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2

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
  /** 400 naming a query parameter and its rule (the listing's rules unless a route has its own). */
  invalidParameter: <Rules extends ParameterRules = typeof LISTING_PARAMETER_RULES>(
    param: keyof Rules & string,
    rules: Rules = LISTING_PARAMETER_RULES as ParameterRules as Rules,
  ) => new HttpProblem(400, 'INVALID_INPUT', `Query parameter '${param}' ${rules[param]}.`),
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

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  problem: HttpProblem,
): FastifyReply {
  const body = problemBody(problem, request.id)
  return reply.code(problem.status).headers(problem.headers).type(PROBLEM_CONTENT_TYPE).send(body)
}

/** The problem details body of `problem` (RFC 9457, docs/api.md "Errors"). */
export function problemBody(problem: HttpProblem, requestId: string): ProblemBody {
  return {
    type: 'about:blank',
    title: STATUS_CODES[problem.status] ?? 'Error',
    status: problem.status,
    code: problem.code,
    detail: problem.detail,
    request_id: requestId,
  }
}

/** A schema validation failure as the 400 naming the first offending parameter by its rule. */
function validationProblem(
  errors: readonly FastifySchemaValidationError[] | undefined,
  context: string | undefined,
  rules: ParameterRules,
): HttpProblem {
  const param = errors?.[0]?.instancePath.replace(/^\//, '').split('/')[0] ?? ''
  if (Object.hasOwn(rules, param)) return problems.invalidParameter(param, rules)
  return problems.invalidInput(`The ${context ?? 'request'} is malformed.`)
}

/**
 * A route's `schemaErrorFormatter` for a route whose parameters have rules of their own
 * (the same name can mean another thing on another route: a changes `cursor` is not a
 * listing's continuation token).
 */
export const parameterProblems =
  (rules: ParameterRules): SchemaErrorFormatter =>
  (errors, context) =>
    validationProblem(errors, context, rules)

const fromValidation = (error: FastifyError): HttpProblem =>
  validationProblem(error.validation, error.validationContext, LISTING_PARAMETER_RULES)

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
