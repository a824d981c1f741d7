import cluster, { type Worker } from 'node:cluster'
import { hostname } from 'node:os'
import type { Config } from '../config.js'
import { openStore } from '../store/open-store.js'
import { announceListening } from '../service-url.js'

/**
 * WORKERS > 1: the primary process forks that many workers (node:cluster), each a whole
 * service (its own store connection or pool, listing cache and metrics) listening on the
 * one port the primary shares out. The primary serves nothing: it brings the schema up to
 * date once (so workers never race each other's migrations), restarts a worker that dies,
 * and on SIGTERM or SIGINT has every worker drain and stop as a single service would.
 */

/** What a worker tells the primary, and the primary a worker. */
export type ClusterMessage = { type: 'listening'; address: string } | { type: 'shutdown' }

/** A worker that died after this long is restarted at once; sooner, after a growing pause. */
const HEALTHY_AFTER_MS = 10_000
const FIRST_RESTART_DELAY_MS = 100
const MAX_RESTART_DELAY_MS = 30_000
/** Past the workers' own drain bound, the primary stops waiting and kills what is left. */
const SHUTDOWN_MARGIN_MS = 2_000

/** The pause before restarting a worker, given how many died young in a row before it. */
export function restartDelayMs(youngDeathsInARow: number): number {
  if (youngDeathsInARow === 0) return 0
  return Math.min(MAX_RESTART_DELAY_MS, FIRST_RESTART_DELAY_MS * 2 ** (youngDeathsInARow - 1))
}

/** A line in the service's log format (pino's JSON), for the primary, which has no app. */
function log(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
  const levels = { info: 30, warn: 40, error: 50 }
  const line = {
    level: levels[level],
    time: Date.now(),
    pid: process.pid,
    hostname: hostname(),
    ...fields,
    msg,
  }
  process.stdout.write(`${JSON.stringify(line)}\n`)
}

function levelShown(config: Readonly<Config>, level: 'info' | 'warn' | 'error'): boolean {
  const order = ['trace', 'debug', 'info', 'warn', 'error', 'fatal']
  const at = order.indexOf(config.logLevel)
  return at !== -1 && at <= order.indexOf(level)
}

/**
 * Runs the primary until every worker has stopped: resolves with the exit code (0 when
 * every worker drained and exited 0 on a signal; 1 when one failed to start or the drain
 * overran).
 */
export async function runPrimary(config: Readonly<Config>, workers: number): Promise<number> {
  const say = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => {
    if (levelShown(config, level)) log(level, msg, fields)
  }
  // Migrations once, here; the workers then find the schema current.
  const store = await openStore(config)
  await store.close()

  let stopping = false
  let everListening = false
  let youngDeaths = 0
  /** the workers alive, and when each started */
  const bornAt = new Map<Worker, number>()
  const listening = new Set<Worker>()
  const pending = new Set<NodeJS.Timeout>()
  let finish: (code: number) => void = () => {}
  const finished = new Promise<number>((resolve) => (finish = resolve))
  let failed = false

  const fork = () => {
    const worker = cluster.fork()
    bornAt.set(worker, Date.now())
    worker.on('message', (message: ClusterMessage) => {
      if (message.type !== 'listening') return
      listening.add(worker)
      if (!everListening && listening.size === workers) {
        everListening = true
        announceListening(config, message.address, (line) =>
          say('info', `${line} (${workers} workers)`, { host: config.host }),
        )
      }
    })
  }

  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (bornAt.get(worker) ?? Date.now())
    const wasListening = listening.delete(worker)
    bornAt.delete(worker)
    if (stopping) {
      if (code !== 0) failed = true
      if (bornAt.size === 0) finish(failed ? 1 : 0)
      return
    }
    // A worker that never listened before any ever did: start-up itself fails (a port in
    // use, a bad database): stop rather than fork the same failure forever.
    if (!wasListening && !everListening) {
      say('error', 'a worker failed to start: stopping', { worker_pid: worker.process.pid, code, signal })
      failed = true
      stopAll()
      return
    }
    youngDeaths = lived < HEALTHY_AFTER_MS ? youngDeaths + 1 : 0
    const delay = restartDelayMs(youngDeaths)
    say('warn', `a worker exited; starting another in ${delay} ms`, {
      worker_pid: worker.process.pid,
      code,
      signal,
    })
    const timer = setTimeout(() => {
      pending.delete(timer)
      if (!stopping) fork()
    }, delay)
    pending.add(timer)
  })

  const stopAll = () => {
    if (stopping) return
    stopping = true
    for (const timer of pending) clearTimeout(timer)
    if (bornAt.size === 0) {
      finish(failed ? 1 : 0)
      return
    }
    for (const worker of bornAt.keys()) {
      // One whose channel is already closed is exiting: its exit event still comes.
      if (worker.isConnected()) worker.send({ type: 'shutdown' } satisfies ClusterMessage)
    }
    const bound = config.shutdownDelayMs + config.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS
    setTimeout(() => {
      failed = true
      for (const worker of bornAt.keys()) worker.process.kill('SIGKILL')
    }, bound).unref()
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      say('info', 'shutting down: every worker drains', { signal })
      stopAll()
    })
  }
  // Workers accept connections themselves from the one listening socket they share, instead
  // of the primary accepting and handing each over (node:cluster's default on Linux): a
  // connection handed to a worker as it died stayed open in the primary, unanswered, for
  // ever. Now a connection is either still queued on the shared socket, where the other
  // worker accepts it, or accepted by the dying worker, and the kernel resets it when that
  // process ends (docs/operations.md "Workers").
  cluster.schedulingPolicy = cluster.SCHED_NONE
  for (let i = 0; i < workers; i++) fork()
  const code = await finished
  // The primary closes the database last: workers that close a SQLite file at the same
  // instant each see the other still connected, and neither checkpoints and removes the WAL,
  // which the last connection to close does.
  if (code === 0) {
    try {
      await (await openStore(config)).close()
    } catch (error) {
      say('warn', 'the last close of the database failed', { err: String(error) })
    }
  }
  return code
}

/** In a worker: the primary's address line and shutdown order. */
export const inWorker = (): boolean => cluster.isWorker

/** The first worker forked: the one that writes start-up hints, once for the service. */
export const isFirstWorker = (): boolean => cluster.worker?.id === 1

export function tellPrimary(message: ClusterMessage): void {
  process.send?.(message)
}

/** Calls `stop` once when the primary orders the shutdown. */
export function onPrimaryShutdown(stop: () => void): void {
  process.on('message', (message: ClusterMessage) => {
    if (message.type === 'shutdown') stop()
  })
}
