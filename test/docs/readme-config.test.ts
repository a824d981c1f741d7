import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { configVariables } from '../helpers/repository/config-variables.js'
import { codeSpan, markdownSection, readRepoFile, tableRows } from '../helpers/repository/markdown.js'

/**
 * docs/configuration.md "Settings" claims to be complete: its table must name exactly the
 * variables src/config.ts reads, each with its real default; `.env.example` must list the
 * same ones.
 */

const sorted = (names: Iterable<string>) => [...names].sort()

function readmeTable(): { variable: string; defaultCell: string }[] {
  return tableRows(markdownSection(readRepoFile('docs/configuration.md'), 'Settings')).map((cells) => {
    const variable = codeSpan(cells[0] ?? '')
    assert.ok(variable !== undefined, `a row without a variable: ${cells.join(' | ')}`)
    return { variable, defaultCell: cells[2] ?? '' }
  })
}

describe('the configuration table (docs/configuration.md)', () => {
  it('names exactly the variables src/config.ts reads', () => {
    const documented = readmeTable().map((row) => row.variable)
    assert.equal(
      new Set(documented).size,
      documented.length,
      `a variable listed twice: ${documented.join(', ')}`,
    )
    assert.deepEqual(sorted(documented), sorted(configVariables()))
  })

  it("gives each variable's real default: setting it to that value changes nothing", () => {
    const defaults = loadConfig({})
    for (const { variable, defaultCell } of readmeTable()) {
      // `value` is the default; "empty" means unset.
      const value = defaultCell.startsWith('empty') ? '' : codeSpan(defaultCell)
      assert.ok(value !== undefined, `${variable}: default '${defaultCell}' is neither \`value\` nor empty`)
      assert.deepEqual(loadConfig({ [variable]: value }), defaults, `${variable}=${value} is not the default`)
    }
  })

  it('.env.example lists the same variables', () => {
    const listed = [...readRepoFile('.env.example').matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map(
      (match) => match[1],
    )
    assert.deepEqual(sorted(listed as string[]), sorted(configVariables()))
  })
})
