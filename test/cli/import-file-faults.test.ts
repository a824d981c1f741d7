import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { readImportFile, READ_CHUNK_BYTES } from '../../src/import/read-import-file.js'
import { ImportError } from '../../src/store/store.js'

/**
 * What the reader refuses in the bytes of a data file, naming the record: bytes that are not
 * UTF-8 (they were silently turned into U+FFFD), a key given twice in one record (the last
 * one silently won: a frozen account came in unfrozen), and data quoted in a message is
 * escaped and cut (a 10 MB value made a 10 MB "one-line" message with raw ESC and CR).
 */

const dir = mkdtempSync(join(tmpdir(), 'folder-service-file-faults-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const OWNER = 'e0000000-0000-4000-8000-000000000001'

/** Reads the whole file; the ImportError's message, or null when it reads cleanly. */
async function fault(bytes: Buffer): Promise<string | null> {
  const path = join(dir, `f${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(path, bytes)
  try {
    for await (const batch of readImportFile(path, Date.now())) void batch
    return null
  } catch (error) {
    if (error instanceof ImportError) return error.message
    throw error
  }
}

const folders = (n: number) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ name: `folder ${i}`, owner_id: OWNER }))

describe('import file faults', () => {
  it('refuses bytes that are not UTF-8, naming the record, at the start and deep in a large file', async () => {
    const bad = Buffer.from([0x62, 0x61, 0x64, 0xff, 0xfe, 0xc0, 0xaf, 0x6e])
    const at = (index: number, count: number) => {
      const parts = folders(count).map((f) => Buffer.from(f))
      parts[index] = Buffer.concat([
        Buffer.from(`{"owner_id": "${OWNER}", "name": "`),
        bad,
        Buffer.from('"}'),
      ])
      const body: Buffer[] = [Buffer.from('{"folders": [')]
      parts.forEach((p, i) => body.push(i === 0 ? p : Buffer.concat([Buffer.from(',\n'), p])))
      body.push(Buffer.from(']}'))
      return Buffer.concat(body)
    }
    assert.match((await fault(at(2, 5))) ?? '', /^folders\[2\]: not valid UTF-8/)
    // Past the first read: the record is still named.
    const count = Math.ceil((READ_CHUNK_BYTES * 2.5) / 50)
    assert.match(
      (await fault(at(count - 3, count))) ?? '',
      new RegExp(`^folders\\[${count - 3}\\]: not valid UTF-8`),
    )
    assert.equal(
      await fault(Buffer.from(`{"folders": [${folders(3).join(',')}]}`)),
      null,
      'a clean file reads',
    )
  })

  it('refuses a key given twice in a record, naming it', async () => {
    const file = `{"users": [{"username": "a"}, {"username": "b", "is_suspended": true, "is_suspended": false}]}`
    assert.equal(await fault(Buffer.from(file)), "users[1]: the key 'is_suspended' appears twice")
  })

  it('refuses a key given twice in an object nested in a record, and a record that is not JSON', async () => {
    const nested = `{"folders": [{"name": "a", "owner_id": "${OWNER}", "x": {"k": 1, "k": 2}}]}`
    assert.equal(await fault(Buffer.from(nested)), "folders[0]: the key 'k' appears twice")
    const broken = `{"folders": [{"name": "a", "owner_id": "${OWNER}"}, {"name": "b",}]}`
    await assert.rejects(fault(Buffer.from(broken)), (error: Error) => {
      assert.equal(error.name, 'ImportFileError')
      assert.match(error.message, /is not valid JSON: folders\[1\]: /)
      return true
    })
    // A fault of the file's shape before a bad record is the one named.
    const shapeFirst = `{"folders": [{"name": "a", "owner_id": "${OWNER}"}], "bogus": [], "files": [{"name": ""}]}`
    assert.match((await fault(Buffer.from(shapeFirst))) ?? '', /^file: unknown key 'bogus'/)
  })

  it('quotes data in messages escaped and cut to 80 characters', async () => {
    const hostile = `\u001b[31mRED\u001b[2J\rFAKE${'x'.repeat(10_000_000)}`
    const file = JSON.stringify({ sessions: [{ user_id: OWNER, expires_at: hostile }] })
    const message = (await fault(Buffer.from(file))) ?? ''
    assert.match(message, /^sessions\[0\]: expires_at: not an RFC 3339 date-time/)
    assert.ok(message.length < 300, `${message.length} characters`)
    assert.ok(!message.includes('\u001b') && !message.includes('\r'), message)
    assert.match(message, /\\u001b\[31mRED/)
    const unknownKey = JSON.stringify({ ['\u001b[2J' + 'k'.repeat(1000)]: [] })
    const keyMessage = (await fault(Buffer.from(unknownKey))) ?? ''
    assert.ok(keyMessage.length < 300 && !keyMessage.includes('\u001b'), keyMessage)
  })
})
