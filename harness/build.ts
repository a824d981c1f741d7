import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The bench measures the built CLI (`node dist/cli/main.js`), as users run it. dist/ is
 * rebuilt when it is missing or older than a file of src/. Others may be editing src/ at
 * the same moment: if the build fails but a dist/ exists, the bench goes on with it and says so.
 */

export const CLI = 'dist/cli/main.js'

/** The newest modification time of a TypeScript file under src/. */
export function newestSource(root: string): number {
  let newest = 0
  for (const entry of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith('.ts')) {
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs)
    }
  }
  return newest
}

export interface BuildOutcome {
  action: 'up to date' | 'rebuilt' | 'skipped (--no-build)' | 'build failed; using the existing dist/'
  warning?: string
}

export function ensureBuilt(root: string, allowBuild: boolean): BuildOutcome {
  const cli = join(root, CLI)
  if (!allowBuild) {
    if (!existsSync(cli)) throw new Error(`${CLI} is missing and --no-build was given`)
    return { action: 'skipped (--no-build)' }
  }
  if (existsSync(cli) && statSync(cli).mtimeMs >= newestSource(root)) return { action: 'up to date' }
  const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 300_000,
  })
  if (build.status === 0) return { action: 'rebuilt' }
  const output = `${build.stdout}${build.stderr}`.trim().split('\n').slice(0, 10).join('\n')
  if (!existsSync(cli))
    throw new Error(`npx tsc -p tsconfig.build.json failed and there is no dist/:\n${output}`)
  return { action: 'build failed; using the existing dist/', warning: output }
}

/** The commit measured and whether src/ differs from it. */
export function gitState(root: string): { commit: string | null; srcDirty: boolean | null } {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
    const status = execFileSync('git', ['status', '--porcelain', '--', 'src'], {
      cwd: root,
      encoding: 'utf8',
    })
    return { commit, srcDirty: status.trim() !== '' }
  } catch {
    return { commit: null, srcDirty: null }
  }
}
