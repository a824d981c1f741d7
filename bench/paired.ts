import { execFile } from 'node:child_process'
import { resolve } from 'node:path'
import { parseArgs, promisify } from 'node:util'
import { OtlpReceiver } from '../harness/otlp-receiver.js'
import { findWrk } from './lib/wrk.js'
import { readCpuSeconds } from './lib/process-stats.js'
import { HOST, freePort, spawnChild, stopAllChildren, waitForHttp, type Child } from './lib/processes.js'

/**
 * `npm run bench:paired`: two builds of the service (two `dist` folders, or one build under
 * two settings) measured in paired, alternating rounds on one database, as
 * docs/performance.md ("The listing path") says a change is measured on a shared machine:
 * both servers pinned to core 0 and wrk to core 1 (`taskset`), each round a warm-up and a
 * measured wrk phase against each build in turn, the order swapped every pair. It prints the
 * server CPU per request (user + system from /proc over the measured phase, divided by the
 * requests wrk counted) of each, their medians and in how many pairs B was cheaper.
 *
 *   npm run bench:paired -- --a /tmp/before/dist --b dist --db sqlite:/tmp/demo.db \
 *     --session de000000-0000-4000-8000-00000000c00c --path '/v1/folders' [--pairs 8] \
 *     [--env-b LISTING_CACHE_MB=0] [--env LOG_LEVEL=warn]
 *
 * A build folder outside the repository needs node_modules (a symlink) beside it. Rate
 * limits stay on at the highest allowed rate, so their cost is measured without a 429.
 * `--otlp-sink` points both sides' OTEL_EXPORTER_OTLP_ENDPOINT at an OTLP receiver in this
 * process that accepts each export without decoding it, so tracing (switched on by
 * `--env-b OTEL_TRACES_EXPORTER=otlp`) is measured with its exports sent and accepted.
 */

const run = promisify(execFile)
const log = (line: string) => process.stdout.write(`${line}\n`)

const USAGE =
  'usage: npm run bench:paired -- --a DIST --b DIST --db URL --session ID [--path /v1/folders] [--pairs 8] [--seconds 2] [--env K=V] [--env-a K=V] [--env-b K=V] [--otlp-sink]'

const { values } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    db: { type: 'string' },
    session: { type: 'string' },
    path: { type: 'string', default: '/v1/folders' },
    pairs: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '2' },
    env: { type: 'string', multiple: true, default: [] },
    'env-a': { type: 'string', multiple: true, default: [] },
    'env-b': { type: 'string', multiple: true, default: [] },
    'otlp-sink': { type: 'boolean', default: false },
  },
})

const settings = (pairs: string[]): Record<string, string> =>
  Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf('=')
      if (at < 1) throw new Error(`not K=V: ${pair}`)
      return [pair.slice(0, at), pair.slice(at + 1)]
    }),
  )

/** The service's defaults but for the limits a single session under load would hit. */
const BASE_ENV = {
  LOG_LEVEL: 'info',
  RATE_LIMIT_PER_MINUTE: '10000000',
  FEED_NOTIFY: 'off',
}

interface Side {
  name: 'A' | 'B'
  child: Child
  port: number
  perRequestUs: number[]
  rates: number[]
}

async function startBuild(name: 'A' | 'B', dist: string, env: Record<string, string>): Promise<Side> {
  const port = await freePort()
  const child = spawnChild(
    `build ${name}`,
    'taskset',
    ['-c', '0', process.execPath, resolve(dist, 'cli/main.js'), 'serve'],
    { ...process.env, ...BASE_ENV, ...env, DATABASE_URL: values.db, HOST, PORT: String(port) },
    process.cwd(),
    'ignore',
  )
  await waitForHttp(child, `http://${HOST}:${port}/healthz`, 30_000)
  return { name, child, port, perRequestUs: [], rates: [] }
}

async function load(wrk: string, side: Side, seconds: number): Promise<number> {
  const { stdout } = await run('taskset', [
    '-c',
    '1',
    wrk,
    '-t1',
    '-c32',
    `-d${seconds}s`,
    '-H',
    `Cookie: session_id=${values.session}`,
    `http://${HOST}:${side.port}${values.path}`,
  ])
  const requests = /(\d+) requests in/.exec(stdout)
  if (requests?.[1] === undefined) throw new Error(`wrk printed no request count:\n${stdout}`)
  if (/Non-2xx or 3xx responses/.test(stdout))
    throw new Error(`build ${side.name} answered errors:\n${stdout}`)
  return Number(requests[1])
}

async function measure(wrk: string, side: Side, seconds: number): Promise<void> {
  await load(wrk, side, 1)
  const before = readCpuSeconds(side.child.pid)
  const requests = await load(wrk, side, seconds)
  const after = readCpuSeconds(side.child.pid)
  if (before === null || after === null) throw new Error('no /proc: CPU time cannot be read')
  side.perRequestUs.push(((after - before) * 1e6) / requests)
  side.rates.push(requests / seconds)
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((x, y) => x - y)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? NaN)
    : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2
}

async function main(): Promise<void> {
  if (
    values.a === undefined ||
    values.b === undefined ||
    values.db === undefined ||
    values.session === undefined
  ) {
    throw new Error(USAGE)
  }
  const wrk = findWrk()
  if (wrk === null) throw new Error('wrk is not installed')
  const pairs = Number(values.pairs)
  const seconds = Number(values.seconds)
  const sink = values['otlp-sink'] ? await OtlpReceiver.start({ decode: false }) : null
  const shared = {
    ...(sink === null ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url }),
    ...settings(values.env),
  }
  const a = await startBuild('A', values.a, { ...shared, ...settings(values['env-a']) })
  const b = await startBuild('B', values.b, { ...shared, ...settings(values['env-b']) })
  for (let pair = 0; pair < pairs; pair++) {
    for (const side of pair % 2 === 0 ? [a, b] : [b, a]) await measure(wrk, side, seconds)
    const us = (side: Side) => (side.perRequestUs[pair] ?? NaN).toFixed(1)
    log(`pair ${pair + 1}: A ${us(a)} us, B ${us(b)} us a request`)
  }
  const cheaper = b.perRequestUs.filter((us, i) => us < (a.perRequestUs[i] ?? NaN)).length
  log(
    `median CPU per request: A ${median(a.perRequestUs).toFixed(1)} us, B ${median(b.perRequestUs).toFixed(1)} us ` +
      `(B/A ${(median(b.perRequestUs) / median(a.perRequestUs)).toFixed(3)}); B cheaper in ${cheaper} of ${pairs} pairs; ` +
      `median req/s A ${median(a.rates).toFixed(0)}, B ${median(b.rates).toFixed(0)}`,
  )
  if (sink !== null) {
    log(`OTLP exports received: ${sink.exports.length} (${sink.bytes} bytes)`)
    await sink.close()
  }
}

try {
  await main()
} finally {
  await stopAllChildren()
}
