import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { SECURITY_HEADERS } from '../../src/http/plugins/security-headers.js'
import { rawExchange, type RawResponse } from '../helpers/http/raw-http.js'
import { openSeeded, type Seeded } from '../helpers/apps/operability-db.js'
import { ALICE_SESSION } from '../helpers/fixtures/users.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * What Node's HTTP server refuses before Fastify sees a request (docs/api.md "Errors"): answered in
 * problem+json with the usual headers and a request id, logged and counted like any other
 * request. A valid request pipelined before garbage is answered first.
 */

const HOST = 'Host: 127.0.0.1\r\n'

function assertRawProblem(r: RawResponse | undefined, status: number, code: string): string {
  assert.ok(r !== undefined, 'no response')
  assert.equal(r.status, status, r.body)
  assert.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8')
  const body = JSON.parse(r.body) as Record<string, unknown>
  assert.equal(body.status, status)
  assert.equal(body.code, code)
  assert.equal(body.type, 'about:blank')
  assert.match(String(r.headers['x-request-id']), /^[0-9a-f-]{36}$/)
  assert.equal(body.request_id, r.headers['x-request-id'])
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(r.headers[name], value, name)
  assert.equal(Number(r.headers['content-length']), Buffer.byteLength(r.body))
  return String(body.request_id)
}

describe('requests refused by the HTTP server before routing', () => {
  let seeded: Seeded
  let app: FastifyInstance
  let port: number
  const chunks: string[] = []
  const logLines = () =>
    chunks
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  const logged = (requestId: string) => logLines().find((l) => l.request_id === requestId)

  before(async () => {
    seeded = await openSeeded()
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk.toString('utf8'))
        done()
      },
    })
    app = await appOver(seeded.store, { logLevel: 'info' }, { level: 'info', stream })
    await app.listen({ host: '127.0.0.1', port: 0 })
    port = (app.server.address() as AddressInfo).port
  })
  after(async () => {
    await app?.close()
    await seeded?.cleanup()
  })

  async function rejectedCount(method: string, status: number): Promise<number> {
    const text = (await app.inject({ url: '/metrics' })).payload
    const line = text
      .split('\n')
      .find((l) =>
        l.startsWith(`http_requests_total{method="${method}",route="rejected",status="${status}"}`),
      )
    return line === undefined ? 0 : Number(line.split(' ').pop())
  }

  it('answers an unsupported Expect with 417 problem+json, logs and counts it', async () => {
    const x = await rawExchange(port, `GET /v1/folders HTTP/1.1\r\n${HOST}Expect: 999-foo\r\n\r\n`)
    const id = assertRawProblem(x.responses[0], 417, 'INVALID_INPUT')
    assert.equal(x.responses[0]?.headers['transfer-encoding'], undefined)
    assert.deepEqual(
      { status: logged(id)?.status, route: logged(id)?.route, method: logged(id)?.method },
      { status: 417, route: 'rejected', method: 'GET' },
    )
    assert.equal(await rejectedCount('GET', 417), 1)
  })

  it('answers CONNECT with 405 problem+json and Allow, logs and counts it', async () => {
    const x = await rawExchange(port, `CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n`)
    const id = assertRawProblem(x.responses[0], 405, 'METHOD_NOT_ALLOWED')
    assert.equal(x.responses[0]?.headers.allow, 'GET, HEAD')
    assert.equal(logged(id)?.status, 405)
    assert.equal(await rejectedCount('CONNECT', 405), 1)
  })

  it('logs and counts parser errors (400, 431), without the bytes received', async () => {
    const bad = await rawExchange(
      port,
      `GET /v1/folders HTTP/1.1\r\n${HOST}X A: b\r\nCookie: session_id=${ALICE_SESSION}\r\n\r\n`,
    )
    const badId = assertRawProblem(bad.responses[0], 400, 'INVALID_INPUT')
    assert.equal(logged(badId)?.status, 400)
    const big = await rawExchange(
      port,
      `GET /v1/folders HTTP/1.1\r\n${HOST}Cookie: a=${'x'.repeat(100 * 1024)}\r\n\r\n`,
    )
    const bigId = assertRawProblem(big.responses[0], 431, 'INVALID_INPUT')
    assert.equal(logged(bigId)?.status, 431)
    assert.equal(await rejectedCount('UNKNOWN', 400), 1)
    assert.equal(await rejectedCount('UNKNOWN', 431), 1)
    assert.doesNotMatch(chunks.join(''), new RegExp(ALICE_SESSION), 'no session id in the log')
  })

  it('answers a valid request pipelined before garbage, then the 400', async () => {
    const valid = `GET /v1/folders HTTP/1.1\r\n${HOST}Cookie: session_id=${ALICE_SESSION}\r\nX-Request-Id: pipelined-valid\r\n\r\n`
    const x = await rawExchange(
      port,
      `${valid}${valid.replace('pipelined-valid', 'pipelined-second')}GARBAGE\r\n\r\n`,
      {
        expect: 3,
      },
    )
    assert.deepEqual(
      x.responses.map((r) => r.status),
      [200, 200, 400],
      JSON.stringify(x),
    )
    assert.match(x.responses[0]?.body ?? '', /^\{"folders":/)
    assertRawProblem(x.responses[2], 400, 'INVALID_INPUT')
    assert.equal(x.closed, true)
    assert.equal(logged('pipelined-valid')?.status, 200)
    assert.equal(logged('pipelined-second')?.status, 200)
  })
})
