import { execFileSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'
import { childEnv, runNode, startNode, type ExitStatus } from './child-process.js'

/**
 * The built service as a child process (`node dist/cli/main.js ...`, what `npx
 * folder-service` runs), for the fault and soak suites: a crash, an exit code or a signal
 * is then visible from outside, as an operator would see it.
 *
 * dist/ is what `npm test` builds first (the pretest script). When it is missing, it is
 * built here; a stale dist/ is not rebuilt (others may be mid-edit in src/): run
 * `npm run build` before running these files alone.
 */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** FOLDER_SERVICE_CLI runs the suites against another build (e.g. a deliberately broken copy). */
export const CLI_MAIN =
  process.env.FOLDER_SERVICE_CLI ?? fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url))

export function ensureBuilt(): void {
  if (existsSync(CLI_MAIN)) return
  // The same two compilations as `npm run build`: the service, then the folder browser.
  for (const project of ['tsconfig.build.json', 'src/browser/tsconfig.json']) {
    execFileSync('npx', ['tsc', '-p', project], { cwd: ROOT, stdio: 'inherit', timeout: 300_000 })
  }
}

/**
 * What the service's children change from the service's defaults: no rate limits, so load
 * and fault suites measure the service rather than its throttling.
 */
const UNLIMITED = { RATE_LIMIT_PER_MINUTE: '0', AUTH_FAILURES_PER_MINUTE: '0' }

export interface CliRun extends ExitStatus {
  stdout: string
  stderr: string
  ms: number
}

/** Runs a CLI command to the end (killed after timeoutMs). */
export async function runCommand(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<CliRun> {
  ensureBuilt()
  const { code, signal, stdout, stderr, ms } = await runNode([CLI_MAIN, ...args], {
    env: childEnv({ ...UNLIMITED, ...env }),
    cwd: tmpdir(),
    timeoutMs,
    killSignal: 'SIGKILL',
  })
  return { code, signal, stdout, stderr, ms }
}

export interface Service {
  child: ChildProcess
  port: number
  base: string
  /** every stdout line so far (JSON log lines) */
  lines(): string[]
  stderr(): string
  exited: Promise<ExitStatus>
  running(): boolean
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it ended */
  stop(graceMs?: number): Promise<ExitStatus>
}

const LISTENING = /listening at http:\/\/127\.0\.0\.1:(\d+)/i

/** Starts `serve --db <db> --port 0` and resolves once it logged its address. */
export async function startService(
  db: string,
  env: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<Service> {
  ensureBuilt()
  const started = startNode([CLI_MAIN, 'serve', '--db', db, '--host', '127.0.0.1', '--port', '0'], {
    env: childEnv({ ...UNLIMITED, LOG_LEVEL: 'info', ...env }),
    cwd: tmpdir(),
    stdin: 'ignore',
  })
  const { child, exited } = started
  let line: string
  try {
    line = await started.waitForLine(LISTENING, timeoutMs)
  } catch (error) {
    started.kill()
    const how = started.running() ? `did not start in ${timeoutMs} ms` : 'exited before listening'
    throw new Error(`serve ${how}\nstdout: ${started.stdout()}\nstderr: ${started.stderr()}`, {
      cause: error,
    })
  }
  const port = Number(LISTENING.exec(line)?.[1])
  const onExit = () => started.kill()
  process.once('exit', onExit)
  return {
    child,
    port,
    base: `http://127.0.0.1:${port}`,
    lines: () =>
      started
        .stdout()
        .split('\n')
        .filter((l) => l.trim() !== ''),
    stderr: () => started.stderr(),
    exited,
    running: () => started.running(),
    async stop(graceMs = 15_000) {
      if (!started.running()) return exited
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      const status = await exited
      clearTimeout(timer)
      process.removeListener('exit', onExit)
      return status
    },
  }
}

/** The JSON log lines of a service, parsed (lines that are not JSON are skipped). */
export function logRecords(service: Service): Record<string, unknown>[] {
  const records: Record<string, unknown>[] = []
  for (const line of service.lines()) {
    try {
      records.push(JSON.parse(line) as Record<string, unknown>)
    } catch {
      // not a log line
    }
  }
  return records
}
