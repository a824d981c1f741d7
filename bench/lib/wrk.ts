import { spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { LoadResult } from './load.js'
import { HOST } from './processes.js'
import type { Target } from './targets.js'
import { readCpuSeconds } from './process-stats.js'

/**
 * Throughput load with wrk (C, epoll, one event loop per thread): on a 2-core machine a
 * single wrk thread drives a node:http server harder than autocannon, which saturates its
 * own core first and so caps the ceiling it measures. The Lua script below rotates over
 * every target (user, folder, page), each thread from its own offset, with requests
 * formatted once at start-up so the generator does no string work per request.
 *
 * wrk reads no bodies into Lua here (a `response` callback would make it parse every
 * answer and cost more than the server under test): bodies are checked by the verify
 * phase, the latency probes and the writer's stale checks; wrk counts statuses >= 400
 * and socket errors.
 */

const SCRIPT = `
local counter = 0
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

local requests = {}
local i = 0
function init(args)
  for line in io.lines(args[1]) do
    local tab = line:find("\\t", 1, true)
    requests[#requests + 1] = wrk.format("GET", line:sub(1, tab - 1), { ["Cookie"] = line:sub(tab + 1) })
  end
  i = (id * 7919) % #requests
end

function request()
  i = i + 1
  if i > #requests then i = 1 end
  return requests[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"mean":%.1f,"max":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
`

let wrkPath: string | null | undefined

/** The wrk binary on the PATH, or null (Debian/Ubuntu: `apt-get install wrk`). */
export function findWrk(): string | null {
  if (wrkPath === undefined) {
    const found = spawnSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' })
    wrkPath = found.status === 0 && found.stdout.trim() !== '' ? found.stdout.trim() : null
  }
  return wrkPath
}

export interface WrkSettings {
  port: number
  targets: Target[]
  connections: number
  threads: number
  seconds: number
  /** where the script and the target list are written */
  dir: string
}

export interface WrkResult extends LoadResult {
  /** CPU seconds wrk used per second of the run (sampled from /proc while it ran) */
  clientCpuShare: number | null
}

interface WrkJson {
  requests: number
  duration_us: number
  connect: number
  read: number
  write: number
  status: number
  timeout: number
  p50: number
  p90: number
  p99: number
  mean: number
  max: number
}

let running: ReturnType<typeof spawn> | null = null

/** Stops a running wrk phase early (Ctrl-C). */
export function stopWrk(): void {
  running?.kill('SIGINT')
}

const written = new Map<Target[], string>()

function targetFile(dir: string, targets: Target[]): string {
  let file = written.get(targets)
  if (file === undefined) {
    file = join(dir, `wrk-targets-${written.size}.tsv`)
    writeFileSync(file, targets.map((t) => `${t.path}\t${t.cookie}\n`).join(''))
    writeFileSync(join(dir, 'rotate.lua'), SCRIPT)
    written.set(targets, file)
  }
  return file
}

export function runWrk(settings: WrkSettings): Promise<WrkResult> {
  const wrk = findWrk()
  if (wrk === null) return Promise.reject(new Error('wrk is not installed'))
  const file = targetFile(settings.dir, settings.targets)
  const seconds = Math.max(1, Math.round(settings.seconds))
  const args = [
    `-t${settings.threads}`,
    `-c${Math.max(settings.connections, settings.threads)}`,
    `-d${seconds}s`,
    '--timeout',
    '10s',
    '-s',
    join(settings.dir, 'rotate.lua'),
    `http://${HOST}:${settings.port}/`,
    '--',
    file,
  ]
  return new Promise((resolve, reject) => {
    const child = spawn(wrk, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    running = child
    let out = ''
    let cpu = 0
    const pid = child.pid
    // wrk's own CPU, read while it runs (its /proc entry is gone once it exits).
    const sampler = setInterval(() => {
      const seconds = pid === undefined ? null : readCpuSeconds(pid)
      if (seconds !== null) cpu = seconds
    }, 200)
    const started = performance.now()
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')))
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')))
    child.on('error', (error) => {
      clearInterval(sampler)
      reject(error)
    })
    child.on('close', (code) => {
      clearInterval(sampler)
      running = null
      const wall = (performance.now() - started) / 1000
      const line = out.split('\n').find((l) => l.startsWith('WRK_JSON '))
      if (code !== 0 || line === undefined) {
        reject(new Error(`wrk exited ${code}:\n${out.trim().slice(-2000)}`))
        return
      }
      const r = JSON.parse(line.slice('WRK_JSON '.length)) as WrkJson
      const duration = r.duration_us / 1e6
      const ms = (us: number) => us / 1000
      resolve({
        seconds: duration,
        requests: r.requests,
        reqPerSec: r.requests / duration,
        latencyMs: { p50: ms(r.p50), p90: ms(r.p90), p99: ms(r.p99), mean: ms(r.mean), max: ms(r.max) },
        statusCodes: {},
        non2xx: r.status,
        errors: r.connect + r.read + r.write,
        timeouts: r.timeout,
        wrong: 0,
        examples: [],
        verified: 0,
        clientCpuShare: cpu / wall,
      })
    })
  })
}
