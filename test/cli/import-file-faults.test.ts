import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { readImportFile, READ_CHUNK_BYTES, type ReadProgress } from '../../src/import/read-import-file.js'
import { MAX_RECORD_CHARACTERS, MAX_RECORD_NESTING } from '../../src/import/record-splitter.js'
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
async function fault(bytes: Buffer | string, progress?: ReadProgress): Promise<string | null> {
  const path = join(dir, `f${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(path, bytes)
  try {
    for await (const batch of readImportFile(path, Date.now(), progress)) void batch
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

  it('refuses a record, key or value longer than the bound, naming it, having read little more than the bound', async () => {
    const record = (name: string) => JSON.stringify({ name, owner_id: OWNER })
    const over = MAX_RECORD_CHARACTERS + 1
    // 64 MB in one record: before the bound, all of it was held (a 120 MB record peaked at 700 MB).
    const huge = `{"folders": [${record('a')}, ${record('x'.repeat(64 << 20))}]}`
    const progress: ReadProgress = { totalBytes: huge.length, bytesRead: 0, records: 0 }
    assert.match(
      (await fault(huge, progress)) ?? '',
      /^folders\[1\]: longer than 1,048,576 characters of JSON/,
    )
    assert.ok(
      progress.bytesRead <= MAX_RECORD_CHARACTERS + 2 * READ_CHUNK_BYTES,
      `read ${progress.bytesRead} bytes`,
    )
    // Just over the bound, within one read; exactly at it, accepted by the reader.
    const padding = over - record('').length
    assert.match(
      (await fault(`{"users": [], "folders": [${record('y'.repeat(padding))}]}`)) ?? '',
      /^folders\[0\]: longer than/,
    )
    assert.doesNotMatch(
      (await fault(`{"folders": [${record('y'.repeat(padding - 1))}]}`)) ?? '',
      /characters of JSON/,
    )
    // Around the records: a huge unknown key (2.7 GB before failing), a huge value of a known one.
    assert.match(
      (await fault(`{"folders": [], "${'k'.repeat(8 << 20)}": []}`)) ?? '',
      /^file: a key or value outside the records is longer than 1,048,576 characters/,
    )
    assert.match(
      (await fault(`{"users": ${'1'.repeat(over)}}`)) ?? '',
      /^file: a key or value outside the records is longer/,
    )
    assert.match(
      (await fault(`{"users": "${'u'.repeat(over)}"}`)) ?? '',
      /^file: a key or value outside the records is longer/,
    )
    // An unknown key before it is the first fault, and named.
    assert.match((await fault(`{"bogus": "${'u'.repeat(4 << 20)}"}`)) ?? '', /^file: unknown key 'bogus'/)
  })

  it('refuses a record nested deeper than the bound, naming it and the bound, not the stack', async () => {
    const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
    const file = (levels: number) =>
      `{"folders": [{"name": "a", "owner_id": "${OWNER}"}, {"name": "b", "x": ${nested(levels)}}]}`
    assert.equal(
      await fault(file(200_000)),
      `folders[1]: nested more than ${MAX_RECORD_NESTING} levels deep (the bound of one record)`,
    )
    assert.match((await fault(file(MAX_RECORD_NESTING))) ?? '', /^folders\[1\]: nested more than/)
    // One level less fits: the record is refused for what it is (an unknown key), not its depth.
    assert.doesNotMatch((await fault(file(MAX_RECORD_NESTING - 1))) ?? '', /nested/)
  })

  it('quotes data in messages escaped and cut to 80 characters', async () => {
    const hostile = `\u001b[31mRED\u001b[2J\rFAKE${'x'.repeat(1_000_000)}`
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
