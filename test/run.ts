import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { build, buildState, ROOT } from './helpers/processes/build.js'

/**
 * `npm test [-- <file or folder>...]`: the given test files (a folder: every *.test.ts
 * under it), or every one outside test/deep when none is given, one file at a time,
 * after building dist/ when it is missing or older than src/ (the command-line and
 * process suites run the build). Arguments that start with `-` go to `node --test`
 * (e.g. `--test-name-pattern=...`).
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

const run = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=1',
    ...flags,
    ...[...new Set(files.map((file) => relative(ROOT, file)))].sort(),
  ],
  { cwd: ROOT, stdio: 'inherit' },
)
process.exit(run.status ?? 1)
