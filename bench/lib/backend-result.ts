import type { ImportFigures } from './service.js'
import type { LoadResult, ProbeResult } from './load.js'
import type { PhaseMemory, RssSample } from './process-stats.js'
import type { ProfileSummary } from './profile-summary.js'
import type { WriterReport } from './write-phase.js'

/**
 * What one backend's run of `npm run bench` measured: the figures runBackend (backend.ts)
 * produces and the report (report.ts) reads, in a module of types only, so neither of the
 * two imports the other for them.
 */

export interface LoadFigures extends LoadResult {
  /** CPU seconds the server used per 1,000 requests */
  serverCpuMsPerRequest: number | null
  /** which generator drove this phase: "wrk -t1", "autocannon" ... */
  generator: string
  /** share of one core the load generator used (wrk: sampled from /proc), when known */
  clientCpuShare: number | null
  /** cores kept busy by other processes of the machine meanwhile (noise), when known */
  otherCores: number | null
}

interface ProbeFigures extends ProbeResult {
  /** CPU the service used per request at this low concurrency */
  serverCpuMsPerRequest: number | null
}

interface Probes {
  /** page 1 of one user's small folder, again and again: the same conditions as the huge probes */
  small: ProbeFigures
  /** page 1 of every user's small folder in turn: sessions and pages not in any cache */
  smallRotating: ProbeFigures
  hugeFirst: ProbeFigures | null
  hugeLast: ProbeFigures | null
  hugeLastPage: number | null
}

export interface BackendResult {
  backend: 'sqlite' | 'postgres'
  url: string
  note?: string
  import: ImportFigures
  verify: ProbeResult
  /** the listings the load rotates over, and about how many bytes their bodies take */
  workingSet: { listings: number; users: number; bytes: number; cacheMb: number }
  /** read-only load over every user's listings */
  mixed: LoadFigures
  /** the same load while the writer process writes (null: --write-rate 0) */
  withWrites: LoadFigures | null
  writer: WriterReport | null
  /** withWrites / mixed req/s */
  writeShare: number | null
  /** the ceiling server under each generator; `ceiling` is the highest wrk figure */
  ceilings: LoadFigures[]
  ceiling: LoadFigures
  ratio: number
  /** ceiling CPU per request / service CPU per request: the ratio with other load factored out */
  cpuRatio: number | null
  probes: Probes
  /** RSS of the service: peak, per phase, and every sample (about two a second) */
  memory: { peakBytes: number; phases: PhaseMemory[]; samples: RssSample[] }
  recordedResponse: { status: number; bytes: number; headers: [string, string][] }
  /** the service against its floor servers, in alternating rounds */
  floor: FloorFigures
  /** where the service's CPU went (--profile) */
  profile?: ProfileSummary | null
}

/** One server of the alternating rounds. */
export interface FloorRow {
  name: string
  /** req/s of each round */
  runs: number[]
  /** the round of median req/s */
  median: LoadFigures
}

interface FloorFigures {
  rounds: number
  /**
   * read-only: the ceiling first, then the other floors, the service at its defaults and
   * uncached (SERVICE_VARIANTS), with WORKERS=2, the bench's quiet service last
   */
  readOnly: FloorRow[]
  /** under the writer: the lookup floors, the service last (null: --write-rate 0) */
  withWrites: FloorRow[] | null
  /** service / ceiling req/s of each read-only round: the spread of the ratio */
  serviceShares: number[]
}
