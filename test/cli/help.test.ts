import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { assertOk, describeRun } from '../helpers/processes/cli-asserts.js'
import { ROOT } from '../helpers/processes/build.js'
import { runAll, runCli } from '../helpers/processes/cli.js'

/** README "Command line": every command accepts --db and --help; commands that print records accept --json. */

const COMMANDS: { path: string[]; json: boolean }[] = [
  { path: ['serve'], json: false },
  { path: ['migrate'], json: false },
  { path: ['import'], json: true },
  { path: ['seed'], json: true },
  { path: ['user', 'add'], json: true },
  { path: ['user', 'freeze'], json: true },
  { path: ['user', 'unfreeze'], json: true },
  { path: ['user', 'list'], json: true },
  { path: ['session', 'add'], json: true },
  { path: ['session', 'revoke'], json: false },
  { path: ['folder', 'add'], json: true },
  { path: ['folder', 'delete'], json: true },
  { path: ['folder', 'rename'], json: true },
  { path: ['folder', 'move'], json: true },
  { path: ['folder', 'list'], json: true },
  { path: ['folder', 'tree'], json: true },
]

describe('folder-service --help', () => {
  it('exits 0 for every command, mentions --db, and --json where records are printed', async () => {
    const commands = COMMANDS.map(({ path }) => [...path, '--help'])
    const results = await runAll(commands, {}, 3)
    results.forEach((result, i) => {
      const args = commands[i] as string[]
      assertOk(result, args)
      assert.match(result.stdout, /--db\b/, describeRun(args, result))
      assert.match(result.stdout, new RegExp(`Usage: folder-service ${COMMANDS[i]?.path.join(' ')}\\b`))
      if (COMMANDS[i]?.json) assert.match(result.stdout, /--json\b/, describeRun(args, result))
    })
  })

  it('the top-level help lists every command', async () => {
    const result = await runCli(['--help'])
    assertOk(result, ['--help'])
    for (const command of ['serve', 'migrate', 'import', 'seed', 'user', 'session', 'folder']) {
      assert.match(result.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), command)
    }
  })
})

describe('folder-service with a typo', () => {
  it('says what it did not know and the command meant, on one line, exit 1', async () => {
    const result = await runCli(['foldr'])
    assert.equal(result.code, 1)
    assert.equal(result.stdout, '')
    assert.equal(result.stderr, "folder-service: unknown command 'foldr' (did you mean folder?)\n")
  })
})

describe('folder-service --version', () => {
  it("prints the package's version and nothing else", async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag])
      assertOk(result, [flag])
      assert.equal(result.stdout, `${version}\n`)
    }
  })
})
