import assert from 'node:assert/strict'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, posix } from 'node:path'
import { describe, it } from 'node:test'
import { REPO_ROOT, markdownSection, readRepoFile, tableRows } from '../helpers/repository/markdown.js'

/**
 * docs/design.md "Source map" is a table whose first cell names a folder (`src/http/`) or a
 * file (`src/app.ts`) by its path from the repository root; the other cells may name files
 * and folders beside it (`request-basics.ts`, `sqlite/`) or from the root (`docs/api.md`).
 * It must name every folder of src/ and every top-level folder of the repository, and
 * nothing that does not exist.
 */

interface MapRow {
  path: string
  /** path-like code spans of the other cells, as written */
  mentioned: string[]
}

/** A code span that reads as a path: a folder (trailing slash) or a file with an extension. */
const PATH_LIKE = /^[\w.@-]+(?:\/[\w.@-]+)*(?:\/|\.[a-z]+)$/

function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '')
}

function sourceMap(): MapRow[] {
  return tableRows(markdownSection(readRepoFile('docs/design.md'), 'Source map')).map((cells) => {
    const [first = '', ...rest] = cells
    const spans = codeSpans(first)
    assert.equal(spans.length, 1, `a source map row names one path in its first cell: '${first}'`)
    return { path: spans[0] ?? '', mentioned: rest.flatMap(codeSpans).filter((span) => PATH_LIKE.test(span)) }
  })
}

/** Folders under `folder` (itself included) that hold a file at some depth: git keeps no empty one. */
function foldersWithFiles(folder: string): string[] {
  const entries = readdirSync(join(REPO_ROOT, folder), { withFileTypes: true })
  const below = entries
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => foldersWithFiles(`${folder}${entry.name}/`))
  return entries.some((entry) => entry.isFile()) || below.length > 0 ? [folder, ...below] : []
}

/** The repository's top-level folders that hold files, leaving out git's and the ones .gitignore names. */
function topLevelFolders(): string[] {
  const ignored = new Set(
    readRepoFile('.gitignore')
      .split('\n')
      .map((line) => line.trim().replace(/^\//, ''))
      .filter((line) => /^[^/*#]+\/?$/.test(line))
      .map((line) => line.replace(/\/$/, '')),
  )
  return readdirSync(REPO_ROOT, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== '.git' && !ignored.has(entry.name))
    .map((entry) => `${entry.name}/`)
    .filter((folder) => foldersWithFiles(folder).length > 0)
}

/** A name mentioned in a row, found beside the row's path (`sqlite/` in `src/store/`) or else from the root. */
function resolve(row: MapRow, name: string): string {
  const base = row.path.endsWith('/') ? row.path : `${dirname(row.path)}/`
  const beside = posix.join(base, name)
  return existsSync(join(REPO_ROOT, beside)) ? beside : name
}

describe('the source map (docs/design.md "Source map")', () => {
  const rows = sourceMap()
  const named = new Set(rows.map((row) => row.path))

  it('names every folder of src/, at any depth', () => {
    assert.deepEqual(
      foldersWithFiles('src/').filter((folder) => !named.has(folder)),
      [],
    )
  })

  it('names every top-level folder of the repository', () => {
    assert.deepEqual(
      topLevelFolders().filter((folder) => !named.has(folder)),
      [],
    )
  })

  it('names only folders and files that exist, in its paths and in what it says of them', () => {
    const missing = rows.flatMap((row) =>
      [row.path, ...row.mentioned.map((name) => resolve(row, name))]
        .filter((path) => !existsSync(join(REPO_ROOT, path)))
        .map((path) => (path === row.path ? path : `${path} (in the row of ${row.path})`)),
    )
    assert.deepEqual(missing, [])
  })

  it('writes each path once, folders with a trailing slash', () => {
    const paths = rows.map((row) => row.path)
    assert.deepEqual(
      paths.filter((path, i) => paths.indexOf(path) !== i),
      [],
      'a path named twice',
    )
    const wrongSlash = rows
      .filter((row) => existsSync(join(REPO_ROOT, row.path)))
      .filter((row) => statSync(join(REPO_ROOT, row.path)).isDirectory() !== row.path.endsWith('/'))
      .map((row) => row.path)
    assert.deepEqual(wrongSlash, [], 'a folder without its trailing slash, or a file with one')
  })
})
