import { once } from 'node:events'
import { createWriteStream } from 'node:fs'

/**
 * Writes a data file (docs/api.md "Import format") of `folders` folders for the import benchmark,
 * streamed, without holding the records: ids are derived from the record's number, so a
 * folder names its parent without a table. One owner per 10,000 folders; each folder's
 * parent is an earlier folder of its owner (or the root), and every block of 1,000 folders
 * is written in reverse order, so children often come before their parents.
 */

/** A UUID (version 4 layout) derived from (kind, n): distinct for distinct inputs. */
function derivedId(kind: number, n: number): string {
  const hex = (v: number, width: number) => (v >>> 0).toString(16).padStart(width, '0').slice(-width)
  const mix = (x: number) => {
    let h = Math.imul(x ^ 0x9e3779b9, 0x85ebca6b)
    h ^= h >>> 13
    h = Math.imul(h, 0xc2b2ae35)
    return (h ^ (h >>> 16)) >>> 0
  }
  const a = mix(n + kind * 0x1000193)
  const b = mix(a ^ n)
  // n itself (up to 2^40) in the last 12 hex digits keeps ids distinct.
  const high = Math.floor(n / 0x100000000)
  return `${hex(a, 8)}-${hex(b, 4)}-4${hex(b >>> 16, 3)}-${hex(0x8000 | (kind & 0x3fff), 4)}-${hex(high, 4)}${hex(n, 8)}`
}

const FOLDERS_PER_OWNER = 10_000
const BLOCK = 1_000

function ownerOf(folder: number): number {
  return Math.floor(folder / FOLDERS_PER_OWNER)
}

/** The parent of folder n: null for the first folders of an owner, else an earlier one of the same owner. */
function parentOf(folder: number): number | null {
  const first = ownerOf(folder) * FOLDERS_PER_OWNER
  const local = folder - first
  if (local < 20) return null
  return first + Math.floor(local / 5)
}

function folderRecord(n: number): string {
  const parent = parentOf(n)
  const created = new Date(Date.UTC(2025, 0, 1) + n * 1000).toISOString()
  return JSON.stringify({
    id: derivedId(2, n),
    name: `Folder ${n % 9973} of project ${ownerOf(n)}`,
    folder_id: parent === null ? null : derivedId(2, parent),
    owner_id: derivedId(1, ownerOf(n)),
    is_deleted: n % 50 === 49,
    created_at: created,
    updated_at: created,
  })
}

export async function writeImportFile(path: string, folders: number): Promise<void> {
  const out = createWriteStream(path)
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain')
  }
  const owners = Math.ceil(folders / FOLDERS_PER_OWNER)
  await write('{\n  "users": [\n')
  for (let u = 0; u < owners; u++) {
    const user = { id: derivedId(1, u), username: `bench-user-${u}`, email: `user${u}@example.org` }
    await write(`    ${JSON.stringify(user)}${u + 1 < owners ? ',' : ''}\n`)
  }
  await write('  ],\n  "folders": [\n')
  for (let start = 0; start < folders; start += BLOCK) {
    const end = Math.min(start + BLOCK, folders)
    let text = ''
    for (let n = end - 1; n >= start; n--) {
      text += `    ${folderRecord(n)}${n === start && end === folders ? '' : ','}\n`
    }
    await write(text)
  }
  await write('  ]\n}\n')
  out.end()
  await once(out, 'finish')
}

if (process.argv[1]?.endsWith('import-data.ts')) {
  const [path, count] = process.argv.slice(2)
  if (path === undefined || count === undefined) throw new Error('usage: import-data.ts PATH FOLDERS')
  await writeImportFile(path, Number(count))
}
