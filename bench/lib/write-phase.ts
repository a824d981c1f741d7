import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawnChild, stopChild, type Child } from './processes.js'
import type { ListedFolder } from './dataset.js'
import type { WriterPlan, WriterReport, WriterUser } from './writer.js'

export type { WriterReport } from './writer.js'

/**
 * Starts bench/lib/writer.ts as a child process (its own event loop and database connection,
 * as another service's would be) and collects its report when stopped.
 */
export function startWriter(
  ctx: { root: string; tmp: string },
  plan: WriterPlan,
): { child: Child; stop(): Promise<WriterReport> } {
  const file = join(ctx.tmp, `writer-plan-${Date.now()}.json`)
  writeFileSync(file, JSON.stringify(plan))
  const child = spawnChild(
    'writer',
    process.execPath,
    ['--import', 'tsx', 'bench/lib/writer.ts', file],
    process.env,
    ctx.root,
  )
  return {
    child,
    async stop() {
      await stopChild(child, 30_000)
      const line = child
        .stdout()
        .split('\n')
        .find((l) => l.startsWith('WRITER_JSON '))
      if (line === undefined) throw new Error(`the writer printed no report:\n${child.output().trim()}`)
      return JSON.parse(line.slice('WRITER_JSON '.length)) as WriterReport
    },
  }
}

/** The writer's users: each writes among the children of its listed folder. */
export function writerUsers(folders: (ListedFolder & { folderId: string })[]): WriterUser[] {
  return folders.map((f) => ({
    ownerId: f.ownerId,
    sessionId: f.sessionId,
    folderId: f.folderId,
    childIds: f.sortedIds,
  }))
}
