import assert from 'node:assert/strict'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { describe, it } from 'node:test'
import {
  REPO_ROOT,
  codeSpan,
  headingAnchors,
  markdownSection,
  readRepoFile,
  tableRows,
} from '../helpers/repository/markdown.js'

/** The README and docs/ held to the repository: links, paths and the dependency table. */

const DOCUMENTS = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]
/** Rows past this are unreadable in a terminal or a diff. */
const MAX_TABLE_ROW = 300

describe('README and docs/', () => {
  it('link only to files and headings that exist', () => {
    const broken: string[] = []
    for (const document of DOCUMENTS) {
      for (const [, target = ''] of readRepoFile(document).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue // http:, https:, mailto:
        const [path = '', anchor] = target.split('#')
        const file = path === '' ? document : normalize(join(dirname(document), path))
        if (!existsSync(join(REPO_ROOT, file))) broken.push(`${document}: ${target} (no such file)`)
        else if (anchor !== undefined && !headingAnchors(readRepoFile(file)).has(anchor))
          broken.push(`${document}: ${target} (no such heading)`)
      }
    }
    assert.deepEqual(broken, [])
  })

  it('name only repository paths that exist', () => {
    const missing: string[] = []
    for (const document of DOCUMENTS) {
      for (const [, path = ''] of readRepoFile(document).matchAll(
        /`((?:src|test|bench|docs|web|\.ci)\/[^`\s]*)`/g,
      )) {
        if (/[{}*<]/.test(path)) continue // a pattern, not a path
        if (!existsSync(join(REPO_ROOT, path))) missing.push(`${document}: ${path}`)
      }
    }
    assert.deepEqual(missing, [])
  })

  it(`keep table rows under ${MAX_TABLE_ROW} characters`, () => {
    const long = DOCUMENTS.flatMap((document) =>
      readRepoFile(document)
        .split('\n')
        .filter((line) => line.startsWith('|') && line.length > MAX_TABLE_ROW)
        .map((line) => `${document}: ${line.slice(0, 60)}... (${line.length})`),
    )
    assert.deepEqual(long, [])
  })

  it("README states the Node.js floor of package.json's engines", () => {
    const manifest = JSON.parse(readRepoFile('package.json')) as { engines: { node: string } }
    const floor = /^>=(\d+\.\d+)$/.exec(manifest.engines.node)?.[1]
    assert.ok(floor !== undefined, `engines.node '${manifest.engines.node}' is not '>=major.minor'`)
    assert.match(
      markdownSection(readRepoFile('README.md'), 'Node.js versions'),
      new RegExp(`Node\\.js ${floor} or later`),
    )
  })

  it('give a reason for exactly the direct dependencies of package.json', () => {
    const manifest = JSON.parse(readRepoFile('package.json')) as { dependencies: Record<string, string> }
    const table = tableRows(markdownSection(readRepoFile('docs/design.md'), 'Dependencies and why'))
    const listed = table.map((cells) => codeSpan(cells[0] ?? '') ?? `(no package in '${cells[0]}')`)
    for (const cells of table) assert.ok((cells[1] ?? '').length > 10, `a reason for ${cells[0]}`)
    assert.deepEqual(listed.sort(), Object.keys(manifest.dependencies).sort())
  })
})
