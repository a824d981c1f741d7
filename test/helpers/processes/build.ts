import { spawnSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { newestSource } from '../../../harness/build.js'

/**
 * dist/, which the tests that spawn the command line run: whether `npm run build` must run
 * again, and running it.
 */

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

/** An output of each of the build's two compilations (the service, the folder browser). */
const OUTPUTS = ['dist/cli/main.js', 'dist/browser/main.js'].map((path) => join(ROOT, path))

/** The build's settings; src/browser/tsconfig.json lies under src/ but is not TypeScript. */
const SETTINGS = ['tsconfig.json', 'tsconfig.build.json', 'src/browser/tsconfig.json'].map((path) =>
  join(ROOT, path),
)

export type BuildState = 'missing' | 'stale' | 'fresh'

/** tsc rewrites every output, so the oldest output dates the last build. */
export function buildState(): BuildState {
  if (!OUTPUTS.every((path) => existsSync(path))) return 'missing'
  const built = Math.min(...OUTPUTS.map((path) => statSync(path).mtimeMs))
  const newest = Math.max(newestSource(ROOT), ...SETTINGS.map((path) => statSync(path).mtimeMs))
  return built >= newest ? 'fresh' : 'stale'
}

/** `npm run build`, its output on stderr (a test file's stdout belongs to the test runner). */
export function build(): void {
  const run = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 2, 2], timeout: 300_000 })
  if (run.status !== 0) {
    throw new Error(`npm run build failed: ${run.error?.message ?? `exit ${String(run.status)}`}`)
  }
}
