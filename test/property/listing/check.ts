import assert from 'node:assert/strict'
import { STATUS_CODES } from 'node:http'
import type { LightMyRequestResponse } from 'fastify'
import type { ModelAnswer, ModelRequest } from '../../helpers/fixtures/model.js'

/** Compares an answer with the model's, and counts what the run exercised. */

export interface CheckStats {
  cases: number
  requests: number
  byStatus: Map<number, number>
  /** 200 answers with a non-empty page after the first one */
  laterPages: number
  /** 200 answers whose page holds same-name siblings */
  tiedNames: number
  /** 200 answers whose limit was clamped to 100 */
  clamped: number
  /** writes between requests: Store (delete, freeze, unfreeze, revoke) and plain SQL */
  writes: number
  /** listing reads served by a read replica (a backend with one) and by the primary */
  replicaReads: number
  primaryReads: number
}

export function newStats(): CheckStats {
  return {
    cases: 0,
    requests: 0,
    byStatus: new Map(),
    laterPages: 0,
    tiedNames: 0,
    clamped: 0,
    writes: 0,
    replicaReads: 0,
    primaryReads: 0,
  }
}

const PROBLEM_FIELDS = ['code', 'detail', 'request_id', 'status', 'title', 'type']

export function describe(req: ModelRequest, res: LightMyRequestResponse, expected: ModelAnswer): string {
  return [
    `request: cookie=${JSON.stringify(req.cookie)} query=${JSON.stringify(req.query)}`,
    `expected: ${JSON.stringify(expected).slice(0, 4000)}`,
    `actual: ${res.statusCode} ${res.payload.slice(0, 4000)}`,
  ].join('\n')
}

/** Compares one answer of the service with the model's, field by field. */
export function assertMatchesModel(
  req: ModelRequest,
  res: LightMyRequestResponse,
  expected: ModelAnswer,
): void {
  const context = describe(req, res, expected)
  assert.equal(res.statusCode, expected.status, context)
  if (expected.status === 200) {
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', context)
    assert.deepStrictEqual(JSON.parse(res.payload), expected.body, context)
    return
  }
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, context)
  const body = JSON.parse(res.payload) as Record<string, unknown>
  assert.deepEqual(Object.keys(body).sort(), PROBLEM_FIELDS, context)
  assert.equal(body.status, expected.status, context)
  assert.equal(body.code, expected.code, context)
  assert.equal(body.type, 'about:blank', context)
  assert.equal(body.title, STATUS_CODES[expected.status], context)
  assert.equal(body.request_id, res.headers['x-request-id'], context)
  if (expected.status === 400) {
    const detail = String(body.detail)
    assert.ok(
      expected.params.some((p) => detail.includes(`'${p}'`)),
      `400 detail should name one of ${expected.params.join(', ')}\n${context}`,
    )
  }
  if (expected.status === 401) {
    assert.equal(
      res.headers['www-authenticate'],
      'Cookie realm="folder-service", cookie-name="session_id"',
      context,
    )
  }
}

export function record(stats: CheckStats, expected: ModelAnswer, pageOf: number): void {
  stats.requests++
  stats.byStatus.set(expected.status, (stats.byStatus.get(expected.status) ?? 0) + 1)
  if (expected.status !== 200) return
  const { folders, limit } = expected.body
  if (pageOf > 1 && folders.length > 0) stats.laterPages++
  if (limit === 100 && folders.length === 100) stats.clamped++
  const names = folders.map((f) => f.name)
  if (new Set(names).size < names.length) stats.tiedNames++
}

export function summary(stats: CheckStats): string {
  const statuses = [...stats.byStatus.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([s, n]) => `${s}:${n}`)
    .join(' ')
  return (
    `${stats.cases} cases, ${stats.requests} requests (${statuses}); ` +
    `${stats.laterPages} later pages, ${stats.tiedNames} pages with same-name siblings, ${stats.clamped} clamped to 100, ` +
    `${stats.writes} writes between requests (Store and plain SQL); ` +
    `listings read on a replica: ${stats.replicaReads}, on the primary: ${stats.primaryReads}`
  )
}
