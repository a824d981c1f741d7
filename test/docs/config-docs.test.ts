import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Command } from 'commander'
import { registerServeCommand } from '../../src/cli/commands/serve.js'
import { SETTING_VARIABLES, loadConfig, loadWorkers, settingDocs, type Env } from '../../src/config.js'
import { configVariables } from '../helpers/repository/config-variables.js'
import { readRepoFile } from '../helpers/repository/markdown.js'
import { CONFIGURATION_DOC, ENV_EXAMPLE, configurationDoc, envExample } from '../tools/config-docs.js'

/**
 * SETTINGS in src/config.ts is the one list of settings: the loader reads exactly its
 * variables, `serve` takes exactly its flags, its documented defaults are the real ones, and
 * docs/configuration.md's table and .env.example are what `npm run docs:config` makes of it.
 */

const sorted = (names: Iterable<string>) => [...names].sort()

describe('the table of settings (SETTINGS in src/config.ts)', () => {
  it(`${CONFIGURATION_DOC} and ${ENV_EXAMPLE} are what \`npm run docs:config\` writes from it`, async () => {
    const doc = readRepoFile(CONFIGURATION_DOC)
    assert.equal(doc, await configurationDoc(doc), `${CONFIGURATION_DOC} is stale: npm run docs:config`)
    assert.equal(readRepoFile(ENV_EXAMPLE), envExample(), `${ENV_EXAMPLE} is stale: npm run docs:config`)
  })

  it('holds exactly the variables the loader reads', () => {
    assert.equal(new Set(SETTING_VARIABLES).size, SETTING_VARIABLES.length, SETTING_VARIABLES.join(', '))
    assert.deepEqual(sorted(configVariables()), sorted(SETTING_VARIABLES))
  })

  it("gives each variable's real default: setting it to the documented value changes nothing", () => {
    const read = (env: Env) => ({ config: loadConfig(env), workers: loadWorkers(env) })
    const defaults = read({})
    for (const doc of settingDocs()) {
      assert.deepEqual(read({ [doc.variable]: doc.default }), defaults, `${doc.variable}=${doc.default}`)
    }
  })

  it('holds exactly the flags `serve` takes', () => {
    const program = new Command()
    registerServeCommand(program)
    const serve = program.commands.find((command) => command.name() === 'serve')
    assert.ok(serve !== undefined)
    const flags = settingDocs().flatMap((doc) => (doc.flag === undefined ? [] : [doc.flag]))
    assert.deepEqual(sorted(serve.options.map((option) => option.long ?? option.flags)), sorted(flags))
  })
})
