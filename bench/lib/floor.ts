import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, HOST, spawnChild, stopChild, waitForHttp, type Child } from './processes.js'

/**
 * The servers the service is measured against (floor-server.ts), started side by side with
 * it, and the alternating rounds that load each in turn: in every round each server gets
 * the same warm-up and measured phase, so noise from the rest of the machine spreads over
 * all of them instead of landing on one; the median round of each is kept.
 */

export const FLOOR_KINDS = ['node', 'fastify', 'node-lookup', 'fastify-lookup'] as const
export type FloorKind = (typeof FLOOR_KINDS)[number]

/** What the floor servers replay: one real response of the service. */
export interface RecordedResponse {
  status: number
  /** header name and value pairs, as the service sent them (hop-by-hop ones left out) */
  headers: [string, string][]
  /** the body, base64 */
  body: string
}

/** Answered 200 without a session, so the bench can tell a lookup server is up. */
export const READY_PATH = '/floor-ready'

export interface LoadedServer {
  /** shown in the table */
  name: string
  child: Child
  port: number
}

export const FLOOR_NAMES: Record<FloorKind, string> = {
  node: 'node:http, same bytes (ceiling)',
  fastify: 'Fastify, same bytes',
  'node-lookup': 'node:http + session lookup',
  'fastify-lookup': 'Fastify + session lookup (onRequest)',
}

/**
 * The service as it is deployed beside the bench's quiet one (LOG_LEVEL=warn, no rate
 * limits, cached): at its own defaults (a request line per request, rate limits on), and
 * with the listing cache off, so every request reads and serialises its page.
 */
export const SERVICE_VARIANTS = [
  { name: 'folder-service, defaults', cached: true, defaults: true },
  { name: 'folder-service, uncached', cached: false, defaults: false },
  { name: 'folder-service, uncached, defaults', cached: false, defaults: true },
] as const

/** Starts one floor server of each kind, serving `recorded`; the lookup kinds read `url`. */
export async function startFloorServers(
  ctx: { root: string; tmp: string },
  recorded: RecordedResponse,
  url: string,
  kinds: readonly FloorKind[],
): Promise<Map<FloorKind, LoadedServer>> {
  const file = join(ctx.tmp, 'floor-response.json')
  writeFileSync(file, JSON.stringify(recorded))
  const servers = new Map<FloorKind, LoadedServer>()
  try {
    for (const kind of kinds) {
      const port = await freePort()
      const child = spawnChild(
        `floor server (${kind})`,
        process.execPath,
        ['--import', 'tsx', 'bench/lib/floor-server.ts', kind, String(port), file, url],
        process.env,
        ctx.root,
      )
      servers.set(kind, { name: FLOOR_NAMES[kind], child, port })
      await waitForHttp(child, `http://${HOST}:${port}${READY_PATH}`, 30_000)
    }
  } catch (error) {
    await stopFloorServers(servers)
    throw error
  }
  return servers
}

export async function stopFloorServers(servers: Map<FloorKind, LoadedServer>): Promise<void> {
  for (const server of servers.values()) await stopChild(server.child, 3_000)
}

/**
 * `rounds` rounds over `servers`, each round starting one server later than the last (so
 * no server always follows the same one); `load` warms up and measures one server.
 * Returns every server's figures, one per round, in round order.
 */
export async function alternate<F>(
  servers: LoadedServer[],
  rounds: number,
  load: (server: LoadedServer) => Promise<F>,
  log: (line: string) => void,
  describe: (figure: F) => string,
): Promise<F[][]> {
  const figures: F[][] = servers.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const line: string[] = []
    for (let k = 0; k < servers.length; k++) {
      const at = (round + k) % servers.length
      const server = servers[at] as LoadedServer
      const figure = await load(server)
      ;(figures[at] as F[]).push(figure)
      line.push(`${server.name.replace(', same bytes', '').replace(/ \(.*\)$/, '')} ${describe(figure)}`)
    }
    log(`    round ${round + 1}/${rounds}: ${line.join('; ')}`)
  }
  return figures
}

/** The round of median throughput (the lower middle of an even count). */
export function medianRun<F extends { reqPerSec: number }>(runs: F[]): F {
  const sorted = [...runs].sort((a, b) => a.reqPerSec - b.reqPerSec)
  return sorted[Math.floor((sorted.length - 1) / 2)] as F
}
