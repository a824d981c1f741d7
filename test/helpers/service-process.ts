import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'

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

/** The environment of a child: ours without the test runner's and without service settings. */
export function serviceEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(env)) {
    if (
      name.startsWith('NODE_TEST') ||
      name === 'NODE_OPTIONS' ||
      /^(DATABASE_URL|HOST|PORT|LOG_LEVEL|RATE_LIMIT_PER_MINUTE|AUTH_FAILURES_PER_MINUTE|METRICS_|CORS_ORIGINS|FOLDER_BROWSER|DB_|SQLITE_|SHUTDOWN_|KEEP_ALIVE|REQUEST_TIMEOUT|HEADERS_TIMEOUT)/.test(
        name,
      )
    ) {
      delete env[name]
    }
  }
  return { ...env, RATE_LIMIT_PER_MINUTE: '0', AUTH_FAILURES_PER_MINUTE: '0', ...extra }
}

export interface ExitStatus {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface CliRun extends ExitStatus {
  stdout: string
  stderr: string
  ms: number
}

/** Runs a CLI command to the end (killed after timeoutMs). */
export function runCommand(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<CliRun> {
  ensureBuilt()
  const started = Date.now()
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_MAIN, ...args], { env: serviceEnv(env), cwd: tmpdir() })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started })
    })
  })
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
  const child = spawn(
    process.execPath,
    [CLI_MAIN, 'serve', '--db', db, '--host', '127.0.0.1', '--port', '0'],
    { env: serviceEnv({ LOG_LEVEL: 'info', ...env }), cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  let ended = false
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d))
  const exited = new Promise<ExitStatus>((resolve) => {
    child.on('exit', (code, signal) => {
      ended = true
      resolve({ code, signal })
    })
  })
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(poll)
      child.kill('SIGKILL')
      reject(new Error(`serve did not start in ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`))
    }, timeoutMs)
    const poll = setInterval(() => {
      const m = LISTENING.exec(out)
      if (m !== null) {
        clearInterval(poll)
        clearTimeout(timer)
        resolve(Number(m[1]))
      } else if (ended) {
        clearInterval(poll)
        clearTimeout(timer)
        reject(new Error(`serve exited before listening\nstdout: ${out}\nstderr: ${err}`))
      }
    }, 20)
  })
  const onExit = () => {
    if (!ended) child.kill('SIGKILL')
  }
  process.once('exit', onExit)
  return {
    child,
    port,
    base: `http://127.0.0.1:${port}`,
    lines: () => out.split('\n').filter((l) => l.trim() !== ''),
    stderr: () => err,
    exited,
    running: () => !ended,
    async stop(graceMs = 15_000) {
      if (ended) return exited
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
