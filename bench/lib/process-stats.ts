import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/**
 * Resident memory and CPU time of another process, read from /proc (Linux) with `ps` as
 * the fallback elsewhere. The sampler tags each sample with the bench phase it fell in.
 */

let clockTicks: number | undefined

function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
    } catch {
      clockTicks = 100
    }
  }
  return clockTicks
}

/** Resident set size in bytes, or null once the process is gone. */
export function readRss(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    if (match?.[1] !== undefined) return Number(match[1]) * 1024
  } catch {
    // not Linux, or the process is gone: ask ps
  }
  try {
    const kb = Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim())
    return Number.isFinite(kb) && kb > 0 ? kb * 1024 : null
  } catch {
    return null
  }
}

/** User plus system CPU seconds the process has used so far, or null where /proc is missing. */
export function readCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const utime = Number(fields[11])
    const stime = Number(fields[12])
    return (utime + stime) / ticksPerSecond()
  } catch {
    return null
  }
}

/** `pid` and its descendants (a service's cluster workers), from /proc; just `pid` elsewhere. */
function processTree(pid: number): number[] {
  const tree = [pid]
  for (let i = 0; i < tree.length; i++) {
    const one = tree[i] as number
    try {
      const children = readFileSync(`/proc/${one}/task/${one}/children`, 'utf8').trim()
      if (children !== '') tree.push(...children.split(' ').map(Number))
    } catch {
      // gone meanwhile, or not Linux
    }
  }
  return tree
}

/** {@link readCpuSeconds} summed over `pid` and its descendants (NaN when `pid` is gone). */
export function readTreeCpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, one) => sum + (readCpuSeconds(one) ?? 0), 0) || NaN
}

/** {@link readRss} summed over `pid` and its descendants (NaN when `pid` is gone). */
export function readTreeRss(pid: number): number {
  return processTree(pid).reduce((sum, one) => sum + (readRss(one) ?? 0), 0) || NaN
}

export interface RssSample {
  /** ms since the sampler started */
  at: number
  phase: string
  rss: number
}

export interface PhaseMemory {
  phase: string
  startBytes: number
  endBytes: number
  peakBytes: number
  samples: number
}

export class RssSampler {
  readonly samples: RssSample[] = []
  phase = 'start'
  private readonly started = performance.now()
  private readonly timer: NodeJS.Timeout

  constructor(
    private readonly pid: number,
    intervalMs = 500,
  ) {
    this.sample()
    this.timer = setInterval(() => this.sample(), intervalMs)
    this.timer.unref()
  }

  /** Samples now too, so each phase has a first and last reading at its edges. */
  enter(phase: string): void {
    this.sample()
    this.phase = phase
    this.sample()
  }

  sample(): void {
    const rss = readRss(this.pid)
    if (rss !== null)
      this.samples.push({ at: Math.round(performance.now() - this.started), phase: this.phase, rss })
  }

  stop(): void {
    this.sample()
    clearInterval(this.timer)
  }

  peak(): number {
    return this.samples.reduce((max, s) => Math.max(max, s.rss), 0)
  }

  byPhase(): PhaseMemory[] {
    const phases: PhaseMemory[] = []
    for (const s of this.samples) {
      const last = phases.at(-1)
      if (last?.phase === s.phase) {
        last.endBytes = s.rss
        last.peakBytes = Math.max(last.peakBytes, s.rss)
        last.samples++
      } else {
        phases.push({ phase: s.phase, startBytes: s.rss, endBytes: s.rss, peakBytes: s.rss, samples: 1 })
      }
    }
    return phases
  }
}

/** CPU seconds the whole machine has spent busy (all cores), or null where /proc/stat is missing. */
export function readMachineBusySeconds(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
    // cpu user nice system idle iowait irq softirq steal ...
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number)
    const busy = [user, nice, system, irq, softirq, steal].reduce<number>((sum, n) => sum + (n ?? 0), 0)
    return busy / ticksPerSecond()
  } catch {
    return null
  }
}
