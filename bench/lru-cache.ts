import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { LRUCache } from 'lru-cache'
import { ListingCache, type CachedListing } from '../src/http/listing-cache.js'
import { FailureCounter } from '../src/http/plugins/auth-failures.js'

/**
 * The service's two hand-written LRU maps against `lru-cache` on their own workloads:
 *
 * - answers: ListingCache (a Map in recency order, bounded by bytes) and LRUCache with
 *   `maxSize` and `sizeCalculation`, under a 64 MB budget of 10 KB answers (about 6,400
 *   entries), requests over a working set that fits (all hits) and over one twice the
 *   budget (about half misses, each a set and an eviction);
 * - failures: FailureCounter (a Map of 10,000 addresses in charging order) and the same
 *   counter over LRUCache with `max`, charging 20,000 addresses at random.
 *
 * Each run is its own process, so the heap it reports holds only that cache; rounds
 * alternate the implementations so that other load on the machine falls on both alike.
 *
 *   npm run bench:lru -- [--ops N] [--rounds N]
 */

const BODY_BYTES = 10_000
const BUDGET_BYTES = 64 * 1024 * 1024
const FAILURE_ADDRESSES = 20_000

type Impl = 'hand-written' | 'lru-cache'
type Workload = 'answers-fit' | 'answers-2x' | 'failures'
const IMPLS: Impl[] = ['hand-written', 'lru-cache']
const WORKLOADS: Workload[] = ['answers-fit', 'answers-2x', 'failures']

interface Answers {
  get(key: string): CachedListing | undefined
  set(key: string, entry: CachedListing): void
}

function answersCache(impl: Impl): Answers {
  if (impl === 'hand-written') return new ListingCache(BUDGET_BYTES)
  // The same size rule as ListingCache's sizeOf.
  return new LRUCache<string, CachedListing>({
    maxSize: BUDGET_BYTES,
    sizeCalculation: (entry, key) => key.length + entry.body.length + entry.etag.length + entry.link.length,
  })
}

/** FailureCounter's rule over LRUCache: a window per key, the least recently charged out first. */
class LruFailureCounter {
  private readonly windows = new LRUCache<string, { failures: number; endsAt: number }>({ max: 10_000 })
  constructor(private readonly windowMs = 60_000) {}
  charge(key: string): void {
    const now = Date.now()
    let window = this.windows.get(key)
    if (window === undefined || window.endsAt <= now) window = { failures: 0, endsAt: now + this.windowMs }
    window.failures++
    this.windows.set(key, window)
  }
}

/** A deterministic stream of indexes below n (xorshift), the same for every implementation. */
function indexes(n: number): () => number {
  let x = 2463534242
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) % n
  }
}

interface RunFigures {
  impl: Impl
  workload: Workload
  opsPerSecond: number
  hitRate: number | null
  /** the heap the filled cache holds beyond the empty process's (bodies share one buffer) */
  heapMb: number
}

/** Keeps the cache under measurement reachable until its heap is read. */
const retained: unknown[] = []

function heapNow(): number {
  globalThis.gc?.()
  globalThis.gc?.()
  return process.memoryUsage().heapUsed
}

function child(impl: Impl, workload: Workload, ops: number): RunFigures {
  // Every answer's body is a view of one buffer: the heap then shows each entry's own cost.
  const shared = Buffer.alloc(BODY_BYTES, 0x61)
  const before = heapNow()
  let hits = 0
  let run: () => void
  if (workload === 'failures') {
    const counter = impl === 'hand-written' ? new FailureCounter(1_000_000) : new LruFailureCounter()
    const keys = Array.from({ length: FAILURE_ADDRESSES }, (_, i) => `address:10.${i >> 8}.${i & 255}.1`)
    const next = indexes(keys.length)
    run = () => counter.charge(keys[next()] as string)
  } else {
    const cache = answersCache(impl)
    const capacity = Math.floor(BUDGET_BYTES / (BODY_BYTES + 200))
    const workingSet = workload === 'answers-fit' ? Math.floor(capacity * 0.8) : capacity * 2
    const keys = Array.from(
      { length: workingSet },
      (_, i) => `${String(i).padStart(36, '0')} 1764000000000 ${String(i).padStart(36, '0')} 1 50 name`,
    )
    const next = indexes(keys.length)
    run = () => {
      const key = keys[next()] as string
      if (cache.get(key) !== undefined) {
        hits++
        return
      }
      cache.set(key, {
        body: shared.subarray(0, BODY_BYTES),
        etag: `"${key.length.toString(16).padStart(27, '0')}"`,
        link: `</v1/folders?page=2&limit=50>; rel="next"`,
      })
    }
  }
  // Warm-up: fill the cache and let the JIT settle.
  for (let i = 0; i < ops; i++) run()
  hits = 0
  const started = process.hrtime.bigint()
  for (let i = 0; i < ops; i++) run()
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  retained.push(run)
  const heapMb = (heapNow() - before) / 1024 / 1024
  retained.length = 0
  return {
    impl,
    workload,
    opsPerSecond: ops / seconds,
    hitRate: workload === 'failures' ? null : hits / ops,
    heapMb,
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

function main(): void {
  const { values } = parseArgs({
    options: {
      ops: { type: 'string', default: '1000000' },
      rounds: { type: 'string', default: '3' },
      child: { type: 'string' },
    },
  })
  const ops = Number(values.ops)
  const rounds = Number(values.rounds)
  if (!(ops > 0) || !(rounds > 0)) throw new Error('--ops and --rounds take positive numbers')
  if (values.child !== undefined) {
    const [impl, workload] = values.child.split(':') as [Impl, Workload]
    process.stdout.write(JSON.stringify(child(impl, workload, ops)))
    return
  }
  const self = fileURLToPath(import.meta.url)
  const results: RunFigures[] = []
  for (let round = 0; round < rounds; round++) {
    for (const workload of WORKLOADS) {
      // Alternate which goes first, round by round.
      for (const impl of round % 2 === 0 ? IMPLS : [...IMPLS].reverse()) {
        const out = execFileSync(
          process.execPath,
          ['--expose-gc', '--import', 'tsx', self, '--child', `${impl}:${workload}`, '--ops', String(ops)],
          { encoding: 'utf8' },
        )
        results.push(JSON.parse(out) as RunFigures)
      }
    }
  }
  process.stdout.write(`median of ${rounds} rounds, ${ops.toLocaleString('en')} operations each\n`)
  process.stdout.write('workload     implementation  ops/s (M)  hit rate  heap MB  ops/s vs hand-written\n')
  for (const workload of WORKLOADS) {
    const base = median(
      results.filter((r) => r.workload === workload && r.impl === 'hand-written').map((r) => r.opsPerSecond),
    )
    for (const impl of IMPLS) {
      const mine = results.filter((r) => r.workload === workload && r.impl === impl)
      const perSecond = median(mine.map((r) => r.opsPerSecond))
      const hitRate = mine[0]?.hitRate
      process.stdout.write(
        [
          workload.padEnd(12),
          impl.padEnd(15),
          (perSecond / 1e6).toFixed(2).padStart(9),
          (hitRate === null || hitRate === undefined ? '-' : `${(hitRate * 100).toFixed(0)}%`).padStart(8),
          median(mine.map((r) => r.heapMb))
            .toFixed(1)
            .padStart(7),
          (perSecond / base).toFixed(2).padStart(22),
        ].join('  ') + '\n',
      )
    }
  }
}

main()
