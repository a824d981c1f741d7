import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { SUPPORT_FOLDERS, TEST_FOLDERS } from '../folders.js'
import { REPO_ROOT } from '../helpers/repository/markdown.js'

/**
 * test/ laid out as CONTRIBUTING.md "Test folders" says: every folder known to the runner,
 * contract suites on every backend, helpers that say what they are for, one app builder.
 */

const TEST = join(REPO_ROOT, 'test')

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(dir, name))
}

/** The first line after the imports (multi-line imports included) that is not blank. */
function firstLineAfterImports(text: string): string {
  let inImport = false
  for (const line of text.split('\n')) {
    if (inImport) {
      if (/^\} from /.test(line)) inImport = false
    } else if (/^import .*\{$/.test(line)) inImport = true
    else if (!/^import /.test(line) && line.trim() !== '') return line
  }
  return ''
}

describe('test/ layout', () => {
  it('has only folders test/folders.ts knows, and CONTRIBUTING.md gives the rule and how each runs', () => {
    const folders = readdirSync(TEST, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .filter((name) => !SUPPORT_FOLDERS.includes(name))
    assert.deepEqual(folders.sort(), Object.keys(TEST_FOLDERS).sort())
    const contributing = readFileSync(join(REPO_ROOT, 'CONTRIBUTING.md'), 'utf8')
    for (const folder of folders) {
      const runs = TEST_FOLDERS[folder]?.shareNothing === true ? 'two files at a time' : 'alone'
      assert.match(contributing, new RegExp(`\\| \`test/${folder}/\` +\\|[^\\n]*\\| ${runs} +\\|`), folder)
    }
  })

  it('runs every contract suite on every backend (allBackends or listingBackends)', () => {
    for (const file of tsFiles(join(TEST, 'contract'))) {
      assert.match(readFileSync(file, 'utf8'), /\b(allBackends|listingBackends)\(\)/, file)
    }
  })

  it('opens every helper with a comment saying what it is for', () => {
    for (const file of tsFiles(join(TEST, 'helpers'))) {
      assert.match(firstLineAfterImports(readFileSync(file, 'utf8')), /^(\/\*\*|\/\/)/, file)
    }
  })

  it('builds every test app through test/helpers/apps/test-app.ts', () => {
    const builders = tsFiles(TEST)
      .filter((file) => /\bbuildApp\(/.test(readFileSync(file, 'utf8')))
      .map((file) => file.slice(TEST.length + 1))
    // test/tools/write-openapi.ts builds the app once to print its document; it tests nothing.
    assert.deepEqual(builders.sort(), ['helpers/apps/test-app.ts', 'tools/write-openapi.ts'])
  })
})
