import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import { OtlpReceiver, type ReceivedSpan } from '../../harness/otlp-receiver.js'
import { SPAN_KIND } from '../../harness/otlp-decode.js'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { DEFAULTS } from '../../src/config.js'
import { startTracing } from '../../src/tracing/start-tracing.js'
import { allBackends, postgresBackend, sqliteBackend, type Backend } from '../helpers/databases/backends.js'
import { tcpProxy, type TcpProxy } from '../helpers/databases/tcp-proxy.js'
import { serveBackend, type ServedBackend } from '../helpers/apps/served-backend.js'
import { appOver } from '../helpers/apps/test-app.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { openEventStream } from '../helpers/http/event-stream-client.js'
import { logRecords, runCli, startService, type Service } from '../helpers/processes/cli.js'
import { tempDir, writeJson } from '../helpers/processes/cli-database.js'

/**
 * Traces as an operator's collector receives them (docs/operations.md "Tracing"): the service
 * runs as a process with the OTLP/HTTP exporter pointed at a receiver in this test, which
 * decodes every export (protobuf, or JSON). Asserted: the spans' names, kinds, parents and
 * attributes, the continuation of an incoming `traceparent`, the trace ids in the log line,
 * no secret in anything sent, the samplers, and the spans of a feed delivery, a wait for a
 * primary and an import. Off (the default), none of the OpenTelemetry SDK is loaded.
 */

const OWNER = uuid('07e10000', 1)
const SESSION = uuid('07e10000', 2)
const PHOTOS = uuid('07e10000', 3)
const TRIPS = uuid('07e10000', 4)
const COOKIE = { cookie: `session_id=${SESSION}` }

/** Flushed at once: each test waits for its spans, not for the SDK's 5 s default. */
const traced = (receiver: OtlpReceiver, extra: Record<string, string> = {}) => ({
  OTEL_TRACES_EXPORTER: 'otlp',
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_BSP_SCHEDULE_DELAY: '50',
  ...extra,
})

const fill = (store: Parameters<Parameters<typeof serveBackend>[1]>[0]) =>
  seedOwner(store, {
    owner: OWNER,
    username: 'tracy',
    sessions: [SESSION],
    folders: [
      { id: PHOTOS, name: 'Photos' },
      { id: TRIPS, name: 'Trips', folder_id: PHOTOS },
    ],
  })

/** A fresh W3C traceparent of a sampled (or not) caller's span. */
function traceparent(sampled = true) {
  const traceId = randomBytes(16).toString('hex')
  const spanId = randomBytes(8).toString('hex')
  return { traceId, spanId, header: `00-${traceId}-${spanId}-${sampled ? '01' : '00'}` }
}

const named = (spans: readonly ReceivedSpan[], name: string): ReceivedSpan => {
  const found = spans.filter((span) => span.name === name)
  assert.equal(found.length, 1, `one span '${name}' in: ${spans.map((span) => span.name).join(', ')}`)
  return found[0] as ReceivedSpan
}

const childrenOf = (spans: readonly ReceivedSpan[], parent: ReceivedSpan) =>
  spans.filter((span) => span.parentSpanId === parent.spanId)

/** `span` and its ancestors' names, nearest first, as far as the trace's spans go. */
function ancestry(spans: readonly ReceivedSpan[], span: ReceivedSpan): string[] {
  const names: string[] = []
  for (let at: ReceivedSpan | undefined = span; at !== undefined;) {
    names.push(at.name)
    const parent: string = at.parentSpanId
    at = spans.find((candidate) => candidate.spanId === parent)
  }
  return names
}

const inTrace = (receiver: OtlpReceiver, traceId: string, done: (spans: ReceivedSpan[]) => boolean) =>
  receiver
    .waitFor(
      (all) => done(all.filter((span) => span.traceId === traceId)),
      15_000,
      `the spans of trace ${traceId}`,
    )
    .then((all) => all.filter((span) => span.traceId === traceId))

const hasServerSpan = (spans: ReceivedSpan[]) => spans.some((span) => span.kind === SPAN_KIND.server)

describe('tracing off (the default)', () => {
  it('loads none of the OpenTelemetry SDK: not at start, not for a request', async () => {
    assert.equal(await startTracing(DEFAULTS), null)
    const database = await sqliteBackend.open()
    try {
      await fill(database.store)
      const app = await appOver(database.store)
      try {
        const res = await app.inject({ url: '/v1/folders', headers: COOKIE })
        assert.equal(res.statusCode, 200, res.payload)
        assert.equal(res.headers.traceresponse, undefined)
      } finally {
        await app.close()
      }
    } finally {
      await database.cleanup()
    }
    // The API alone was loaded before tracing existed: prom-client reads it for exemplars.
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter(
      (path) => path.includes('/@opentelemetry/') && !path.includes('/@opentelemetry/api/'),
    )
    assert.deepEqual(loaded, [])
  })
})

describe('tracing over OTLP/HTTP', () => {
  let receiver: OtlpReceiver
  before(async () => {
    receiver = await OtlpReceiver.start()
  })
  after(() => receiver?.close())

  for (const backend of allBackends()) {
    describe(backend.name, { skip: backend.skip }, () => {
      let served: ServedBackend
      let sql: RawSql
      before(async () => {
        served = await serveBackend(backend, fill, traced(receiver, { LONG_POLL_INTERVAL_MS: '100' }))
        sql = await openRawSql(served.url)
      })
      after(async () => {
        await sql?.close()
        await served?.close()
      })
      const system = backend.name === 'sqlite' ? 'sqlite' : 'postgresql'

      it('a listing: the request continuing the caller`s trace, the session check, the cache, the store', async () => {
        const caller = traceparent()
        const res = await fetch(`${served.service.base}/v1/folders?limit=2&folder_id=${PHOTOS}`, {
          headers: { ...COOKIE, traceparent: caller.header, tracestate: 'vendor=kept' },
        })
        assert.equal(res.status, 200, await res.text())
        const spans = await inTrace(receiver, caller.traceId, hasServerSpan)

        const request = named(spans, 'GET /v1/folders')
        assert.equal(request.kind, SPAN_KIND.server)
        assert.equal(request.parentSpanId, caller.spanId)
        assert.equal(request.traceState, 'vendor=kept')
        assert.deepEqual(
          {
            method: request.attributes['http.request.method'],
            route: request.attributes['http.route'],
            status: request.attributes['http.response.status_code'],
            path: request.attributes['url.path'],
            requestId: request.attributes['folder_service.request_id'],
          },
          {
            method: 'GET',
            route: '/v1/folders',
            status: 200,
            path: '/v1/folders',
            requestId: res.headers.get('x-request-id'),
          },
        )
        // Sent in http/protobuf, the default encoding, to the endpoint's /v1/traces.
        assert.deepEqual(
          new Set(receiver.exports.map((sent) => `${sent.contentType} ${sent.path}`)),
          new Set(['application/x-protobuf /v1/traces']),
        )
        // The answer names the span that answered (W3C Trace Context Level 2).
        assert.equal(res.headers.get('traceresponse'), `00-${caller.traceId}-${request.spanId}-01`)

        const check = named(spans, 'session check')
        assert.equal(check.parentSpanId, request.spanId)
        const lookup = named(spans, 'findSessionUser')
        assert.equal(lookup.parentSpanId, check.spanId)
        const listing = named(spans, 'listing')
        assert.equal(listing.parentSpanId, request.spanId)
        assert.equal(listing.attributes['folder_service.listing_cache'], 'miss')
        const read = named(spans, 'listFolders')
        assert.equal(read.parentSpanId, listing.spanId)
        for (const call of [lookup, read]) {
          assert.equal(call.attributes['db.system.name'], system)
          assert.equal(call.attributes['db.system'], system)
          assert.equal(call.attributes['db.operation.name'], call.name)
        }
        if (system === 'postgresql') {
          // Each statement by its name, on the server that ran it (host:port, database, role).
          const { hostname, port, pathname } = new URL(served.url)
          for (const call of [lookup, read]) {
            const statements = childrenOf(spans, call)
            assert.ok(statements.length > 0, `${call.name} has its statements`)
            for (const statement of statements) {
              assert.equal(statement.kind, SPAN_KIND.client)
              assert.match(statement.name, /^folder_service_/)
              assert.equal(statement.attributes['db.query.summary'], statement.name)
              assert.equal(statement.attributes['db.system.name'], 'postgresql')
              assert.equal(statement.attributes['server.address'], hostname)
              assert.equal(statement.attributes['server.port'], Number(port))
              assert.equal(statement.attributes['db.namespace'], pathname.slice(1))
              assert.equal(statement.attributes['folder_service.db.role'], 'primary')
            }
          }
          assert.equal(childrenOf(spans, lookup)[0]?.name, 'folder_service_session_users')
        } else {
          assert.equal(lookup.kind, SPAN_KIND.client)
        }

        // The log line of the request carries its trace and span ids.
        const line = logRecords(served.service).find(
          (record) => record.request_id === res.headers.get('x-request-id'),
        )
        assert.ok(line !== undefined, 'the request has its log line')
        assert.equal(line.trace_id, caller.traceId)
        assert.equal(line.span_id, request.spanId)
        assert.equal(line.trace_flags, '01')

        // The same page again: a hit, and no store read below it.
        const again = traceparent()
        const hit = await fetch(`${served.service.base}/v1/folders?limit=2&folder_id=${PHOTOS}`, {
          headers: { ...COOKIE, traceparent: again.header },
        })
        assert.equal(hit.status, 200)
        const hitSpans = await inTrace(receiver, again.traceId, hasServerSpan)
        const cached = named(hitSpans, 'listing')
        assert.equal(cached.attributes['folder_service.listing_cache'], 'hit')
        assert.deepEqual(childrenOf(hitSpans, cached), [])
      })

      it('a refused request: its status, and no error on the session check of a 401', async () => {
        const caller = traceparent()
        const res = await fetch(`${served.service.base}/v1/folders`, {
          headers: { cookie: `session_id=${uuid('07e1dead', 9)}`, traceparent: caller.header },
        })
        assert.equal(res.status, 401)
        const spans = await inTrace(receiver, caller.traceId, hasServerSpan)
        const request = named(spans, 'GET /v1/folders')
        assert.equal(request.attributes['http.response.status_code'], 401)
        assert.equal(request.status.code, 0, 'a 4xx is the client`s error, not the server`s')
        assert.equal(named(spans, 'session check').status.code, 0)
      })

      it('a held request and a stream: a span per delivered answer, linked to the wake that caused it', async () => {
        const start = await fetch(`${served.service.base}/v1/folders/changes`, { headers: COOKIE })
        const { cursor } = (await start.json()) as { cursor: string }

        const held = traceparent()
        const answer = fetch(`${served.service.base}/v1/folders/changes?cursor=${cursor}&wait=20`, {
          headers: { ...COOKIE, traceparent: held.header },
        })
        const streamed = traceparent()
        const stream = await openEventStream(`${served.service.base}/v1/folders/changes?cursor=${cursor}`, {
          ...COOKIE,
          traceparent: streamed.header,
        })
        try {
          await stream.nextEvent(10_000) // the first answer, read before the stream began
          await new Promise((resolve) => setTimeout(resolve, 300))
          await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'Pictures', PHOTOS)
          const res = await answer
          assert.equal(res.status, 200)
          const body = (await res.json()) as { changes: unknown[] }
          assert.equal(body.changes.length, 1)
          const event = await stream.nextEvent(10_000)
          assert.match(event.data, /Pictures/)

          const heldSpans = await inTrace(receiver, held.traceId, hasServerSpan)
          const request = named(heldSpans, 'GET /v1/folders/changes')
          const delivery = named(heldSpans, 'feed delivery')
          assert.equal(delivery.parentSpanId, request.spanId)
          assert.equal(delivery.attributes['folder_service.feed.delivery'], 'long-poll')
          assert.equal(delivery.links.length, 1)
          const [link] = delivery.links
          const wakes = await receiver.waitFor((all) => all.some((span) => span.spanId === link?.spanId))
          const wake = wakes.find((span) => span.spanId === link?.spanId) as ReceivedSpan
          assert.equal(wake.name, 'feed wake')
          assert.equal(wake.parentSpanId, '', 'a wake is a trace of its own')
          assert.equal(wake.traceId, link?.traceId)
          assert.ok((wake.attributes['folder_service.feed.woken'] as number) >= 1)
          assert.ok(delivery.startNs <= delivery.endNs)

          // The stream's request span ends with the stream; its event's span is below it already.
          const streamResponse = stream.headers.traceresponse as string
          const streamSpanId = streamResponse.split('-')[2]
          const streamSpans = await inTrace(receiver, streamed.traceId, (spans) =>
            spans.some((span) => span.name === 'feed delivery'),
          )
          const event2 = named(streamSpans, 'feed delivery')
          assert.equal(event2.parentSpanId, streamSpanId)
          assert.equal(event2.attributes['folder_service.feed.delivery'], 'event-stream')
          assert.equal(event2.attributes['folder_service.feed.changes'], 1)
          assert.equal(event2.links[0]?.spanId, link?.spanId, 'the commit woke both in one read')
          // The client leaves: the stream's request span ends, with its route.
          stream.close()
          const ended = await inTrace(receiver, streamed.traceId, hasServerSpan)
          const streamRequest = named(ended, 'GET /v1/folders/changes')
          assert.equal(streamRequest.spanId, streamSpanId)
          assert.equal(streamRequest.parentSpanId, streamed.spanId)
        } finally {
          stream.close()
        }
      })

      it('no secret in any span: not the cookie, the session id, nor a database password', () => {
        const secrets = [SESSION, `session_id=${SESSION}`]
        const password = new URL(served.url.replace(/^sqlite:/, 'sqlite://x/')).password
        if (password !== '') secrets.push(password)
        assert.ok(receiver.bodies.length > 0)
        for (const body of receiver.bodies) {
          for (const secret of secrets)
            assert.equal(body.includes(secret), false, `an export holds ${secret}`)
        }
        const decoded = JSON.stringify(receiver.spans, (_key, value: unknown) =>
          typeof value === 'bigint' ? String(value) : value,
        )
        for (const secret of secrets) assert.equal(decoded.includes(secret), false)
        // Nor the query string, whatever it holds.
        assert.equal(decoded.includes(`folder_id=${PHOTOS}`), false)
      })
    })
  }

  describe('an import from the command line', () => {
    for (const backend of allBackends()) {
      it(
        `${backend.name}: its phases below the command's span, which continues TRACEPARENT`,
        { skip: backend.skip },
        async () => {
          const database = await backend.open()
          const dir = tempDir()
          try {
            const file = writeJson(dir.dir, 'import.json', {
              users: [{ id: OWNER, username: 'tracy' }],
              folders: [{ id: PHOTOS, name: 'Photos', owner_id: OWNER }],
            })
            const caller = traceparent()
            const run = await runCli(['import', file, '--db', database.url, '--json'], {
              env: traced(receiver, { TRACEPARENT: caller.header }),
            })
            assert.equal(run.code, 0, run.stderr)
            const spans = await inTrace(receiver, caller.traceId, (found) =>
              found.some((span) => span.name === 'import'),
            )
            const command = named(spans, 'import')
            assert.equal(command.parentSpanId, caller.spanId)
            assert.equal(command.attributes['folder_service.import.folders'], 1)
            for (const phase of [
              'import: read and stage',
              'import: check',
              'import: place folders',
              'import: write',
            ]) {
              assert.equal(ancestry(spans, named(spans, phase)).at(-1), 'import', phase)
            }
          } finally {
            dir.remove()
            await database.cleanup()
          }
        },
      )
    }
  })

  describe('PostgreSQL: a wait for a primary', { skip: postgresBackend.skip }, () => {
    let proxy: TcpProxy
    let database: Awaited<ReturnType<Backend['open']>>
    let service: Service
    before(async () => {
      database = await postgresBackend.open()
      await fill(database.store)
      const parsed = new URL(database.url)
      proxy = await tcpProxy(Number(parsed.port))
      // The database through the proxy, then a dead host: a host list, followed as a formation is.
      const list = database.url.replace(`@${parsed.host}/`, `@127.0.0.1:${proxy.port},127.0.0.1:1/`)
      service = await startService(
        `${list}?target_session_attrs=read-write`,
        traced(receiver, { FAILOVER_WAIT_MS: '10000' }),
      )
    })
    after(async () => {
      await service?.stop()
      await proxy?.stop()
      await database?.cleanup()
    })

    it('is a span of the request that waited, naming the primary it found', async () => {
      const base = service.base
      assert.equal((await fetch(`${base}/v1/folders`, { headers: COOKIE })).status, 200)
      const pgPort = Number(new URL(database.url).port)
      proxy.retarget(1) // every connection cut, and the host unreachable
      const caller = traceparent()
      const answer = fetch(`${base}/v1/folders`, { headers: { ...COOKIE, traceparent: caller.header } })
      await new Promise((resolve) => setTimeout(resolve, 700))
      proxy.retarget(pgPort) // the primary is back
      assert.equal((await answer).status, 200)
      const spans = await inTrace(receiver, caller.traceId, hasServerSpan)
      const wait = named(spans, 'wait for primary')
      assert.equal(wait.attributes['folder_service.db.primary'], `127.0.0.1:${proxy.port}`)
      assert.equal(wait.attributes['folder_service.db.hosts'], `127.0.0.1:${proxy.port},127.0.0.1:1`)
      assert.equal(ancestry(spans, wait).at(-1), 'GET /v1/folders')
      assert.ok(wait.endNs - wait.startNs >= 500_000_000n, 'it lasted while the primary was away')
    })
  })

  describe('settings', () => {
    let service: Service | undefined
    let database: Awaited<ReturnType<Backend['open']>> | undefined
    after(async () => {
      await service?.stop()
      await database?.cleanup()
    })
    const serve = async (env: Record<string, string>) => {
      await service?.stop()
      if (database === undefined) {
        database = await sqliteBackend.open()
        await fill(database.store)
      }
      service = await startService(database.url, env)
      return service
    }

    it('http/json to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, with the service`s name and attributes', async () => {
      const json = await OtlpReceiver.start()
      try {
        const base = (
          await serve({
            OTEL_TRACES_EXPORTER: 'otlp',
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${json.url}/custom/traces`,
            OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
            OTEL_BSP_SCHEDULE_DELAY: '50',
            OTEL_SERVICE_NAME: 'drive-folders',
            OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test,service.name=overridden',
          })
        ).base
        const caller = traceparent()
        assert.equal(
          (await fetch(`${base}/v1/folders`, { headers: { ...COOKIE, traceparent: caller.header } })).status,
          200,
        )
        const spans = await inTrace(json, caller.traceId, hasServerSpan)
        assert.equal(named(spans, 'GET /v1/folders').parentSpanId, caller.spanId)
        assert.deepEqual(
          new Set(json.exports.map((sent) => `${sent.contentType} ${sent.path}`)),
          new Set(['application/json /custom/traces']),
        )
        const resource = spans[0]?.resource ?? {}
        assert.equal(resource['service.name'], 'drive-folders')
        assert.equal(resource['deployment.environment.name'], 'test')
      } finally {
        await json.close()
      }
    })

    it('parentbased_traceidratio at 0: only what a sampled caller asks for is recorded', async () => {
      const base = (
        await serve(
          traced(receiver, { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }),
        )
      ).base
      const unsampled = traceparent(false)
      const own = await fetch(`${base}/v1/folders`, { headers: COOKIE })
      const declined = await fetch(`${base}/v1/folders`, {
        headers: { ...COOKIE, traceparent: unsampled.header },
      })
      const sampled = traceparent()
      const kept = await fetch(`${base}/v1/folders`, { headers: { ...COOKIE, traceparent: sampled.header } })
      for (const res of [own, declined, kept]) assert.equal(res.status, 200)
      await inTrace(receiver, sampled.traceId, hasServerSpan)
      const ownTrace = (own.headers.get('traceresponse') ?? '').split('-')[1] ?? ''
      assert.match(ownTrace, /^[0-9a-f]{32}$/)
      assert.ok(own.headers.get('traceresponse')?.endsWith('-00'), 'not sampled, and the answer says so')
      for (const traceId of [ownTrace, unsampled.traceId]) {
        assert.deepEqual(
          receiver.spans.filter((span) => span.traceId === traceId),
          [],
        )
      }
      // The log line still names the trace, so the caller's logs and ours meet.
      const line = logRecords(service as Service).find(
        (record) => record.request_id === declined.headers.get('x-request-id'),
      )
      assert.equal(line?.trace_id, unsampled.traceId)
      assert.equal(line?.trace_flags, '00')
    })

    it('a bad OpenTelemetry setting stops start-up naming the variable', async () => {
      const run = await runCli(['serve', '--port', '0'], {
        env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      })
      assert.equal(run.code, 1)
      assert.match(
        run.stderr,
        /OTEL_EXPORTER_OTLP_PROTOCOL: expected one of http\/protobuf, http\/json, got 'grpc'/,
      )
    })
  })
})
