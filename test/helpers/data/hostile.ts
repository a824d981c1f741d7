import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Store } from '../../../src/store/store.js'
import { validateImport } from '../../../src/import/validate-import.js'
import type { Backend } from '../databases/backends.js'
import { appOver } from '../apps/test-app.js'
import { emptyModel, type ModelState } from './model.js'

/**
 * Shared by the hostile-input suites (test/fuzz) and the existence oracle: a small data set
 * with one user of each kind, the app over it, a dictionary of hostile values, and the one
 * rule every answer must keep whatever was sent: 2xx/304, or a 4xx problem+json with the
 * six members; never a 5xx, an internal detail, or a header that carries what was sent.
 */

/**
 * The documented codes, written out rather than imported from src/schemas/problem-codes.ts:
 * a code the service started to send without the list changing here must fail these suites.
 */
export const PROBLEM_CODES = [
  'INVALID_INPUT',
  'UNAUTHORIZED',
  'FROZEN_ACCOUNT',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'RATE_LIMITED',
  'CURSOR_EXPIRED',
  'UNAVAILABLE',
  'INTERNAL',
]
const PROBLEM_MEMBERS = ['code', 'detail', 'request_id', 'status', 'title', 'type']

/** What leaks when an error escapes unhandled: stack frames, file paths, driver names. */
const INTERNALS =
  /\n\s+at |\bat [\w.<>]+ \(|\.ts:\d|\.js:\d|node_modules|SQLITE_|better-sqlite3|\bpg\b|ECONNREFUSED|TypeError|RangeError|SyntaxError/

export function describeResponse(res: LightMyRequestResponse): string {
  return `${res.statusCode} ${JSON.stringify(res.headers)}\n${res.payload.slice(0, 600)}`
}

/**
 * The answer is well formed: a success, a 304, or a 4xx problem+json. Returns the problem
 * body for a 4xx, undefined otherwise. `what` describes the request for the message.
 */
export function assertAcceptable(
  res: LightMyRequestResponse,
  what: string,
): Record<string, unknown> | undefined {
  const context = `${what}\n=> ${describeResponse(res)}`
  const status = res.statusCode
  assert.ok(status < 500, `5xx on hostile input\n${context}`)
  assert.ok((status >= 200 && status < 300) || status === 304 || (status >= 400 && status < 500), context)
  for (const [name, value] of Object.entries(res.headers)) {
    for (const v of Array.isArray(value) ? value : [String(value)]) {
      assert.ok(!/[\r\n\0]/.test(v), `header ${name} carries a control character\n${context}`)
    }
  }
  assert.ok(!('set-cookie' in res.headers), `the API never sets cookies\n${context}`)
  if (status < 400) return undefined
  assert.match(
    String(res.headers['content-type']),
    /^application\/problem\+json/,
    `not problem+json\n${context}`,
  )
  let body: Record<string, unknown>
  try {
    body = JSON.parse(res.payload) as Record<string, unknown>
  } catch {
    assert.fail(`problem body is not JSON\n${context}`)
  }
  assert.deepEqual(Object.keys(body).sort(), PROBLEM_MEMBERS, context)
  assert.equal(body.status, status, context)
  assert.ok(PROBLEM_CODES.includes(String(body.code)), context)
  assert.equal(body.request_id, res.headers['x-request-id'], context)
  assert.doesNotMatch(res.payload, INTERNALS, `internal detail in the body\n${context}`)
  return body
}

/**
 * Runs many checks and fails once at the end with every failure listed (first line of each),
 * so one report shows the whole extent of a bug rather than its first instance.
 */
export class Findings {
  private readonly failures: string[] = []
  checked = 0

  check(what: string, assertion: () => void): void {
    this.checked++
    try {
      assertion()
    } catch (error) {
      const lines = (error instanceof Error ? error.message : String(error))
        .split('\n')
        .filter((l) => l.trim() !== '')
      const detail = lines.length > 1 ? `\n    ${(lines[lines.length - 1] ?? '').slice(0, 300)}` : ''
      this.failures.push(`- ${what.slice(0, 200)}: ${(lines[0] ?? '').slice(0, 300)}${detail}`)
    }
  }

  assertNone(summary: string): void {
    assert.ok(this.checked > 0, 'nothing was checked')
    assert.equal(
      this.failures.length,
      0,
      `${summary}: ${this.failures.length} of ${this.checked} failed\n${this.failures.join('\n')}`,
    )
  }
}

/** A hang is a failure, not a slow test: callers bound every answer. */
export { within } from '../processes/cli.js'

// ---------------------------------------------------------------- the hostile dictionary

const KB100 = 100 * 1024

/**
 * Values for any parameter, header or cookie. A few are valid but extreme pages and limits
 * (the largest page, clamped limits): they reach the database with huge offsets.
 */
export const HOSTILE_VALUES: readonly string[] = [
  '2147483647',
  '002147483647',
  '2147483646',
  '1000000',
  '101',
  '',
  ' ',
  '-0',
  '-1',
  '0',
  '00',
  '1.0',
  '1e3',
  '1E3',
  '1e309',
  '0x1f',
  '0X1F',
  '0o17',
  '0b11',
  '1_000',
  '017e1',
  'Infinity',
  '-Infinity',
  'NaN',
  '2147483648',
  '4294967297',
  '9007199254740993',
  '18446744073709551617',
  '9'.repeat(400),
  '１',
  '٣',
  '¹',
  "' OR 1=1 --",
  "'; DROP TABLE folders; --",
  '" OR ""="',
  '1) OR (1=1',
  "1' UNION SELECT password_hash FROM users --",
  '$1',
  '?',
  '\\x27',
  '../',
  '../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '/v1/folders',
  'file:///etc/passwd',
  '\u0000',
  'a\u0000b',
  '\u0001\u001f\u007f',
  '\u0008\u001b[31m',
  '\r\n',
  'x\r\nSet-Cookie: injected=1',
  'x\nX-Injected: 1',
  '😀',
  '\ud800',
  '\udfff\ud800',
  '\ufeff1',
  '\u202e1',
  '\u00a01',
  'ｆｏｌｄｅｒ',
  '<script>alert(1)</script>',
  '${7*7}',
  '{{7*7}}',
  '%s%s%s%n',
  '__proto__',
  'constructor',
  'hasOwnProperty',
  '[]',
  '{}',
  'null',
  'undefined',
  'true',
  '[object Object]',
  '{00000000-0000-4000-8000-000000000001}',
  'urn:uuid:00000000-0000-4000-8000-000000000001',
  '00000000-0000-4000-8000-00000000000G',
  '00000000-0000-4000-8000-0000000000012',
  '000000000000400080000000000000001',
  'x'.repeat(KB100),
  '%'.repeat(1000),
  '😀'.repeat(20_000),
]

/** Raw query strings (no `?`) whose structure is hostile: brackets, repeats, bad escapes. */
export const HOSTILE_QUERIES: readonly string[] = [
  'page[]=1',
  'page[0]=1',
  'page[a]=1',
  'page[a][b]=1',
  'limit[]=1&limit[]=2',
  'folder_id[]=00000000-0000-4000-8000-000000000001',
  'folder_id[$ne]=x',
  'page=1&page=2',
  'limit=1&limit=1',
  'folder_id=a&folder_id=b',
  'page',
  'page=',
  'page==1',
  '=1',
  '=',
  '&&&',
  '&page=1&',
  '%',
  '%zz',
  '%C0%80',
  '%00',
  '%E0%A4%A',
  '%FF%FE',
  'page=%',
  'page=%zz',
  'page=%C0%80',
  'page=%00',
  'page=%F0%9F%98',
  'page=%2B1',
  'page=+1',
  'page=1%00',
  'page=%EF%BC%91',
  'folder_id=%E0%A4%A',
  'folder_id=%00',
  '%70age=0',
  'p%61ge=1&p%61ge=1',
  '__proto__=1',
  '__proto__[page]=1',
  'constructor[prototype][page]=1',
  'hasOwnProperty=1',
  'page=1;limit=2',
  'page=1&limit=0x10',
  'limit=1e2',
  'limit=101&limit=',
  '?page=1',
  `${'a'.repeat(KB100)}=1`,
  `page=${'9'.repeat(KB100)}`,
  `folder_id=${'0'.repeat(KB100)}`,
  Array.from({ length: 5000 }, () => 'page=1').join('&'),
  Array.from({ length: 5000 }, (_, i) => `p${i}=${i}`).join('&'),
]

/** Cookie headers: repeats, quoting, escapes, sizes, prototype keys (the valid id is spliced in). */
export function hostileCookies(valid: string): string[] {
  return [
    '',
    ';',
    ';;;;',
    '=;;=',
    'session_id',
    'session_id=',
    'session_id= ',
    `session_id="${valid}"`,
    `session_id=%${valid}`,
    `session_id=${valid}%00`,
    `session_id=${valid}\u0000`,
    `session_id=${valid}x`,
    `session_id=${valid.replace(/-/g, '')}`,
    `session_id=${'%41'.repeat(2000)}`,
    `session_id=${'%'.repeat(100)}`,
    `session_id=%E0%A4%A`,
    `session_id=%zz; session_id=${valid}`,
    `session_id=garbage; session_id=${valid}`,
    `SESSION_ID=${valid}`,
    `session_id =x; session_id=${valid}`,
    `__proto__=1; session_id=x`,
    `constructor=1; toString=2; session_id=x`,
    `a=${'x'.repeat(KB100)}`,
    Array.from({ length: 5000 }, (_, i) => `c${i}=${i}`).join('; '),
    `session_id=${'x'.repeat(KB100)}`,
    "session_id=' OR 1=1 --",
    'session_id=x\r\nSet-Cookie: injected=1',
    'session_id=😀',
  ]
}

/** Paths next to the API's: case, slashes, dots, escapes, sizes. */
export const HOSTILE_PATHS: readonly string[] = [
  '/v1/folders/',
  '/v1//folders',
  '//v1/folders',
  '/V1/FOLDERS',
  '/v1/folders/..',
  '/v1/folders/../folders',
  '/v1/./folders',
  '/docs/../v1/folders',
  '/v1/folders%2F',
  '/v1/folders%00',
  '/v1/folders;jsessionid=1',
  '/v1/folders.json',
  '/v1/folders/00000000-0000-4000-8000-000000000001',
  '/v1/%zz',
  '/v1/folders%zz',
  '/%C0%80',
  '/%',
  '/v1/folders??page=1',
  `/${'a'.repeat(KB100)}`,
  '/v2/folders',
  '/v1/files',
  '/v1/files/mine',
  '/v1/accounts',
]

// ---------------------------------------------------------------- a small data set

export interface FuzzTarget {
  app: FastifyInstance
  /** the store under `app`, for apps built with other settings */
  store: Store
  model: ModelState
  /** a live session of alice (not frozen) */
  aliceSession: string
  /** a live session of carol (frozen) */
  frozenSession: string
  expiredSession: string
  /** alice's live folder with children */
  aliceFolder: string
  aliceDeleted: string
  /** a live folder of bob, with a child */
  bobFolder: string
  bobDeleted: string
  /** a UUID no record uses */
  unknown: string
  close(): Promise<void>
}

/** A fresh store of `backend` with the small data set, and the app over it (rate limit off). */
export async function openFuzzTarget(backend: Backend): Promise<FuzzTarget> {
  const opened = await backend.open()
  const store = opened.store
  const p = randomBytes(4).toString('hex')
  const id = (kind: string, n: number) => `${p}-0000-4000-${kind}-${n.toString(16).padStart(12, '0')}`
  const alice = id('8000', 1)
  const bob = id('8000', 2)
  const carol = id('8000', 3)
  const now = Date.now()
  const doc = {
    users: [
      { id: alice, username: `alice-${p}`, email: 'alice@private.example', password_hash: 'secret-hash-a' },
      {
        id: bob,
        username: `bob-${p}`,
        avatar_url: 'https://cdn.example/b.png',
        password_hash: 'secret-hash-b',
      },
      { id: carol, username: `carol-${p}`, is_suspended: true },
    ],
    sessions: [
      { id: id('9000', 1), user_id: alice, expires_at: '2100-01-01T00:00:00Z' },
      { id: id('9000', 2), user_id: bob, expires_at: null },
      { id: id('9000', 3), user_id: carol, expires_at: '2100-01-01T00:00:00Z' },
      { id: id('9000', 4), user_id: alice, expires_at: '2001-01-01T00:00:00Z' },
    ],
    folders: [
      { id: id('a000', 1), name: 'Docs', folder_id: null, owner_id: alice },
      { id: id('a000', 2), name: 'inner', folder_id: id('a000', 1), owner_id: alice },
      { id: id('a000', 3), name: 'Gone', folder_id: null, owner_id: alice, is_deleted: true },
      { id: id('a000', 4), name: 'under gone', folder_id: id('a000', 3), owner_id: alice },
      { id: id('a000', 5), name: 'Docs', folder_id: null, owner_id: bob },
      { id: id('a000', 6), name: 'bob inner', folder_id: id('a000', 5), owner_id: bob },
      { id: id('a000', 7), name: 'bob gone', folder_id: null, owner_id: bob, is_deleted: true },
      { id: id('a000', 8), name: 'carol', folder_id: null, owner_id: carol },
    ],
    files: [{ name: 'secret.txt', folder_id: id('a000', 1), owner_id: alice, size: 1 }],
  }
  const data = validateImport(doc, now)
  await store.importData(data)
  const model = emptyModel()
  for (const { row } of data.users) model.users.set(row.id, row)
  for (const { row } of data.sessions) model.sessions.set(row.id, row)
  for (const { row } of data.folders) model.folders.set(row.id, row)
  // The test app's defaults as they are: hostile requests by the thousand must not meet the rate limit.
  const app = await appOver(store)
  return {
    app,
    store,
    model,
    aliceSession: id('9000', 1),
    frozenSession: id('9000', 3),
    expiredSession: id('9000', 4),
    aliceFolder: id('a000', 1),
    aliceDeleted: id('a000', 3),
    bobFolder: id('a000', 5),
    bobDeleted: id('a000', 7),
    unknown: id('dead', 0xdead),
    async close() {
      await app.close()
      await opened.cleanup()
    },
  }
}

/** The query parameters, headers and cookie of GET /v1/folders as the OpenAPI document lists them. */
export interface DocumentedParameters {
  query: string[]
  header: string[]
  cookie: string[]
}

interface OpenApiParameter {
  in: string
  name: string
}

/** Reads them from GET /v1/openapi.json (the document is generated from the route schemas). */
export async function documentedParameters(app: FastifyInstance): Promise<DocumentedParameters> {
  const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' })
  assert.equal(res.statusCode, 200, 'the OpenAPI document is served')
  const doc = JSON.parse(res.payload) as {
    paths: Record<string, { get?: { parameters?: OpenApiParameter[] } }>
    components?: { securitySchemes?: Record<string, { type: string; in?: string; name?: string }> }
  }
  const parameters = doc.paths['/v1/folders']?.get?.parameters ?? []
  const of = (place: string) => parameters.filter((p) => p.in === place).map((p) => p.name)
  const cookies = Object.values(doc.components?.securitySchemes ?? {})
    .filter((s) => s.type === 'apiKey' && s.in === 'cookie' && s.name !== undefined)
    .map((s) => s.name as string)
  return { query: of('query'), header: of('header'), cookie: [...of('cookie'), ...cookies] }
}

/** Percent-encodes any string as UTF-8 (lone surrogates become U+FFFD, as a browser sends them). */
export function encodeAny(value: string): string {
  return [...Buffer.from(value, 'utf8')]
    .map((b) =>
      (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2d
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('')
}

/** Not a C0 control character nor DEL (which no client can put in a URL or a header line). */
function printable(c: string): boolean {
  const code = c.codePointAt(0) ?? 0
  return code >= 0x20 && code !== 0x7f
}

/**
 * Random requests for the fuzz properties: query strings of documented names (and their
 * bracketed forms) with hostile, random or valid values, encoded properly, sent raw or cut
 * mid-escape; and cookies that are valid, absent, hostile, or valid behind a hostile one.
 */
export function hostileRequestArb(
  queryNames: string[],
  session: string,
): fc.Arbitrary<{ query: string; cookie: string | undefined }> {
  const names = fc.constantFrom(...queryNames, ...queryNames.map((n) => `${n}[]`), 'x', '')
  const value = fc.oneof(
    fc.constantFrom(...HOSTILE_VALUES.filter((v) => v.length < 1000)),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.integer().map(String),
    fc.integer({ min: 1, max: 2_147_483_647 }).map(String),
    fc.uuid(),
  )
  const pair = fc.tuple(names, value, fc.constantFrom('encoded', 'raw', 'cut')).map(([n, v, how]) => {
    if (how === 'encoded') return `${encodeAny(n)}=${encodeAny(v)}`
    if (how === 'cut') return `${n}=${encodeAny(v).slice(0, -1)}`
    // Raw: what a careless client sends, made printable enough to fit in a URL.
    const raw = [...`${n}=${v}`].filter((c) => printable(c) && !/[\s#\ud800-\udfff]/.test(c)).join('')
    return encodeURI(raw)
  })
  const query = fc.array(pair, { maxLength: 6 }).map((pairs) => pairs.join('&'))
  const cookie = fc.oneof(
    fc.constant(`session_id=${session}`),
    fc.constant(undefined),
    value.map((v) => `session_id=${[...v].filter(printable).join('')}`),
    value.map((v) => `x=${[...v].filter((c) => printable(c) && c !== ';').join('')}; session_id=${session}`),
  )
  return fc.record({ query, cookie })
}
