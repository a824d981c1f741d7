import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { sqliteBackend } from '../helpers/databases/backends.js'
import { Findings, openFuzzTarget, type FuzzTarget } from '../helpers/fixtures/hostile.js'
import { rawExchange, type RawExchange } from '../helpers/http/raw-http.js'

/**
 * Hostile bytes on a real socket (app.listen on 127.0.0.1, port 0), for what app.inject
 * cannot send: malformed request lines, invalid header bytes, oversized headers, request
 * smuggling shapes, pipelining. The database plays no part (SQLite only).
 *
 * Two rules, checked separately so that one report shows which is broken:
 * 1. robustness: an answer (4xx, never 5xx) or a closed connection within 5 s, and the
 *    server still serves the next client;
 * 2. docs/api.md "Errors": every 4xx, including those of the HTTP parser, is problem+json.
 */

const HOST = 'Host: 127.0.0.1\r\n'

/** Requests that are not HTTP, or break its framing: the parser must refuse them. */
const MALFORMED: [string, string | Buffer][] = [
  ['not HTTP at all', 'GARBAGE\r\n\r\n'],
  ['unknown version', `GET /v1/folders HTTP/9.9\r\n${HOST}\r\n`],
  ['space inside the target', `GET /v1/fol ders HTTP/1.1\r\n${HOST}\r\n`],
  [
    'raw UTF-8 bytes in the target',
    Buffer.concat([Buffer.from('GET /v1/folders?page=\u00e9'), Buffer.from(` HTTP/1.1\r\n${HOST}\r\n`)]),
  ],
  ['NUL in the target', `GET /v1/folders\u0000 HTTP/1.1\r\n${HOST}\r\n`],
  ['NUL in a header value', `GET /v1/folders HTTP/1.1\r\n${HOST}X-A: a\u0000b\r\n\r\n`],
  ['lone CR in a header value', `GET /v1/folders HTTP/1.1\r\n${HOST}X-A: a\rb\r\n\r\n`],
  ['space in a header name', `GET /v1/folders HTTP/1.1\r\n${HOST}X A: b\r\n\r\n`],
  ['header without a colon', `GET /v1/folders HTTP/1.1\r\n${HOST}Cookie\r\n\r\n`],
  ['obsolete line folding', `GET /v1/folders HTTP/1.1\r\n${HOST}Cookie: a=b\r\n session_id=x\r\n\r\n`],
  ['bare LF line endings', 'GET /v1/folders HTTP/1.1\nHost: 127.0.0.1\n\n'],
  [
    'Content-Length and Transfer-Encoding',
    `POST /v1/folders HTTP/1.1\r\n${HOST}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
  ],
  [
    'two Content-Lengths',
    `POST /v1/folders HTTP/1.1\r\n${HOST}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab`,
  ],
  ['negative Content-Length', `POST /v1/folders HTTP/1.1\r\n${HOST}Content-Length: -1\r\n\r\n`],
  ['bad chunk size', `POST /v1/folders HTTP/1.1\r\n${HOST}Transfer-Encoding: chunked\r\n\r\nzz\r\n\r\n`],
  ['HTTP/2 preface on HTTP/1.1', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  ['HTTP/1.1 without Host', 'GET /v1/folders HTTP/1.1\r\n\r\n'],
  ['lower-case method', `get /v1/folders HTTP/1.1\r\n${HOST}\r\n`],
  // Refused by Node's server rather than its parser (checkExpectation, connect events).
  ['unsupported Expect', `GET /v1/folders HTTP/1.1\r\n${HOST}Expect: 999-foo\r\n\r\n`],
  [
    'unknown Expect on a POST',
    `POST /v1/folders HTTP/1.1\r\n${HOST}Expect: 200-ok\r\nContent-Length: 1\r\n\r\nx`,
  ],
  ['CONNECT', 'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n'],
  ['CONNECT to a path', `CONNECT /v1/folders HTTP/1.1\r\n${HOST}\r\n`],
]

/** Bytes sent right after a valid request, in the same write (a broken pipelining client). */
const PIPELINED_GARBAGE: [string, string | Buffer][] = [
  ['a line of garbage', 'GARBAGE\r\n\r\n'],
  ['NUL bytes', Buffer.from([0, 0, 0, 13, 10, 13, 10])],
  ['a bad header in the next request', `GET /v1/folders HTTP/1.1\r\n${HOST}X A: b\r\n\r\n`],
  [
    'an oversized next request',
    `GET /v1/folders HTTP/1.1\r\n${HOST}Cookie: a=${'x'.repeat(100 * 1024)}\r\n\r\n`,
  ],
  ['an unknown version next', `GET /v1/folders HTTP/9.9\r\n${HOST}\r\n`],
]

/** Headers beyond the server's limit: 431 (Node's default maxHeaderSize is 16 KB). */
const OVERSIZED: [string, string][] = [
  [
    'a 100 KB Cookie header',
    `GET /v1/folders HTTP/1.1\r\n${HOST}Cookie: a=${'x'.repeat(100 * 1024)}\r\n\r\n`,
  ],
  [
    '3,000 headers',
    `GET /v1/folders HTTP/1.1\r\n${HOST}${Array.from({ length: 3000 }, (_, i) => `X-${i}: 1\r\n`).join('')}\r\n`,
  ],
  ['a 100 KB request line', `GET /v1/folders?x=${'9'.repeat(100 * 1024)} HTTP/1.1\r\n${HOST}\r\n`],
]

/** Odd but valid HTTP the parser lets through: the app must answer them within its contract. */
const ODD_BUT_VALID: [string, string, number][] = [
  [
    'absolute-form target',
    `GET http://elsewhere.example/v1/folders HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`,
    401,
  ],
  ['asterisk-form OPTIONS', `OPTIONS * HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`, 404],
  ['HTTP/1.0 without Host', 'GET /v1/folders HTTP/1.0\r\n\r\n', 401],
  [
    'bad escapes in the query',
    `GET /v1/folders?page=%zz&%C0%80=%&limit=%00 HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`,
    401,
  ],
]

function firstStatus(x: RawExchange): number | undefined {
  return x.responses[0]?.status
}

function show(x: RawExchange): string {
  const r = x.responses[0]
  return r === undefined
    ? `no response (closed=${x.closed} timedOut=${x.timedOut} error=${x.error} rest=${JSON.stringify(x.rest.slice(0, 200))})`
    : `${r.status} ${r.reason} content-type=${r.headers['content-type']} body=${r.body.slice(0, 200)}`
}

describe('raw HTTP on a listening server', () => {
  let t: FuzzTarget
  let port: number
  const ok = () =>
    `GET /v1/folders HTTP/1.1\r\n${HOST}Cookie: session_id=${t.aliceSession}\r\nConnection: close\r\n\r\n`

  before(async () => {
    t = await openFuzzTarget(sqliteBackend)
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    port = (t.app.server.address() as AddressInfo).port
  })
  after(async () => {
    await t?.close()
  })

  const malformedAndOversized = [...MALFORMED, ...OVERSIZED]

  it('refuses malformed and oversized requests with a 4xx and a closed connection, never a 5xx or a hang', async () => {
    const findings = new Findings()
    for (const [name, bytes] of malformedAndOversized) {
      const x = await rawExchange(port, bytes)
      findings.check(name, () => {
        assert.equal(x.timedOut, false, `hung: ${show(x)}`)
        const status = firstStatus(x)
        // The server may also just close: acceptable for bytes that are not HTTP at all.
        if (status !== undefined) assert.ok(status >= 400 && status < 500, show(x))
        else assert.equal(x.closed, true, show(x))
      })
      // Still serving: a well-formed request on a new connection succeeds.
      const next = await rawExchange(port, ok())
      findings.check(`${name}: next request`, () => assert.equal(firstStatus(next), 200, show(next)))
    }
    findings.assertNone('malformed requests')
  })

  it('answers oversized headers with 431', async () => {
    for (const [name, bytes] of OVERSIZED) {
      const x = await rawExchange(port, bytes)
      assert.equal(firstStatus(x), 431, `${name}: ${show(x)}`)
    }
  })

  it('answers odd but valid requests within the contract (problem+json, no 5xx)', async () => {
    const findings = new Findings()
    for (const [name, bytes, status] of ODD_BUT_VALID) {
      const x = await rawExchange(port, bytes)
      findings.check(name, () => {
        const r = x.responses[0]
        assert.ok(r !== undefined, show(x))
        assert.ok(r.status < 500, show(x))
        assert.equal(r.status, status, show(x))
        if (r.status >= 400)
          assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/, show(x))
      })
    }
    findings.assertNone('odd but valid requests')
  })

  it('answers pipelined requests in order on one connection', async () => {
    const get = (query: string) =>
      `GET /v1/folders?${query} HTTP/1.1\r\n${HOST}Cookie: session_id=${t.aliceSession}\r\n\r\n`
    const x = await rawExchange(
      port,
      [get('limit=1'), get('page=0'), get(`folder_id=${t.bobFolder}`), ok()],
      {
        expect: 4,
      },
    )
    assert.deepEqual(
      x.responses.map((r) => r.status),
      [200, 400, 404, 200],
      show(x),
    )
  })

  it('answers the valid requests pipelined before garbage, then a 4xx problem+json, then closes', async () => {
    const valid = `GET /v1/folders HTTP/1.1\r\n${HOST}Cookie: session_id=${t.aliceSession}\r\n\r\n`
    const findings = new Findings()
    for (const [name, garbage] of PIPELINED_GARBAGE) {
      for (const before of [1, 3]) {
        const x = await rawExchange(
          port,
          Buffer.concat([Buffer.from(valid.repeat(before)), Buffer.from(garbage)]),
          {
            expect: before + 1,
          },
        )
        findings.check(`${name} after ${before}`, () => {
          const statuses = x.responses.map((r) => r.status)
          assert.deepEqual(statuses.slice(0, before), Array<number>(before).fill(200), show(x))
          const last = x.responses[before]
          assert.ok(
            last !== undefined && last.status >= 400 && last.status < 500,
            `${statuses.join(',')} ${show(x)}`,
          )
          assert.match(last.headers['content-type'] ?? '', /^application\/problem\+json/)
          assert.equal(x.responses.length, before + 1)
          assert.equal(x.closed, true)
        })
      }
    }
    findings.assertNone('valid requests pipelined before garbage')
  })

  it('answers every 4xx of the HTTP parser in problem+json (docs/api.md "Errors")', async () => {
    // Node's parser (or its server: Expect, CONNECT) refuses these before Fastify routes
    // them, and would answer in its own shape (or not at all) unless the app gives one.
    const findings = new Findings()
    for (const [name, bytes] of malformedAndOversized) {
      const x = await rawExchange(port, bytes)
      const r = x.responses[0]
      if (r === undefined) continue
      findings.check(`${name} -> ${r.status}`, () => {
        assert.match(r.headers['content-type'] ?? '(none)', /^application\/problem\+json/, show(x))
        const body = JSON.parse(r.body) as Record<string, unknown>
        assert.equal(body.status, r.status, show(x))
      })
    }
    findings.assertNone('parser-level 4xx answers that are not problem+json')
  })
})
