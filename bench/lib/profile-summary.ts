import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Where the service's CPU went, from the V8 profile `--cpu-prof` wrote (--profile): self
 * time per function and per area (a package of node_modules, the service's own code,
 * Node's internals, the garbage collector).
 */

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
  /** monotonic microseconds, the clock of process.hrtime */
  startTime: number
}

interface ProfileShare {
  name: string
  ms: number
  share: number
}

export interface ProfileSummary {
  file: string
  /** profiled time, idle excluded */
  busyMs: number
  areas: ProfileShare[]
  functions: ProfileShare[]
  /** by the caller's stages (see summariseProfiles' stageOf), when it gave them */
  stages?: ProfileShare[]
}

function area(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg?.[1] !== undefined) return pkg[1]
  if (url.startsWith('node:')) return 'node internals'
  if (url.includes('/dist/')) return 'service (dist/)'
  return url
}

function top(totals: Map<string, number>, busy: number, count: number): ProfileShare[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => ({ name, ms: us / 1000, share: us / busy }))
}

/**
 * `windows`: only the samples taken within these spans (monotonic microseconds, as
 * `process.hrtime.bigint() / 1000n` reads them in any process of the machine).
 */
export function summariseProfiles(
  dir: string,
  count = 15,
  windows?: readonly (readonly [number, number])[],
  /** a function's stage of the work profiled, by its script and name (a bench's own grouping) */
  stageOf?: (url: string, functionName: string) => string,
): ProfileSummary | null {
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))
  if (file === undefined) return null
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map<number, number>()
  let at = profile.startTime
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0
    at += delta
    if (windows !== undefined && !windows.some(([from, to]) => at >= from && at <= to)) return
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta)
  })

  const areas = new Map<string, number>()
  const functions = new Map<string, number>()
  const stages = new Map<string, number>()
  let busy = 0
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame
    if (frame === undefined || frame.functionName === '(idle)') continue
    busy += us
    const where = area(frame.url, frame.functionName)
    areas.set(where, (areas.get(where) ?? 0) + us)
    if (stageOf !== undefined) {
      const stage = stageOf(frame.url, frame.functionName)
      stages.set(stage, (stages.get(stage) ?? 0) + us)
    }
    const file = frame.url.replace(/^.*\/(node_modules|dist)\//, '$1/')
    const name =
      `${frame.functionName || '(anonymous)'} ${file}${file ? `:${frame.lineNumber + 1}` : ''}`.trim()
    functions.set(name, (functions.get(name) ?? 0) + us)
  }
  return {
    file: join(dir, file),
    busyMs: busy / 1000,
    areas: top(areas, busy, count),
    functions: top(functions, busy, count),
    ...(stageOf === undefined ? {} : { stages: top(stages, busy, stages.size) }),
  }
}

export function formatProfile(summary: ProfileSummary): string {
  const line = (s: ProfileShare) => `  ${(s.share * 100).toFixed(1).padStart(5)}%  ${s.name}`
  return [
    `service CPU profile (${summary.file}), ${(summary.busyMs / 1000).toFixed(1)} s busy, self time:`,
    ...(summary.stages === undefined ? [] : [' by stage:', ...summary.stages.map(line)]),
    ' by area:',
    ...summary.areas.map(line),
    ' by function:',
    ...summary.functions.map(line),
  ].join('\n')
}
