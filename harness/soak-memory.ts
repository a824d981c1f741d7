/**
 * The soak run's memory rule (bench/soak.ts): after the warm-up, the median RSS of the last
 * third of the samples may exceed the median of the first third by at most maxGrowthMb or
 * maxGrowthPercent, whichever is larger. Medians of thirds, not first and last samples, so
 * one garbage-collection step or a lazily returned heap page does not decide the verdict.
 */

export interface Sample {
  atSeconds: number
  /** bytes */
  rss: number
}

export interface MemoryVerdict {
  first: number
  last: number
  growing: boolean
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/** null when fewer than 6 samples follow the warm-up: too few to judge. */
export function memoryVerdict(
  samples: Sample[],
  warmupSeconds: number,
  maxGrowthMb: number,
  maxGrowthPercent: number,
): MemoryVerdict | null {
  const steady = samples.filter((x) => x.atSeconds >= warmupSeconds)
  if (steady.length < 6) return null
  const third = Math.floor(steady.length / 3)
  const first = median(steady.slice(0, third).map((x) => x.rss))
  const last = median(steady.slice(-third).map((x) => x.rss))
  const growth = last - first
  const allowed = Math.max(maxGrowthMb * 1024 * 1024, (first * maxGrowthPercent) / 100)
  return { first, last, growing: growth > allowed }
}
