import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  alternate,
  FLOOR_KINDS,
  medianRun,
  startFloorServers,
  stopFloorServers,
  type FloorKind,
  type LoadedServer,
  type RecordedResponse,
  SERVICE_VARIANTS,
} from './floor.js'
import { fmtInt } from './report.js'
import type { DataSet } from './dataset.js'
import { fetchRaw, runLoad, runProbe, type LoadResult } from './load.js'
import type { BackendResult, FloorRow, LoadFigures } from './backend-result.js'
import { findWrk, runWrk } from './wrk.js'
import { startWriter, writerUsers, type WriterReport } from './write-phase.js'
import type { BenchOptions } from './options.js'
import { readCpuSeconds, readMachineBusySeconds, RssSampler } from './process-stats.js'
import { freePort, stopChild, type Child } from './processes.js'
import { importData, SERVICE_ENV, startService } from './service.js'
import { lastPage, mixedTargets, pageTarget, type Target } from './targets.js'
import { summariseProfiles } from './profile-summary.js'

/**
 * One backend through every phase: import through the CLI, start the service, check a
 * sample of answers, latency probes, read-only load, the same load while a second process
 * writes to the database, and the same load on the ceiling server (with each generator).
 * Memory and CPU of the service are sampled throughout.
 */

function floorRows(servers: LoadedServer[], runs: LoadFigures[][]): FloorRow[] {
  return servers.map((server, i) => {
    const figures = runs[i] as LoadFigures[]
    return { name: server.name, runs: figures.map((f) => f.reqPerSec), median: medianRun(figures) }
  })
}

export interface BackendContext {
  root: string
  options: BenchOptions
  data: DataSet
  tmp: string
  log: (line: string) => void
}

const serviceEnv = (ctx: BackendContext) => ({
  ...process.env,
  ...SERVICE_ENV,
  LISTING_CACHE_MB: String(ctx.options.cacheMb),
})

function variantEnv(ctx: BackendContext, { cached, defaults }: (typeof SERVICE_VARIANTS)[number]) {
  const env: NodeJS.ProcessEnv = {
    ...serviceEnv(ctx),
    LISTING_CACHE_MB: cached ? String(ctx.options.cacheMb) : '0',
  }
  if (defaults) for (const name of Object.keys(SERVICE_ENV)) delete env[name]
  return env
}

/** Runs a load phase and measures the server's CPU and the bench's own over it. */
/** A throughput phase with the chosen generator. */
interface Drive {
  generator: 'wrk' | 'autocannon'
  threads: number
}

function describe(drive: Drive): string {
  return drive.generator === 'wrk' ? `wrk -t${drive.threads}` : 'autocannon'
}

function drive(
  ctx: BackendContext,
  how: Drive,
  port: number,
  targets: Target[],
  seconds: number,
  verifyEvery = 0,
) {
  const { connections, pipelining } = ctx.options
  if (how.generator === 'wrk')
    return runWrk({ port, targets, connections, threads: how.threads, seconds, dir: ctx.tmp })
  return runLoad({ port, targets, connections, pipelining, seconds, verifyEvery }).then((result) => ({
    ...result,
    clientCpuShare: null,
  }))
}

/** Runs a load phase and measures the server's CPU and the generator's over it. */
async function measuredLoad(
  server: Child,
  how: Drive,
  run: () => Promise<LoadResult & { clientCpuShare: number | null }>,
): Promise<LoadFigures> {
  const machineBefore = readMachineBusySeconds()
  const cpuBefore = readCpuSeconds(server.pid)
  const selfBefore = process.cpuUsage()
  const started = performance.now()
  const result = await run()
  const wall = (performance.now() - started) / 1000
  const self = process.cpuUsage(selfBefore)
  const cpuAfter = readCpuSeconds(server.pid)
  const machineAfter = readMachineBusySeconds()
  const serverCpu = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore
  const selfCpu = (self.user + self.system) / 1e6
  // autocannon runs inside this process; wrk is a child whose CPU the wrk runner samples.
  const clientCpuShare = how.generator === 'autocannon' ? selfCpu / wall : result.clientCpuShare
  const clientCpu = (clientCpuShare ?? 0) * wall + (how.generator === 'wrk' ? selfCpu : 0)
  return {
    ...result,
    generator: describe(how),
    serverCpuMsPerRequest:
      serverCpu === null || result.requests === 0 ? null : (serverCpu * 1000) / result.requests,
    clientCpuShare,
    otherCores:
      serverCpu === null || machineBefore === null || machineAfter === null
        ? null
        : Math.max(0, (machineAfter - machineBefore - serverCpu - clientCpu) / wall),
  }
}

/** Hop-by-hop and per-response headers the ceiling server must not replay verbatim. */
const NOT_REPLAYED = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length'])

function recordResponse(raw: {
  status: number
  headers: [string, string][]
  body: Buffer
}): RecordedResponse {
  const headers = raw.headers.filter(([name]) => !NOT_REPLAYED.has(name.toLowerCase()))
  headers.push(['content-length', String(raw.body.length)])
  return { status: raw.status, headers, body: raw.body.toString('base64') }
}

/** The generator of every throughput phase: wrk unless asked otherwise or missing. */
function drives(ctx: BackendContext): { service: Drive; check: Drive | null } {
  const { generator, threads } = ctx.options
  if (generator === 'wrk' && findWrk() === null) {
    ctx.log('  wrk is not installed (apt-get install wrk): falling back to autocannon, whose own CPU')
    ctx.log('  may cap the ceiling figure and so inflate every ratio')
    return { service: { generator: 'autocannon', threads: 1 }, check: null }
  }
  if (generator === 'autocannon') return { service: { generator, threads: 1 }, check: null }
  // The ceiling once more with one more wrk thread: if it rose, wrk was the limit.
  return { service: { generator: 'wrk', threads }, check: { generator: 'wrk', threads: threads + 1 } }
}

export async function runBackend(
  ctx: BackendContext,
  backend: 'sqlite' | 'postgres',
  url: string,
  shownUrl: string,
): Promise<BackendResult> {
  const { options, data, log } = ctx
  const limit = options.limit

  log(`  import: ${data.counts.folders.toLocaleString('en')} folders through the CLI ...`)
  const imported = await importData({
    root: ctx.root,
    file: data.file,
    folders: data.counts.folders,
    url,
    timeoutSeconds: options.importTimeout,
    log,
  })
  log(
    `  import: ${imported.wallSeconds.toFixed(2)} s wall (${Math.round(imported.foldersPerSecond).toLocaleString('en')} folders/s)` +
      (imported.cliSeconds === null ? '' : `, CLI says ${imported.cliSeconds.toFixed(2)} s`),
  )

  const port = await freePort()
  const profileDir = options.profile
    ? join(resolve(ctx.root, options.outDir), 'profiles', `${backend}-${Date.now()}`)
    : null
  if (profileDir !== null) mkdirSync(profileDir, { recursive: true })
  const service = await startService({
    root: ctx.root,
    url,
    port,
    env: serviceEnv(ctx),
    nodeArgs: profileDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir],
  })
  const memory = new RssSampler(service.pid)
  const how = drives(ctx)
  let result: BackendResult
  let floors: Map<FloorKind, LoadedServer> | null = null
  let clustered: Child | null = null
  const variants: LoadedServer[] = []
  try {
    const targets = mixedTargets([...data.small, ...data.roots], limit, options.seed, options.pages)
    const huge = data.huge
    const hugeLast = huge === null ? null : lastPage(huge, limit)

    memory.enter('verify')
    const sample = targets.slice(0, Math.min(targets.length, 200))
    const hugeChecks =
      huge === null || hugeLast === null
        ? []
        : [1, Math.ceil(hugeLast / 2), hugeLast, hugeLast + 1].map((page) => pageTarget(huge, page, limit))
    const verify = await runProbe({
      port,
      targets: [...sample, ...hugeChecks],
      connections: 1,
      seconds: 60,
      maxRequests: sample.length + hugeChecks.length,
    })
    log(`  verify: ${verify.requests} answers checked, ${verify.wrong} wrong, ${verify.non2xx} non-2xx`)

    const representative = pageTarget(data.small[0] as (typeof data.small)[0], 1, limit)
    const recorded = recordResponse(await fetchRaw(port, representative))
    if (recorded.status !== 200) throw new Error(`the representative request got status ${recorded.status}`)
    // Bodies scale with their rows: a close estimate of what the cache must hold.
    const perRow = Buffer.from(recorded.body, 'base64').length / Math.max(1, representative.ids.length)
    const workingSetBytes = targets.reduce((sum, t) => sum + t.ids.length * perRow, 0)
    log(
      `  working set: ${targets.length.toLocaleString('en')} listings of ${data.small.length} users, ` +
        `about ${(workingSetBytes / 1024 / 1024).toFixed(0)} MB of bodies; LISTING_CACHE_MB=${options.cacheMb}`,
    )

    // The probes check every body exactly, so they run before any write.
    memory.enter('probes')
    const probe = async (probeTargets: Target[]) => {
      const settings = { port, targets: probeTargets, connections: options.probeConnections }
      await runProbe({ ...settings, seconds: 1, maxRequests: 50 }) // warm the path
      const before = readCpuSeconds(service.pid)
      const result = await runProbe({ ...settings, seconds: options.probeDuration })
      const after = readCpuSeconds(service.pid)
      const serverCpuMsPerRequest =
        before === null || after === null || result.requests === 0
          ? null
          : ((after - before) * 1000) / result.requests
      return { ...result, serverCpuMsPerRequest }
    }
    const small = await probe([representative])
    const smallRotating = await probe(data.small.map((folder) => pageTarget(folder, 1, limit)))
    const hugeFirst = huge === null ? null : await probe([pageTarget(huge, 1, limit)])
    const hugeLastProbe =
      huge === null || hugeLast === null ? null : await probe([pageTarget(huge, hugeLast, limit)])
    log(
      `  probes p50: small ${small.latencyMs.p50.toFixed(2)} ms` +
        (hugeFirst === null ? '' : `, huge page 1 ${hugeFirst.latencyMs.p50.toFixed(2)} ms`) +
        (hugeLastProbe === null
          ? ''
          : `, huge page ${hugeLast} ${hugeLastProbe.latencyMs.p50.toFixed(2)} ms`),
    )

    const { warmup, duration, rounds } = options
    memory.enter('floor servers')
    const floorKinds = FLOOR_KINDS
    floors = await startFloorServers(ctx, recorded, url, floorKinds)
    const serviceServer: LoadedServer = { name: 'folder-service', child: service, port }
    // The same service with WORKERS=2 (each worker its own cache), read-only rounds only.
    const workersPort = await freePort()
    clustered = await startService({
      root: ctx.root,
      url,
      port: workersPort,
      env: { ...serviceEnv(ctx), WORKERS: '2' },
    })
    const clusteredServer: LoadedServer = {
      name: 'folder-service, WORKERS=2',
      child: clustered,
      port: workersPort,
    }
    for (const variant of SERVICE_VARIANTS) {
      const variantPort = await freePort()
      const child = await startService({
        root: ctx.root,
        url,
        port: variantPort,
        env: variantEnv(ctx, variant),
        ...(variant.defaults ? { logLevel: 'info' } : {}),
      })
      variants.push({ name: variant.name, child, port: variantPort })
    }
    const server = (kind: FloorKind) => floors?.get(kind) as LoadedServer
    const phase =
      (loaded: LoadedServer, verifyEvery: number, by: Drive = how.service) =>
      async () => {
        await drive(ctx, by, loaded.port, targets, warmup, 0)
        return measuredLoad(loaded.child, by, () =>
          drive(ctx, by, loaded.port, targets, duration, verifyEvery),
        )
      }
    const rate = (f: LoadFigures) => `${fmtInt(f.reqPerSec)}`

    log(
      `  read-only: ${rounds} alternating rounds of ${describe(how.service)}, ${options.connections} connections`,
    )
    memory.enter('read-only')
    // Every answer cached before the rounds: a few seconds over the whole working set.
    for (const loaded of [serviceServer, clusteredServer, variants[0] as LoadedServer]) {
      await drive(ctx, how.service, loaded.port, targets, Math.max(5, warmup), 0)
    }
    const readOnlyServers = [...floorKinds.map(server), ...variants, clusteredServer, serviceServer]
    const readOnlyRuns = await alternate(readOnlyServers, rounds, (s) => phase(s, 20)(), log, rate)
    const readOnly = floorRows(readOnlyServers, readOnlyRuns)
    const mixed = (readOnly.at(-1) as FloorRow).median
    const ceilingRuns = readOnlyRuns[0] as LoadFigures[]
    const serviceRuns = readOnlyRuns.at(-1) as LoadFigures[]
    const serviceShares = serviceRuns.map((f, i) => f.reqPerSec / (ceilingRuns[i] as LoadFigures).reqPerSec)
    log(
      `  read-only: ${fmtInt(mixed.reqPerSec)} req/s (median), ${mixed.non2xx} non-2xx, ${mixed.errors} errors`,
    )

    let withWrites: LoadFigures | null = null
    let writer: WriterReport | null = null
    let writeRows: FloorRow[] | null = null
    if (options.writeRate > 0) {
      memory.enter('with writes')
      const running = startWriter(ctx, {
        db: url,
        port,
        rate: options.writeRate,
        limit,
        // Past the end of the rounds: the writer is stopped when they are done.
        seconds: 3 * rounds * (warmup + duration + 5) + 60,
        seed: options.seed,
        users: writerUsers(data.small),
      })
      try {
        log(`  with ${options.writeRate} writes/s: ${rounds} alternating rounds`)
        const writeServers = [server('node-lookup'), server('fastify-lookup'), serviceServer]
        const writeRuns = await alternate(writeServers, rounds, (s) => phase(s, 0)(), log, rate)
        writeRows = floorRows(writeServers, writeRuns)
        withWrites = (writeRows.at(-1) as FloorRow).median
      } finally {
        writer = await running.stop()
      }
      log(
        `  with writes: ${Math.round(withWrites.reqPerSec).toLocaleString('en')} req/s ` +
          `(${((withWrites.reqPerSec / mixed.reqPerSec) * 100).toFixed(1)}% of read-only); writer: ` +
          `${writer.writes} writes (${writer.writesPerSecond.toFixed(1)}/s), ${writer.writeErrors} failed, ` +
          `${writer.checks} checked, ${writer.stale} stale, ${writer.checkFailures} check failures`,
      )
    }

    memory.enter('idle (generator check)')
    const ceiling = (readOnly[0] as FloorRow).median
    const ceilings = [ceiling]
    if (how.check !== null) {
      ceilings.push(await phase(server('node'), 0, how.check)())
    }
    memory.enter('end')

    result = {
      backend,
      url: shownUrl,
      import: imported,
      verify,
      workingSet: {
        listings: targets.length,
        users: data.small.length,
        bytes: Math.round(workingSetBytes),
        cacheMb: options.cacheMb,
      },
      mixed,
      withWrites,
      writer,
      writeShare: withWrites === null ? null : withWrites.reqPerSec / mixed.reqPerSec,
      ceilings,
      ceiling,
      ratio: mixed.reqPerSec / ceiling.reqPerSec,
      floor: { rounds, readOnly, withWrites: writeRows, serviceShares },
      cpuRatio:
        mixed.serverCpuMsPerRequest === null || ceiling.serverCpuMsPerRequest === null
          ? null
          : ceiling.serverCpuMsPerRequest / mixed.serverCpuMsPerRequest,
      probes: { small, smallRotating, hugeFirst, hugeLast: hugeLastProbe, hugeLastPage: hugeLast },
      memory: { peakBytes: memory.peak(), phases: memory.byPhase(), samples: memory.samples },
      recordedResponse: {
        status: recorded.status,
        bytes: Buffer.from(recorded.body, 'base64').length,
        headers: recorded.headers,
      },
    }
  } finally {
    memory.stop()
    if (floors !== null) await stopFloorServers(floors)
    if (clustered !== null) await stopChild(clustered)
    for (const variant of variants) await stopChild(variant.child)
    await stopChild(service)
  }
  // The profile is written when the service exits.
  if (profileDir !== null) result.profile = summariseProfiles(profileDir)
  return result
}
