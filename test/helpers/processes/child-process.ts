import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import { SETTING_VARIABLES } from '../../../src/config.js'

/**
 * How every test starts a child process (the built service, the CLI, a helper script): one
 * environment, cleaned the same way, and one handle on the child's output and end.
 */

/**
 * The environment of a child: ours without the service's settings (a developer's shell may
 * hold any of them; a child sees only those a test gives it) and without the test
 * runner's (its loader and coverage flags in NODE_OPTIONS, its NODE_TEST_* context, which
 * would make a child node process act as a test file). `extra` is then applied: a value
 * sets a variable, undefined removes it.
 */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(env)) {
    if (name === 'NODE_OPTIONS' || name.startsWith('NODE_TEST') || SETTING_VARIABLES.includes(name)) {
      delete env[name]
    }
  }
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  return env
}

/** How long a child may take to finish (or to start listening) before a test calls it hung. */
export const CHILD_TIMEOUT_MS = 30_000

/** How long a child has to exit after SIGTERM before it gets SIGKILL. */
export const STOP_GRACE_MS = 15_000

export interface ExitStatus {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface ChildOptions {
  /** the whole environment of the child, usually from childEnv */
  env: NodeJS.ProcessEnv
  cwd: string
  /** stdin piped by default; stdout and stderr are always read */
  stdin?: 'pipe' | 'ignore'
}

export interface StartedChild {
  child: ChildProcess
  /** stdout so far */
  stdout(): string
  stderr(): string
  /** resolves once the process has exited (its output may still be arriving) */
  exited: Promise<ExitStatus>
  /** resolves once the process has exited and its output is complete */
  closed: Promise<ExitStatus>
  running(): boolean
  /** resolves with the first stdout line matching `pattern`; rejects if the process ends first */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>
  /** SIGTERM, then SIGKILL once `graceMs` have passed; resolves with how it ended */
  stop(graceMs?: number): Promise<ExitStatus>
  /**
   * SIGKILL if it is still running: the cleanup after a failed assertion or at the test
   * process's exit, where nothing can wait for a graceful stop.
   */
  kill(): void
}

/** Starts `node ...nodeArgs` and collects its output. */
export function startNode(nodeArgs: string[], options: ChildOptions): StartedChild {
  return startProcess(process.execPath, nodeArgs, options)
}

/** startNode for any program (`script`, say, to give a child a terminal). */
export function startProcess(file: string, args: string[], options: ChildOptions): StartedChild {
  const stdio: StdioOptions = [options.stdin ?? 'pipe', 'pipe', 'pipe']
  const child = spawn(file, args, { env: options.env, cwd: options.cwd, stdio })
  let out = ''
  let err = ''
  let ended = false
  const listeners = new Set<() => void>()
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk
    for (const listener of listeners) listener()
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  const exited = new Promise<ExitStatus>((resolve) => {
    child.on('exit', (code, signal) => {
      ended = true
      for (const listener of listeners) listener()
      resolve({ code, signal })
    })
  })
  const closed = new Promise<ExitStatus>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }))
  })
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    closed,
    running: () => !ended,
    waitForLine(pattern, timeoutMs = CHILD_TIMEOUT_MS) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = out.split('\n').find((l) => pattern.test(l))
          if (line !== undefined) done(() => resolve(line))
          else if (ended)
            done(() => reject(new Error(`process ended before ${pattern}\nstdout: ${out}\nstderr: ${err}`)))
        }
        const timer = setTimeout(
          () =>
            done(() => reject(new Error(`no ${pattern} in ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`))),
          timeoutMs,
        )
        const done = (settle: () => void) => {
          clearTimeout(timer)
          listeners.delete(check)
          settle()
        }
        listeners.add(check)
        check()
      })
    },
    async stop(graceMs = STOP_GRACE_MS) {
      if (ended) return exited
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      const status = await exited
      clearTimeout(timer)
      return status
    },
    kill() {
      if (!ended) child.kill('SIGKILL')
    },
  }
}

export interface FinishedChild extends ExitStatus {
  stdout: string
  stderr: string
  ms: number
  /** it was still running after the timeout and was stopped */
  timedOut: boolean
}

/** Runs `node ...nodeArgs` to the end; stops it (`stop()`) once `timeoutMs` have passed. */
export async function runNode(
  nodeArgs: string[],
  options: ChildOptions & { timeoutMs?: number },
): Promise<FinishedChild> {
  const started = Date.now()
  const run = startNode(nodeArgs, options)
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    void run.stop()
  }, options.timeoutMs ?? CHILD_TIMEOUT_MS)
  const status = await run.closed
  clearTimeout(timer)
  return { ...status, stdout: run.stdout(), stderr: run.stderr(), ms: Date.now() - started, timedOut }
}
