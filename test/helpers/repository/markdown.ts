import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** Just enough Markdown reading for the tests that hold the README and docs/ to the code. */

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url))

export function readRepoFile(path: string): string {
  return readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8')
}

function headingLevel(line: string): number {
  return /^(#{1,6}) /.exec(line)?.[1]?.length ?? 0
}

/** The text under a heading (exact title), up to the next heading of the same or a higher level. */
export function markdownSection(markdown: string, title: string): string {
  const lines = markdown.split('\n')
  const start = lines.findIndex((line) => headingLevel(line) > 0 && line.replace(/^#+ /, '') === title)
  if (start === -1) throw new Error(`no heading '${title}'`)
  const level = headingLevel(lines[start] ?? '')
  const rest = lines.slice(start + 1)
  const end = rest.findIndex((line) => {
    const other = headingLevel(line)
    return other > 0 && other <= level
  })
  return (end === -1 ? rest : rest.slice(0, end)).join('\n')
}

/** The body rows of the tables in `text`, each as its trimmed cells (header and rule left out). */
export function tableRows(text: string): string[][] {
  const rows: string[][] = []
  let inTable = false
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) {
      inTable = false
      continue
    }
    const cells = line
      .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
      .split('|')
      .map((cell) => cell.trim())
    if (!inTable) {
      inTable = true // the header row
      continue
    }
    if (cells.every((cell) => /^:?-+:?$/.test(cell))) continue
    rows.push(cells)
  }
  return rows
}

/** The first `code span` of a cell, or undefined. */
export function codeSpan(cell: string): string | undefined {
  return /`([^`]+)`/.exec(cell)?.[1]
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function headingAnchor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  let inCode = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode
    if (!inCode && headingLevel(line) > 0) anchors.add(headingAnchor(line.replace(/^#+ /, '')))
  }
  return anchors
}
