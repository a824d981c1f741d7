import { parseArgs } from 'node:util'

/** Command-line options of `npm run bench`; `--quick` swaps in small sizes that explicit flags still override. */

export interface BenchOptions {
  users: number
  rootFolders: number
  smallFolders: number
  huge: number
  limit: number
  /** pages of each user's listed folder in the working set (besides the root) */
  pages: number
  /** alternating rounds over the service and its floor servers */
  rounds: number
  duration: number
  warmup: number
  connections: number
  /** wrk threads driving the service (the ceiling is also measured with 1 and 2) */
  threads: number
  /** writes per second of the writer process in the write phase; 0: no write phase */
  writeRate: number
  /** LISTING_CACHE_MB of the service under test */
  cacheMb: number
  /** throughput load generator: wrk when installed, else autocannon */
  generator: 'wrk' | 'autocannon'
  pipelining: number
  probeDuration: number
  probeConnections: number
  backend: 'all' | 'sqlite' | 'postgres'
  /** PostgreSQL URL to bench (flag --db, else TEST_DATABASE_URL); null: SQLite only */
  postgresUrl: string | null
  seed: number
  importTimeout: number
  quick: boolean
  profile: boolean
  build: boolean
  keep: boolean
  outDir: string
}

const DEFAULTS = {
  users: 1000,
  'root-folders': 10,
  'small-folders': 200,
  huge: 100_000,
  limit: 50,
  pages: 2,
  rounds: 3,
  duration: 10,
  warmup: 2,
  connections: 32,
  threads: 1,
  'write-rate': 100,
  'cache-mb': 64,
  pipelining: 1,
  'probe-duration': 3,
  'probe-connections': 1,
  seed: 1,
  'import-timeout': 600,
}

const QUICK: Partial<typeof DEFAULTS> = {
  users: 100,
  huge: 10_000,
  duration: 2,
  warmup: 1,
  rounds: 1,
  'probe-duration': 1,
}

export const HELP = `npm run bench -- [options]

Generates a data set, loads it with \`folder-service import\`, starts \`folder-service serve\`
and measures it on 127.0.0.1: read-only load, the same load while a second process writes
straight to the database (every write's listing checked for staleness), in rounds that
alternate with its floor: a plain node:http server that answers with the same bytes
(Node's ceiling on this machine), Fastify sending them, and both plus the one session
lookup per request (bench/lib/floor-server.ts); the service also runs at its own defaults
(LOG_LEVEL=info, rate limits on) and uncached (LISTING_CACHE_MB=0) in the read-only rounds.
SQLite always; PostgreSQL too when --db or
TEST_DATABASE_URL names one. Results: bench/results/<timestamp>.json and latest.json.

Data set
  --users N              users, each with one live session (default ${DEFAULTS.users}; quick ${QUICK.users})
  --root-folders N       root folders per user (default ${DEFAULTS['root-folders']})
  --small-folders N      children of each user's "small" folder (default ${DEFAULTS['small-folders']})
  --huge N               children of one extra user's huge folder; 0: no huge probes
                         (default ${DEFAULTS.huge}; quick ${QUICK.huge})
  --seed N               seed of the generated names and timestamps (default ${DEFAULTS.seed})

Load
  --duration S           seconds of each measured load phase (default ${DEFAULTS.duration}; quick ${QUICK.duration})
  --warmup S             seconds of warm-up before each load phase (default ${DEFAULTS.warmup}; quick ${QUICK.warmup})
  --connections N        connections of the throughput load (default ${DEFAULTS.connections})
  --threads N            wrk threads driving the service (default ${DEFAULTS.threads})
  --rounds N             alternating rounds over the service and its floor servers, the
                         median of each kept (default ${DEFAULTS.rounds}; quick ${QUICK.rounds})
  --generator G          wrk | autocannon (default wrk when installed: apt-get install wrk)
  --write-rate N         writes/s of the writer process in the write phase; 0: no write
                         phase (default ${DEFAULTS['write-rate']})
  --pages N              pages of each user's folder in the working set, besides their
                         root: N + 1 listings a user (default ${DEFAULTS.pages}: three each)
  --cache-mb N           the service's LISTING_CACHE_MB; the working set (about 33 MB of
                         bodies at 1,000 users and 2 pages) must fit, or a rotation over it
                         never hits (default ${DEFAULTS['cache-mb']}, the service's default)
  --pipelining N         requests in flight per connection, autocannon only (default ${DEFAULTS.pipelining})
  --limit N              page size of every request (default ${DEFAULTS.limit})
  --probe-duration S     seconds of each latency probe (default ${DEFAULTS['probe-duration']}; quick ${QUICK['probe-duration']})
  --probe-connections N  concurrent requests of a latency probe (default ${DEFAULTS['probe-connections']})

Backends
  --db URL               a postgres:// URL to bench as well (default: TEST_DATABASE_URL)
  --backend B            all | sqlite | postgres (default all: SQLite, plus PostgreSQL when a URL is known)

Run
  --quick                small data set and 1-2 s phases: a smoke run
  --profile              run the service under --cpu-prof; profiles land in <out>/profiles
  --no-build             use dist/ as it is (default: rebuild it when src/ is newer)
  --keep                 keep the temporary directory (data file, SQLite database)
  --import-timeout S     give up on an import after S seconds (default ${DEFAULTS['import-timeout']})
  --out DIR              where result JSON goes (default bench/results)
  -h, --help             this text
`

export class OptionsError extends Error {
  override readonly name = 'OptionsError'
}

function whole(name: string, text: string | undefined, fallback: number, min: number): number {
  if (text === undefined) return fallback
  if (!/^[0-9]+$/.test(text) || Number(text) < min) {
    throw new OptionsError(`--${name}: expected a whole number of at least ${min}, got '${text}'`)
  }
  return Number(text)
}

function seconds(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const value = Number(text)
  if (!/^[0-9]+(\.[0-9]+)?$/.test(text) || value <= 0) {
    throw new OptionsError(`--${name}: expected a positive number of seconds, got '${text}'`)
  }
  return value
}

/** Parsed options, or null when --help was asked for. Throws OptionsError on a bad flag. */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions | null {
  const numeric = Object.fromEntries(Object.keys(DEFAULTS).map((name) => [name, { type: 'string' as const }]))
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        ...numeric,
        db: { type: 'string' },
        backend: { type: 'string' },
        generator: { type: 'string' },
        out: { type: 'string' },
        quick: { type: 'boolean' },
        profile: { type: 'boolean' },
        'no-build': { type: 'boolean' },
        keep: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    throw new OptionsError((error as Error).message)
  }
  const v = parsed.values as Record<string, string | boolean | undefined>
  if (v.help === true) return null
  const quick = v.quick === true
  const base = quick ? { ...DEFAULTS, ...QUICK } : DEFAULTS
  const str = (name: string) => v[name] as string | undefined

  const backend = str('backend') ?? 'all'
  if (backend !== 'all' && backend !== 'sqlite' && backend !== 'postgres') {
    throw new OptionsError(`--backend: expected all, sqlite or postgres, got '${backend}'`)
  }
  const generator = str('generator') ?? 'wrk'
  if (generator !== 'wrk' && generator !== 'autocannon') {
    throw new OptionsError(`--generator: expected wrk or autocannon, got '${generator}'`)
  }
  const db = str('db')
  if (db !== undefined && !/^postgres(ql)?:\/\//i.test(db)) {
    throw new OptionsError(
      `--db: expected a postgres:// URL (SQLite always runs on a temporary file), got '${db}'`,
    )
  }
  const postgresUrl = db ?? (env.TEST_DATABASE_URL || null)

  const options: BenchOptions = {
    users: whole('users', str('users'), base.users, 1),
    rootFolders: whole('root-folders', str('root-folders'), base['root-folders'], 1),
    smallFolders: whole('small-folders', str('small-folders'), base['small-folders'], 1),
    huge: whole('huge', str('huge'), base.huge, 0),
    limit: whole('limit', str('limit'), base.limit, 1),
    pages: whole('pages', str('pages'), base.pages, 1),
    rounds: whole('rounds', str('rounds'), base.rounds, 1),
    duration: seconds('duration', str('duration'), base.duration),
    warmup: seconds('warmup', str('warmup'), base.warmup),
    connections: whole('connections', str('connections'), base.connections, 1),
    threads: whole('threads', str('threads'), base.threads, 1),
    writeRate: whole('write-rate', str('write-rate'), base['write-rate'], 0),
    cacheMb: whole('cache-mb', str('cache-mb'), base['cache-mb'], 0),
    generator,
    pipelining: whole('pipelining', str('pipelining'), base.pipelining, 1),
    probeDuration: seconds('probe-duration', str('probe-duration'), base['probe-duration']),
    probeConnections: whole('probe-connections', str('probe-connections'), base['probe-connections'], 1),
    backend,
    postgresUrl,
    seed: whole('seed', str('seed'), base.seed, 0),
    importTimeout: seconds('import-timeout', str('import-timeout'), base['import-timeout']),
    quick,
    profile: v.profile === true,
    build: v['no-build'] !== true,
    keep: v.keep === true,
    outDir: str('out') ?? 'bench/results',
  }
  if (options.limit > 100) throw new OptionsError('--limit: the service clamps pages to 100; pick 1 to 100')
  return options
}
