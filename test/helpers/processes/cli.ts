import { copyFileSync, cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build, ROOT } from './build.js'
import {
  CHILD_TIMEOUT_MS,
  childEnv,
  runNode,
  startNode,
  startProcess,
  STOP_GRACE_MS,
  type ExitStatus,
  type StartedChild,
} from './child-process.js'

/**
 * The one way tests run the built command line (`node dist/cli/main.js`, what `npx
 * folder-service` runs) as a child process: a command to its end (`runCli`), or a
 * long-running one such as `serve` (`startCli`, `startService`). A crash, an exit code or a
 * signal is then visible from outside, as an operator would see it. Every child gets the
 * same environment (childEnv), a scratch working directory, CHILD_TIMEOUT_MS to finish and,
 * when stopped, SIGTERM then SIGKILL after STOP_GRACE_MS.
 */

/** FOLDER_SERVICE_CLI runs the suites against another build (e.g. a deliberately broken copy). */
const OTHER_CLI = process.env.FOLDER_SERVICE_CLI

/** The build under test: what `npm run build` writes. */
const BUILT_CLI_MAIN = join(ROOT, 'dist', 'cli', 'main.js')

/** Builds dist/ when it is missing (`npm test` builds it when it is older than src/ as well). */
export function ensureBuilt(): void {
  if (OTHER_CLI === undefined && !existsSync(BUILT_CLI_MAIN)) build()
}

let snapshot: string | undefined

/**
 * The entry point the tests run: a private copy of dist/ (with web/ and package.json) taken
 * once per test file, beside a link to the repository's node_modules. A rebuild of dist/ while the
 * suite runs (another `npm test`, `tsc --watch`) rewrites files in place, and a process
 * that starts meanwhile would load half-written modules; the copy cannot change under us.
 */
export function cliMain(): string {
  if (OTHER_CLI !== undefined) return OTHER_CLI
  if (snapshot !== undefined && existsSync(snapshot)) return snapshot
  ensureBuilt()
  const root = mkdtempSync(join(tmpdir(), 'folder-service-cli-dist-'))
  process.once('exit', () => rmSync(root, { recursive: true, force: true }))
  cpSync(join(ROOT, 'dist'), join(root, 'dist'), { recursive: true })
  // The folder browser's static files ship beside dist/ (package.json "files").
  cpSync(join(ROOT, 'web'), join(root, 'web'), { recursive: true })
  copyFileSync(join(ROOT, 'package.json'), join(root, 'package.json'))
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir')
  snapshot = join(root, 'dist', 'cli', 'main.js')
  return snapshot
}

export interface CliOptions {
  /** added to (or, when undefined, removed from) the inherited environment */
  env?: Record<string, string | undefined>
  /** working directory; a throwaway one by default, so the default database lands nowhere that matters */
  cwd?: string
  /** runCli: how long the command may take; CHILD_TIMEOUT_MS by default */
  timeoutMs?: number
  /** startCli: stdin piped (the default) or closed */
  stdin?: 'pipe' | 'ignore'
}

export interface CliResult extends ExitStatus {
  stdout: string
  stderr: string
  ms: number
}

let scratchCwd: string | undefined

function defaultCwd(): string {
  if (scratchCwd === undefined || !existsSync(scratchCwd)) {
    scratchCwd = mkdtempSync(join(tmpdir(), 'folder-service-cli-cwd-'))
    const dir = scratchCwd
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  }
  return scratchCwd
}

/** Runs `folder-service ...args` to completion. Never rejects for a non-zero exit; does for a hang or a signal. */
export async function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const timeoutMs = options.timeoutMs ?? CHILD_TIMEOUT_MS
  const run = await runNode([cliMain(), ...args], {
    env: childEnv(options.env),
    cwd: options.cwd ?? defaultCwd(),
    timeoutMs,
  })
  if (run.timedOut) {
    throw new Error(`folder-service ${args.join(' ')} did not finish in ${timeoutMs} ms\n${run.stderr}`)
  }
  if (run.code === null) {
    throw new Error(`folder-service ${args.join(' ')} was killed by ${run.signal}\n${run.stderr}`)
  }
  return { code: run.code, signal: run.signal, stdout: run.stdout, stderr: run.stderr, ms: run.ms }
}

/** Runs several independent commands, at most `limit` at a time, results in input order. */
export async function runAll(
  commands: string[][],
  options: CliOptions = {},
  limit = 2,
): Promise<CliResult[]> {
  const results: CliResult[] = new Array<CliResult>(commands.length)
  let next = 0
  const worker = async () => {
    while (next < commands.length) {
      const index = next++
      results[index] = await runCli(commands[index] as string[], options)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, commands.length) }, worker))
  return results
}

/** A running `folder-service serve` (or any long-running command), its output so far, and how it ended. */
export type ServeProcess = StartedChild

export function startCli(args: string[], options: CliOptions = {}): ServeProcess {
  return startNode([cliMain(), ...args], {
    env: childEnv(options.env),
    cwd: options.cwd ?? defaultCwd(),
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
  })
}

/** One word for `sh -c`, whatever it holds. */
const shellWord = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`

/**
 * startCli with the command's stdout and stderr on a pseudo-terminal, as at a person's
 * terminal: util-linux `script` runs it and copies what the terminal shows to its own stdout.
 * SIGTERM to `script` ends the command too.
 */
export function startCliOnTerminal(args: string[], options: CliOptions = {}): ServeProcess {
  const command = [process.execPath, cliMain(), ...args].map(shellWord).join(' ')
  return startProcess('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
    env: childEnv(options.env),
    cwd: options.cwd ?? defaultCwd(),
    stdin: 'pipe',
  })
}

/**
 * What a started service changes from the service's defaults: no rate limits, so load and
 * fault suites measure the service rather than its throttling, and info logs to read.
 */
const SERVICE_ENV = { RATE_LIMIT_PER_MINUTE: '0', AUTH_FAILURES_PER_MINUTE: '0', LOG_LEVEL: 'info' }

export interface Service {
  child: ServeProcess['child']
  port: number
  base: string
  /** every stdout line so far (JSON log lines) */
  lines(): string[]
  stderr(): string
  exited: Promise<ExitStatus>
  running(): boolean
  /** SIGTERM, then SIGKILL after `graceMs` (STOP_GRACE_MS by default); resolves with how it ended */
  stop(graceMs?: number): Promise<ExitStatus>
}

const LISTENING = /listening at http:\/\/127\.0\.0\.1:(\d+)/i

/** Starts `serve --db <db> --port 0` and resolves once it logged its address. */
export async function startService(
  db: string,
  env: Record<string, string> = {},
  timeoutMs = CHILD_TIMEOUT_MS,
): Promise<Service> {
  const started = startCli(['serve', '--db', db, '--host', '127.0.0.1', '--port', '0'], {
    env: { ...SERVICE_ENV, ...env },
    stdin: 'ignore',
  })
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
    child: started.child,
    port,
    base: `http://127.0.0.1:${port}`,
    lines: () =>
      started
        .stdout()
        .split('\n')
        .filter((l) => l.trim() !== ''),
    stderr: () => started.stderr(),
    exited: started.exited,
    running: () => started.running(),
    async stop(graceMs = STOP_GRACE_MS) {
      const status = await started.stop(graceMs)
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

/** Resolves with `promise`, or rejects once `ms` have passed. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
