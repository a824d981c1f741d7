import { CLI } from '../../harness/build.js'
import { HOST, runToEnd, spawnChild, waitForHttp, type Child } from './processes.js'

/**
 * The service under test as users run it: its data loaded with the built CLI's `import`,
 * then `serve` on the loopback, rate limits off (the load comes from one address and a few
 * sessions) and logging at warn, so that its output holds only problems.
 */

export const SERVICE_ENV = { RATE_LIMIT_PER_MINUTE: '0', AUTH_FAILURES_PER_MINUTE: '0', LOG_LEVEL: 'warn' }

export interface ImportFigures {
  folders: number
  wallSeconds: number
  /** seconds the CLI itself reports (read, validate, insert; no process start-up) */
  cliSeconds: number | null
  foldersPerSecond: number
  cliFoldersPerSecond: number | null
}

export interface ImportSettings {
  root: string
  /** the import file and how many folders it holds */
  file: string
  folders: number
  url: string
  timeoutSeconds: number
  log: (line: string) => void
  /** the CLI to run (default: dist/ of root) */
  cli?: string
  /** LOG_LEVEL (default: warn, the bench's quiet setting); at info its stdout goes to /dev/null */
  logLevel?: string
}

export async function importData(settings: ImportSettings): Promise<ImportFigures> {
  const { folders } = settings
  const child = spawnChild(
    'folder-service import',
    process.execPath,
    [settings.cli ?? CLI, 'import', settings.file, '--db', settings.url, '--json'],
    { ...process.env, ...SERVICE_ENV },
    settings.root,
  )
  const run = await runToEnd(child, settings.timeoutSeconds * 1000)
  if (run.code !== 0)
    throw new Error(`import failed (exit ${run.code ?? run.signal}):\n${child.output().trim()}`)
  let cliSeconds: number | null = null
  try {
    const printed = JSON.parse(child.stdout()) as { folders?: number; seconds?: number }
    if (printed.folders !== folders) {
      throw new Error(`import reported ${printed.folders} folders, the file has ${folders}`)
    }
    cliSeconds = typeof printed.seconds === 'number' ? printed.seconds : null
  } catch (error) {
    if (error instanceof SyntaxError)
      settings.log(`  (import printed no JSON: ${child.stdout().trim().slice(0, 200)})`)
    else throw error
  }
  return {
    folders,
    wallSeconds: run.seconds,
    cliSeconds,
    foldersPerSecond: folders / run.seconds,
    cliFoldersPerSecond: cliSeconds === null ? null : folders / cliSeconds,
  }
}

export interface ServiceSettings {
  root: string
  url: string
  port: number
  /** default: this process's environment with SERVICE_ENV */
  env?: NodeJS.ProcessEnv
  /** node's own flags, before the CLI (e.g. --cpu-prof) */
  nodeArgs?: string[]
  /** the CLI to run (default: dist/ of root) */
  cli?: string
  /** LOG_LEVEL (default: warn, the bench's quiet setting); at info its stdout goes to /dev/null */
  logLevel?: string
}

/** `serve` on HOST:port, once it answers /healthz. */
export async function startService(settings: ServiceSettings): Promise<Child> {
  const { port } = settings
  const child = spawnChild(
    'folder-service serve',
    process.execPath,
    [
      ...(settings.nodeArgs ?? []),
      settings.cli ?? CLI,
      'serve',
      '--db',
      settings.url,
      '--host',
      HOST,
      '--port',
      String(port),
      '--log-level',
      settings.logLevel ?? SERVICE_ENV.LOG_LEVEL,
    ],
    settings.env ?? { ...process.env, ...SERVICE_ENV },
    settings.root,
    settings.logLevel === undefined || settings.logLevel === SERVICE_ENV.LOG_LEVEL ? 'pipe' : 'ignore',
  )
  await waitForHttp(child, `http://${HOST}:${port}/healthz`, 30_000)
  return child
}
