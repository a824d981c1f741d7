import assert from 'node:assert/strict'
import { STATUS_CODES } from 'node:http'
import type { LightMyRequestResponse } from 'fastify'
import { problemBody, type ProblemJson } from '../apps/test-app.js'

/** Assertions shared by the HTTP contract suites (docs/api.md, 200 answers and "Errors"). */

const CHALLENGE = 'Cookie realm="folder-service", cookie-name="session_id"'
export const JSON_TYPE = 'application/json; charset=utf-8'
export const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
export const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const PROBLEM_KEYS = ['code', 'detail', 'request_id', 'status', 'title', 'type']

export function header(res: LightMyRequestResponse, name: string): string | undefined {
  const value = res.headers[name.toLowerCase()]
  if (value === undefined) return undefined
  return Array.isArray(value) ? value.join(', ') : String(value)
}

/** rel -> URL of a listing's Link header, asserting each entry's `<url>; rel="x"` form. */
export function linkTargets(res: LightMyRequestResponse): Record<string, string> {
  const parsed: Record<string, string> = {}
  for (const entry of String(res.headers.link).split(', ')) {
    const match = /^<([^>]+)>; rel="(\w+)"$/.exec(entry)
    assert.ok(match, `well-formed link: ${entry}`)
    parsed[match[2] as string] = match[1] as string
  }
  return parsed
}

function mediaType(res: LightMyRequestResponse): string | undefined {
  return header(res, 'content-type')?.split(';')[0]?.trim().toLowerCase()
}

/**
 * An RFC 9457 problem with exactly the contract's members, the status's reason phrase as
 * title, and the request id of the X-Request-Id header. Returns the body for more checks.
 */
export function assertProblem(res: LightMyRequestResponse, status: number, code: string): ProblemJson {
  assert.equal(res.statusCode, status, `status (body: ${res.payload})`)
  assert.equal(mediaType(res), 'application/problem+json')
  const body = problemBody(res)
  assert.deepEqual(Object.keys(body).sort(), PROBLEM_KEYS)
  assert.equal(body.type, 'about:blank')
  assert.equal(body.title, STATUS_CODES[status])
  assert.equal(body.status, status)
  assert.equal(body.code, code)
  assert.equal(typeof body.detail, 'string')
  assert.ok(body.detail.length > 0, 'detail is not empty')
  assert.equal(typeof body.request_id, 'string')
  assert.ok(body.request_id.length > 0, 'request_id is not empty')
  assert.equal(header(res, 'x-request-id'), body.request_id)
  return body
}

/** 401 with the challenge and a detail about the session (docs/api.md "Errors"). */
export function assertUnauthorized(res: LightMyRequestResponse): ProblemJson {
  const body = assertProblem(res, 401, 'UNAUTHORIZED')
  assert.equal(header(res, 'www-authenticate'), CHALLENGE)
  assert.match(body.detail, /session/i)
  assert.match(body.detail, /missing|invalid|expired|no session/i)
  return body
}

/** 400 INVALID_INPUT whose detail names `param` and no other parameter. */
export function assertInvalid(
  res: LightMyRequestResponse,
  param: 'folder_id' | 'page' | 'limit',
): ProblemJson {
  const body = assertProblem(res, 400, 'INVALID_INPUT')
  assert.ok(body.detail.includes(param), `detail names ${param}: ${body.detail}`)
  for (const other of ['folder_id', 'page', 'limit'].filter((p) => p !== param)) {
    assert.ok(!body.detail.includes(other), `detail names only ${param}: ${body.detail}`)
  }
  return body
}

/** Splits a header list such as Vary into lower-case tokens. */
export function tokens(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t !== '')
}
