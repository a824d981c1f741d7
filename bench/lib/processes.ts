import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Child processes of the bench (the CLI's import, the service, the ceiling server). Every
 * one is tracked so that a failure or Ctrl-C still stops them all; each wait is bounded.
 */

export const HOST = '127.0.0.1'

export interface Child {
  name: string
  process: ChildProcess
  pid: number
  /** the last few kilobytes of stdout and stderr, for error messages */
  output(): string
  /** the last few kilobytes of stdout alone */
  stdout(): string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const running = new Set<Child>()
const OUTPUT_TAIL = 16_384

export function spawnChild(
  name: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  /** 'ignore': stdout goes to /dev/null (a service logging every request, which the bench would otherwise read) */
  stdout: 'pipe' | 'ignore' = 'pipe',
): Child {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', stdout, 'pipe'] })
  let tail = ''
  let stdoutTail = ''
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL)
  }
  child.stdout?.on('data', (chunk: Buffer) => {
    keep(chunk)
    stdoutTail = (stdoutTail + chunk.toString('utf8')).slice(-OUTPUT_TAIL)
  })
  child.stderr?.on('data', keep)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('error', (error) => {
      keep(Buffer.from(`${error.message}\n`))
      resolve({ code: null, signal: null })
    })
    child.on('close', (code, signal) => resolve({ code, signal }))
  })
  if (child.pid === undefined) throw new Error(`cannot start ${name}: ${command} ${args.join(' ')}`)
  const tracked: Child = {
    name,
    process: child,
    pid: child.pid,
    output: () => tail,
    stdout: () => stdoutTail,
    exited,
  }
  running.add(tracked)
  void exited.then(() => running.delete(tracked))
  return tracked
}

export function hasExited(child: Child): boolean {
  return child.process.exitCode !== null || child.process.signalCode !== null
}

/** The promise's value, or 'timeout' after ms; the timer never outlives the race. */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** SIGTERM (the service shuts down gracefully and writes its CPU profile), SIGKILL past graceMs. */
export async function stopChild(child: Child, graceMs = 15_000): Promise<void> {
  if (hasExited(child)) return
  child.process.kill('SIGTERM')
  if ((await withTimeout(child.exited, graceMs)) === 'timeout') {
    child.process.kill('SIGKILL')
    await child.exited
  }
}

export async function stopAllChildren(graceMs = 3_000): Promise<void> {
  await Promise.all([...running].map((child) => stopChild(child, graceMs)))
}

/** A port free on the loopback right now (the child binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, HOST, () => {
      const address = server.address()
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port)
        else reject(new Error('no port'))
      })
    })
  })
}

/** Waits until GET url answers 200, failing early if the child dies. */
export async function waitForHttp(child: Child, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (hasExited(child)) {
      throw new Error(`${child.name} exited before it was ready:\n${child.output().trim()}`)
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) })
      await response.arrayBuffer()
      if (response.status === 200) return
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  throw new Error(
    `${child.name} did not answer ${url} with 200 within ${timeoutMs} ms:\n${child.output().trim()}`,
  )
}

/** Runs a child to completion within timeoutMs; returns its exit code and wall-clock seconds. */
export async function runToEnd(
  child: Child,
  timeoutMs: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; seconds: number }> {
  const started = performance.now()
  const outcome = await withTimeout(child.exited, timeoutMs)
  if (outcome === 'timeout') {
    await stopChild(child, 2_000)
    throw new Error(`${child.name} did not finish within ${timeoutMs / 1000} s`)
  }
  return { ...outcome, seconds: (performance.now() - started) / 1000 }
}
