import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { TEST_FOLDERS } from './folders.js'
import { build, buildState, ROOT } from './helpers/processes/build.js'

/**
 * `npm test [-- <file or folder>...]`: the given test files (a folder: every *.test.ts
 * under it), or every one outside test/deep when none is given, after building dist/ when
 * it is missing or older than src/ (the command-line and process suites run the build).
 * Files of the folders that share nothing (test/folders.ts) run two at a time; every other
 * file runs alone, because those start servers and processes, wait on real time, or load
 * the shared PostgreSQL server (CONTRIBUTING.md "How long the suite takes"). Arguments that
 * start with `-` go to `node --test` (e.g. `--test-name-pattern=...`).
 */

const DEEP = join(ROOT, 'test', 'deep')

function testFiles(path: string): string[] {
  if (!existsSync(path)) {
    console.error(`no such test file or folder: ${path}`)
    process.exit(1)
  }
  if (!statSync(path).isDirectory()) return [path]
  return readdirSync(path, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => join(path, name))
}

const args = process.argv.slice(2)
const flags = args.filter((arg) => arg.startsWith('-'))
// npm runs the script at the package root; paths are meant from where `npm test` was typed.
const here = process.env.INIT_CWD ?? process.cwd()
const paths = args.filter((arg) => !arg.startsWith('-')).map((arg) => resolve(here, arg))
const files =
  paths.length > 0
    ? paths.flatMap((path) => testFiles(path))
    : testFiles(join(ROOT, 'test')).filter((file) => !file.startsWith(DEEP + '/'))
if (files.length === 0) {
  console.error(`no *.test.ts file in ${paths.join(' ')}`)
  process.exit(1)
}

const state = buildState()
if (state !== 'fresh') {
  console.error(`dist/ is ${state}: npm run build`)
  build()
}

/** Whether `file` is in a folder whose suites can run beside each other. */
function sharesNothing(file: string): boolean {
  const folder = relative(join(ROOT, 'test'), file).split('/')[0] ?? ''
  return TEST_FOLDERS[folder]?.shareNothing === true
}

/** Runs `group` with node --test, `concurrency` files at a time; true when every test passed. */
function runGroup(group: string[], concurrency: number): boolean {
  if (group.length === 0) return true
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...flags, ...group],
    { cwd: ROOT, stdio: 'inherit' },
  )
  return run.status === 0
}

const chosen = [...new Set(files.map((file) => relative(ROOT, file)))].sort()
const side = chosen.filter((file) => sharesNothing(join(ROOT, file)))
const alone = chosen.filter((file) => !sharesNothing(join(ROOT, file)))
// Both groups run whatever the first gave, so one failure does not hide another.
const sideOk = runGroup(side, 2)
const aloneOk = runGroup(alone, 1)
process.exit(sideOk && aloneOk ? 0 : 1)
