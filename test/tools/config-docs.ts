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

/** The service's own settings (with their flags), or OpenTelemetry's variables (none has a flag). */
function settingsTable(opentelemetry: boolean): string[] {
  const docs = settingDocs().filter((doc) => doc.opentelemetry === opentelemetry)
  const rows = docs.map((doc) => [
    code(doc.variable),
    ...(opentelemetry ? [] : [doc.flag === undefined ? '' : code(doc.flag)]),
    defaultCell(doc),
    doc.accepts(code),
    doc.meaning,
  ])
  const heading = ['Variable', ...(opentelemetry ? [] : ['Flag']), 'Default', 'Values', 'Meaning']
  return [heading, heading.map(() => '-'), ...rows].map((cells) => `| ${cells.join(' | ')} |`)
}

/** The tables under `## Settings` and `## OpenTelemetry variables`, by heading. */
const TABLES: [heading: string, opentelemetry: boolean][] = [
  ['## Settings', false],
  ['## OpenTelemetry variables', true],
]

/** `lines` with the first table under `heading` replaced by `table`. */
function replaceTable(lines: string[], heading: string, table: string[]): string[] {
  const at = lines.indexOf(heading)
  const start = lines.findIndex((line, index) => index > at && line.startsWith('|'))
  if (at === -1 || start === -1) throw new Error(`${CONFIGURATION_DOC}: no table under "${heading}"`)
  let end = start
  while (lines[end]?.startsWith('|') === true) end += 1
  return [...lines.slice(0, start), ...table, ...lines.slice(end)]
}

/**
 * The configuration page with its tables made anew and the prose around them kept,
 * formatted as `npm run format` would.
 */
export async function configurationDoc(current: string): Promise<string> {
  let lines = current.split('\n')
  for (const [heading, opentelemetry] of TABLES)
    lines = replaceTable(lines, heading, settingsTable(opentelemetry))
  const filepath = `${REPO_ROOT}${CONFIGURATION_DOC}`
  return format(lines.join('\n'), { ...(await resolveConfig(filepath)), filepath })
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
