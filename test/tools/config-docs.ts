import { format, resolveConfig } from 'prettier'
import { settingDocs, type SettingDoc } from '../../src/config.js'
import { REPO_ROOT } from '../helpers/repository/markdown.js'

/**
 * docs/configuration.md's settings table and .env.example, made from SETTINGS in
 * src/config.ts: `npm run docs:config` writes them (test/tools/write-config-docs.ts) and
 * test/docs/config-docs.test.ts fails when a committed one differs.
 */

export const CONFIGURATION_DOC = 'docs/configuration.md'
export const ENV_EXAMPLE = '.env.example'

const code = (literal: string) => `\`${literal}\``
const plain = (literal: string) => literal

function defaultCell(doc: SettingDoc): string {
  const shown = doc.default === '' ? 'empty' : code(doc.default)
  return doc.defaultNote === undefined ? shown : `${shown} ${doc.defaultNote(code)}`
}

function settingsTable(): string[] {
  const rows = settingDocs().map((doc) => [
    code(doc.variable),
    doc.flag === undefined ? '' : code(doc.flag),
    defaultCell(doc),
    doc.accepts(code),
    doc.meaning,
  ])
  return [['Variable', 'Flag', 'Default', 'Values', 'Meaning'], ['-', '-', '-', '-', '-'], ...rows].map(
    (cells) => `| ${cells.join(' | ')} |`,
  )
}

/**
 * The configuration page with the table under "Settings" made anew and the prose around it
 * kept, formatted as `npm run format` would.
 */
export async function configurationDoc(current: string): Promise<string> {
  const lines = current.split('\n')
  const heading = lines.indexOf('## Settings')
  const start = lines.findIndex((line, index) => index > heading && line.startsWith('|'))
  if (heading === -1 || start === -1) throw new Error(`${CONFIGURATION_DOC}: no table under "## Settings"`)
  let end = start
  while (lines[end]?.startsWith('|') === true) end += 1
  const text = [...lines.slice(0, start), ...settingsTable(), ...lines.slice(end)].join('\n')
  const filepath = `${REPO_ROOT}${CONFIGURATION_DOC}`
  return format(text, { ...(await resolveConfig(filepath)), filepath })
}

const ENV_EXAMPLE_HEADER =
  'folder-service settings (docs/configuration.md). Every one is optional; the values shown are ' +
  'the defaults. A bad value stops start-up with a one-line message naming the setting. The ' +
  "service reads the process environment only: export these (or use your process manager's env " +
  'file); this file is a reference, not loaded automatically. Written by npm run docs:config ' +
  'from SETTINGS in src/config.ts.'

const WIDTH = 92

/** `text` as `# ` comment lines of at most WIDTH characters (a longer word keeps its line). */
function comment(text: string): string[] {
  const lines: string[] = []
  let line = '#'
  for (const word of text.split(/\s+/)) {
    if (line !== '#' && line.length + 1 + word.length > WIDTH) {
      lines.push(line)
      line = '#'
    }
    line += ` ${word}`
  }
  return [...lines, line]
}

export function envExample(): string {
  const blocks = settingDocs().map((doc) => {
    const flag = doc.flag === undefined ? '' : ` Flag: ${doc.flag}`
    // The value line shows the default; how it is derived, or what empty means, is said here.
    const note =
      doc.defaultNote === undefined ? '' : ` Default: ${doc.default || 'empty'} ${doc.defaultNote(plain)}.`
    return [
      ...comment(doc.details),
      ...comment(`Values: ${doc.accepts(plain)}.${note}${flag}`),
      `${doc.variable}=${doc.default}`,
    ].join('\n')
  })
  return `${[comment(ENV_EXAMPLE_HEADER).join('\n'), ...blocks].join('\n\n')}\n`
}
