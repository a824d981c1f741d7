import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import type { IncomingMessage } from 'node:http'
import { describe, it } from 'node:test'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import { lazyRequestLogger } from '../../src/http/plugins/request-logger.js'

/** The request logger made when it first writes (http/plugins/request-logger.ts). */

function logged(level: string) {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'))
      done()
    },
  })
  const app = Fastify({ logger: { level, stream } })
  const child = (bindings: Record<string, string>): FastifyBaseLogger =>
    lazyRequestLogger.call(app, app.log, bindings, {}, {} as IncomingMessage)
  // The time differs between lines; everything else must be equal.
  const parsed = () =>
    lines.map((line) => {
      const fields = JSON.parse(line) as Record<string, unknown>
      delete fields.time
      return fields
    })
  return { app, child, parsed, lines }
}

describe('lazy request logger', () => {
  it('writes the very line the eager child writes', () => {
    const { app, child, parsed } = logged('info')
    child({ request_id: 'r-1' }).info({ status: 200 }, 'request')
    app.log.child({ request_id: 'r-1' }).info({ status: 200 }, 'request')
    child({ request_id: 'r-2' }).error(new Error('boom'))
    app.log.child({ request_id: 'r-2' }).error(new Error('boom'))
    const [lazyInfo, eagerInfo, lazyError, eagerError] = parsed()
    assert.deepEqual(lazyInfo, eagerInfo)
    assert.equal(lazyInfo?.request_id, 'r-1')
    assert.deepEqual(
      { ...lazyError, err: undefined },
      { ...eagerError, err: undefined },
      'the same line but for the stack',
    )
    assert.equal(lazyError?.request_id, 'r-2')
  })

  it('writes nothing below the level, and follows a level changed later', () => {
    const { app, child, lines } = logged('warn')
    const log = child({ request_id: 'r-3' })
    log.info('hidden')
    log.debug('hidden')
    assert.equal(lines.length, 0)
    assert.equal(log.level, 'warn')
    app.log.level = 'info'
    log.info('shown')
    assert.equal(lines.length, 1)
    assert.match(lines[0] ?? '', /"request_id":"r-3".*"msg":"shown"/)
  })

  it('makes an eager child when the route asks for its own level', () => {
    const { app, lines } = logged('warn')
    const log = lazyRequestLogger.call(
      app,
      app.log,
      { request_id: 'r-4' },
      { level: 'info' },
      {} as IncomingMessage,
    )
    log.info('route level')
    assert.equal(lines.length, 1)
  })
})
