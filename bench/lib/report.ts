import { cpus, loadavg, platform, release, totalmem } from 'node:os'
import type { BackendResult } from './backend-result.js'
import { FLOOR_NAMES, SERVICE_VARIANTS } from './floor.js'
import type { Failures } from './load.js'
import { formatProfile } from './profile-summary.js'

/** The printed tables, the targets, and the machine description stored with the figures. */

export interface Verdict {
  name: string
  target: string
  value: string
  met: boolean
}

const TARGETS = {
  /** SQLite: read-only / the node:http ceiling (the bench's service, and at its defaults) */
  ratio: { sqlite: 0.45 },
  /** SQLite, cached, at the service's defaults: server CPU per request / Fastify + lookup's */
  cpuOverFastifyLookup: { sqlite: 1.15 },
  /** SQLite, LISTING_CACHE_MB=0: read-only / the node:http ceiling */
  uncachedRatio: { sqlite: 0.2 },
  /** PostgreSQL: read-only / node:http + one pg query per request (the floor) */
  overFloor: { postgres: 1 },
  /** read throughput with the writer running, as a share of read-only */
  writeShare: { sqlite: 0.9 },
  /** PostgreSQL: the share kept under writes / the share the floor keeps under the same writes */
  writeShareOfFloor: { postgres: 0.95 },
  hugeOverSmall: 2,
  lastOverSmall: 10,
  importFoldersPerSecond: 100_000,
}

export function machineInfo() {
  const cores = cpus()
  return {
    cpuModel: cores[0]?.model ?? 'unknown',
    cpuCount: cores.length,
    totalMemoryBytes: totalmem(),
    os: `${platform()} ${release()}`,
    node: process.version,
    date: new Date().toISOString(),
    loadAverageAtStart: loadavg(),
  }
}

function hugeRatios(r: BackendResult): { hugeOverSmall: number | null; lastOverSmall: number | null } {
  const small = r.probes.small.latencyMs.p50
  return {
    hugeOverSmall: r.probes.hugeFirst === null ? null : r.probes.hugeFirst.latencyMs.p50 / small,
    lastOverSmall: r.probes.hugeLast === null ? null : r.probes.hugeLast.latencyMs.p50 / small,
  }
}

/** Every phase that talked to the service, with its failures. */
function servicePhases(r: BackendResult): [string, Failures & { requests: number }][] {
  const phases: [string, Failures & { requests: number }][] = [
    ['verify (sequential)', r.verify],
    ['read-only load', r.mixed],
    ...(r.withWrites === null
      ? []
      : [['load with writes', r.withWrites] as [string, Failures & { requests: number }]]),
    ['probe small p1', r.probes.small],
    ['probe small p1, all users', r.probes.smallRotating],
  ]
  if (r.probes.hugeFirst !== null) phases.push(['probe huge p1', r.probes.hugeFirst])
  if (r.probes.hugeLast !== null) phases.push([`probe huge p${r.probes.hugeLastPage}`, r.probes.hugeLast])
  return phases
}

/** The floor server the PostgreSQL targets compare with: node:http + one pg query per request. */
const LOOKUP_FLOOR = FLOOR_NAMES['node-lookup']
/** Fastify and the session lookup: what a cached answer at the service's defaults is held to. */
const FASTIFY_LOOKUP_FLOOR = FLOOR_NAMES['fastify-lookup']

/** Share of read-only throughput a server keeps under writes (same server in both phases). */
function keptUnderWrites(r: BackendResult, name: string): number | null {
  const before = r.floor.readOnly.find((row) => row.name === name)
  const after = r.floor.withWrites?.find((row) => row.name === name)
  return before === undefined || after === undefined ? null : after.median.reqPerSec / before.median.reqPerSec
}

function spread(values: number[]): string {
  return values.length < 2
    ? ''
    : ` (${Math.min(...values).toFixed(3)}-${Math.max(...values).toFixed(3)} over ${values.length} rounds)`
}

/** The SQLite targets of the service at its defaults and uncached, against the floors of the same run. */
function variantVerdicts(r: BackendResult): Verdict[] {
  const row = (name: string) => r.floor.readOnly.find((candidate) => candidate.name === name)?.median
  const [defaults, uncached] = [row(SERVICE_VARIANTS[0].name), row(SERVICE_VARIANTS[1].name)]
  const shares = [
    ['cached, defaults: read-only / ceiling', defaults, TARGETS.ratio.sqlite],
    ['uncached: read-only / ceiling', uncached, TARGETS.uncachedRatio.sqlite],
  ] as const
  const list: Verdict[] = []
  for (const [name, figures, wanted] of shares) {
    if (figures === undefined) continue
    const share = figures.reqPerSec / r.ceiling.reqPerSec
    list.push({ name, target: `>= ${wanted.toFixed(2)}`, value: share.toFixed(3), met: share >= wanted })
  }
  const own = defaults?.serverCpuMsPerRequest ?? null
  const floor = row(FASTIFY_LOOKUP_FLOOR)?.serverCpuMsPerRequest ?? null
  if (own !== null && floor !== null) {
    list.push({
      name: `cached, defaults: server CPU/req / ${FASTIFY_LOOKUP_FLOOR}'s`,
      target: `<= ${TARGETS.cpuOverFastifyLookup.sqlite.toFixed(2)}`,
      value: (own / floor).toFixed(3),
      met: own / floor <= TARGETS.cpuOverFastifyLookup.sqlite,
    })
  }
  return list
}

export function verdicts(r: BackendResult): Verdict[] {
  const list: Verdict[] = []
  const floor = r.floor.readOnly.find((row) => row.name === LOOKUP_FLOOR)
  if (r.backend === 'sqlite') {
    list.push({
      name: `read-only / ceiling (${r.ceiling.generator})`,
      target: `>= ${TARGETS.ratio.sqlite.toFixed(2)}`,
      value: `${r.ratio.toFixed(3)}${spread(r.floor.serviceShares)}`,
      met: r.ratio >= TARGETS.ratio.sqlite,
    })
    list.push(...variantVerdicts(r))
  } else if (floor !== undefined) {
    const over = r.mixed.reqPerSec / floor.median.reqPerSec
    list.push({
      name: `read-only / ${LOOKUP_FLOOR} (pg, one query a request)`,
      target: `>= ${TARGETS.overFloor.postgres.toFixed(2)}`,
      value: over.toFixed(3),
      met: over >= TARGETS.overFloor.postgres,
    })
  }
  if (r.writeShare !== null && r.writer !== null) {
    const writes = `with ${Math.round(r.writer.writesPerSecond)} writes/s`
    if (r.backend === 'sqlite') {
      list.push({
        name: `${writes} / read-only`,
        target: `>= ${(TARGETS.writeShare.sqlite * 100).toFixed(0)}%`,
        value: `${(r.writeShare * 100).toFixed(1)}%`,
        met: r.writeShare >= TARGETS.writeShare.sqlite,
      })
    } else {
      const floorKept = keptUnderWrites(r, LOOKUP_FLOOR)
      const relative = floorKept === null ? null : r.writeShare / floorKept
      list.push({
        name: `${writes}: share kept / the floor's share kept`,
        target: `>= ${(TARGETS.writeShareOfFloor.postgres * 100).toFixed(0)}%`,
        value:
          relative === null
            ? '?'
            : `${(relative * 100).toFixed(1)}% (${(r.writeShare * 100).toFixed(1)}% vs ${((floorKept ?? 0) * 100).toFixed(1)}%)`,
        met: relative !== null && relative >= TARGETS.writeShareOfFloor.postgres,
      })
    }
    list.push({
      name: 'stale answers (of writes checked)',
      target: '0',
      value: `${r.writer.stale} of ${fmtInt(r.writer.checks)}`,
      met: r.writer.stale === 0 && r.writer.checks > 0,
    })
    const failed = r.writer.writeErrors + r.writer.checkFailures
    list.push({
      name: 'writer: failed writes + checks',
      target: '0',
      value: String(failed),
      met: failed === 0,
    })
  }
  const { hugeOverSmall, lastOverSmall } = hugeRatios(r)
  if (hugeOverSmall !== null) {
    list.push({
      name: 'huge p1 p50 / small p50',
      target: `<= ${TARGETS.hugeOverSmall}x`,
      value: `${hugeOverSmall.toFixed(2)}x`,
      met: hugeOverSmall <= TARGETS.hugeOverSmall,
    })
  }
  if (lastOverSmall !== null) {
    list.push({
      name: 'huge last p50 / small p50',
      target: `<= ${TARGETS.lastOverSmall}x`,
      value: `${lastOverSmall.toFixed(2)}x`,
      met: lastOverSmall <= TARGETS.lastOverSmall,
    })
  }
  if (r.backend === 'sqlite') {
    list.push({
      name: 'import (wall clock)',
      target: `>= ${fmtInt(TARGETS.importFoldersPerSecond)} folders/s`,
      value: `${fmtInt(r.import.foldersPerSecond)} folders/s`,
      met: r.import.foldersPerSecond >= TARGETS.importFoldersPerSecond,
    })
  }
  const phases = servicePhases(r)
  const failed = phases.reduce((n, [, f]) => n + f.non2xx + f.errors + f.timeouts, 0)
  list.push({ name: 'non-2xx + errors + timeouts', target: '0', value: String(failed), met: failed === 0 })
  const wrong = phases.reduce((n, [, f]) => n + f.wrong, 0)
  const checked =
    r.verify.requests +
    r.mixed.verified +
    r.probes.small.requests +
    r.probes.smallRotating.requests +
    (r.probes.hugeFirst?.requests ?? 0) +
    (r.probes.hugeLast?.requests ?? 0)
  list.push({
    name: 'wrong answers (of checked)',
    target: '0',
    value: `${wrong} of ${fmtInt(checked)}`,
    met: wrong === 0,
  })
  return list
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en')
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

function us(ms: number): string {
  return `${Math.round(ms * 1000)} µs`
}

function growth(from: number, to: number): string {
  const percent = ((to - from) / from) * 100
  return `${percent >= 0 ? '+' : ''}${percent.toFixed(1)}%`
}

function ms(n: number): string {
  return n < 10 ? `${n.toFixed(2)} ms` : `${n.toFixed(1)} ms`
}

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length))) ?? []
  return rows
    .map((row) =>
      row
        .map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

export function formatBackend(r: BackendResult, connections: number): string {
  const { hugeOverSmall, lastOverSmall } = hugeRatios(r)
  const probe = (name: string, p: BackendResult['probes']['small'] | null, ratio: string) =>
    p === null
      ? []
      : [
          [
            name,
            `p50 ${ms(p.latencyMs.p50)}  p99 ${ms(p.latencyMs.p99)}`,
            `${fmtInt(p.requests)} req, ${p.serverCpuMsPerRequest === null ? '?' : us(p.serverCpuMsPerRequest)} server CPU/req`,
            ratio,
          ],
        ]
  const cpu = (f: BackendResult['mixed']) =>
    `${f.generator}${f.clientCpuShare === null ? '' : ` ${(f.clientCpuShare * 100).toFixed(0)}% of a core`}` +
    (f.otherCores === null ? '' : `, other processes ${f.otherCores.toFixed(2)} cores`)
  const load = (name: string, f: BackendResult['mixed'], ratio: string) => [
    name,
    `${fmtInt(f.reqPerSec)} req/s`,
    `p50 ${ms(f.latencyMs.p50)} p99 ${ms(f.latencyMs.p99)}; ${cpu(f)}`,
    ratio,
  ]
  const w = r.writer
  const mixedPhase = r.memory.phases.find((p) => p.phase === 'read-only')
  const first = r.memory.phases[0]

  const figures = table([
    ['measure', 'value', 'detail', 'ratio'],
    [
      'import',
      `${fmtInt(r.import.foldersPerSecond)} folders/s`,
      `${fmtInt(r.import.folders)} folders in ${r.import.wallSeconds.toFixed(2)} s wall` +
        (r.import.cliSeconds === null
          ? ''
          : `; CLI reports ${r.import.cliSeconds.toFixed(2)} s (${fmtInt(r.import.cliFoldersPerSecond ?? 0)}/s)`),
      '',
    ],
    load(`read-only load (${connections} conn)`, r.mixed, `${r.ratio.toFixed(3)} of ceiling`),
    ...(r.withWrites === null || w === null
      ? []
      : [
          load('load with writes', r.withWrites, `${((r.writeShare ?? 0) * 100).toFixed(1)}% of read-only`),
          [
            'writer process',
            `${w.writesPerSecond.toFixed(1)} writes/s`,
            `${fmtInt(w.writes)} (${w.byKind.insert} ins, ${w.byKind.rename} ren, ${w.byKind.delete} del), ` +
              `commit p50 ${ms(w.commitMs.p50)} p99 ${ms(w.commitMs.p99)}; check p50 ${ms(w.checkMs.p50)} p99 ${ms(w.checkMs.p99)}`,
            `${w.stale} stale of ${fmtInt(w.checks)}`,
          ],
        ]),
    ...r.ceilings.map((c) =>
      load(`ceiling (node:http), ${c.generator}`, c, c === r.ceiling ? 'the ratios use this' : ''),
    ),
    ...probe('probe small p1', r.probes.small, '1x'),
    ...probe(
      'probe small p1, all users',
      r.probes.smallRotating,
      `${(r.probes.smallRotating.latencyMs.p50 / r.probes.small.latencyMs.p50).toFixed(2)}x small`,
    ),
    ...probe(
      'probe huge p1',
      r.probes.hugeFirst,
      hugeOverSmall === null ? '' : `${hugeOverSmall.toFixed(2)}x small`,
    ),
    ...probe(
      `probe huge p${r.probes.hugeLastPage}`,
      r.probes.hugeLast,
      lastOverSmall === null ? '' : `${lastOverSmall.toFixed(2)}x small`,
    ),
    [
      'server CPU / request',
      r.mixed.serverCpuMsPerRequest === null || r.ceiling.serverCpuMsPerRequest === null
        ? '?'
        : `${us(r.mixed.serverCpuMsPerRequest)} vs ${us(r.ceiling.serverCpuMsPerRequest)}`,
      `service (read-only${
        r.withWrites?.serverCpuMsPerRequest == null
          ? ''
          : `; ${us(r.withWrites.serverCpuMsPerRequest)} with writes`
      }) vs ceiling (CPU time: less sensitive than req/s to other load)`,
      r.cpuRatio === null ? '' : `${r.cpuRatio.toFixed(3)} (CPU)`,
    ],
    [
      'service RSS',
      `peak ${mb(r.memory.peakBytes)}`,
      `after start ${first ? mb(first.startBytes) : '?'}; read-only load ${
        mixedPhase
          ? `${mb(mixedPhase.startBytes)} -> ${mb(mixedPhase.endBytes)} (${growth(mixedPhase.startBytes, mixedPhase.endBytes)})`
          : '?'
      }; end ${mb(r.memory.phases.at(-1)?.endBytes ?? 0)}`,
      '',
    ],
  ])

  const service = r.mixed.reqPerSec
  const cpuPerRequest = (f: BackendResult['mixed']) =>
    f.serverCpuMsPerRequest === null ? '?' : us(f.serverCpuMsPerRequest)
  const generatorCpu = (f: BackendResult['mixed']) =>
    f.clientCpuShare === null ? '?' : `${(f.clientCpuShare * 100).toFixed(0)}%`
  const floorTable = table([
    [
      'server (same bytes, same working set)',
      'req/s (median)',
      'rounds',
      'share of ceiling',
      'server CPU/req',
      'generator CPU',
      'service / this',
    ],
    ...r.floor.readOnly.map((row) => [
      row.name,
      fmtInt(row.median.reqPerSec),
      row.runs.map((n) => `${(n / 1000).toFixed(1)}k`).join(' '),
      (row.median.reqPerSec / r.ceiling.reqPerSec).toFixed(3),
      cpuPerRequest(row.median),
      generatorCpu(row.median),
      row.median === r.mixed ? '' : (service / row.median.reqPerSec).toFixed(3),
    ]),
  ])
  const writeTable =
    r.floor.withWrites === null || w === null
      ? null
      : table([
          [`under ${w.writesPerSecond.toFixed(0)} writes/s`, 'req/s (median)', 'rounds', 'kept of read-only'],
          ...r.floor.withWrites.map((row) => [
            row.name,
            fmtInt(row.median.reqPerSec),
            row.runs.map((n) => `${(n / 1000).toFixed(1)}k`).join(' '),
            `${((keptUnderWrites(r, row.name) ?? 0) * 100).toFixed(1)}%`,
          ]),
        ])

  const failures = table([
    ['phase', 'requests', 'non-2xx', 'errors', 'timeouts', 'wrong'],
    ...servicePhases(r).map(([name, f]) => [
      name,
      fmtInt(f.requests),
      String(f.non2xx),
      String(f.errors),
      String(f.timeouts),
      String(f.wrong),
    ]),
    ...r.ceilings.map((c) => [
      `ceiling, ${c.generator}`,
      fmtInt(c.requests),
      String(c.non2xx),
      String(c.errors),
      String(c.timeouts),
      '-',
    ]),
  ])

  const targets = table([
    ['target', 'wanted', 'got', ''],
    ...verdicts(r).map((v) => [v.name, v.target, v.value, v.met ? 'met' : 'NOT MET']),
  ])

  const busy = [r.mixed.otherCores, r.ceiling.otherCores].some((cores) => cores !== null && cores > 0.25)
  const examples = [
    ...servicePhases(r).flatMap(([name, f]) => f.examples.map((e) => `  ${name}: ${e}`)),
    ...(w?.examples.map((e) => `  writer: ${e}`) ?? []),
  ]
  return [
    `== ${r.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}  ${r.url}${r.note ? `  (${r.note})` : ''}`,
    '',
    floorTable,
    `(the bench's service runs at LOG_LEVEL=warn without rate limits; "defaults": LOG_LEVEL=info, its request lines to /dev/null, rate limits on;`,
    ` "uncached": LISTING_CACHE_MB=0; generator CPU: the load generator's own share of a core;`,
    ` WORKERS=2: the two workers share this machine's ${cpus().length} cores with wrk, which is not the case of a real deployment's clients)`,
    ...(writeTable === null ? [] : ['', writeTable]),
    '',
    figures,
    ...(busy
      ? [
          'note: other processes kept the machine busy during a load phase (see "other processes"): ratios are less reliable',
        ]
      : []),
    '',
    failures,
    ...(examples.length > 0 ? ['', 'examples of failures:', ...examples] : []),
    '',
    targets,
    ...(r.profile ? ['', formatProfile(r.profile)] : []),
  ].join('\n')
}
