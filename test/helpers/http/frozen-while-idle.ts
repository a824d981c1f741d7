import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { insertLiveFolder, type RawSql } from '../../../harness/raw-sql.js'
import type { OpenedStream } from './event-stream-client.js'

/**
 * A feed's stream, idle (parked, nothing pending), sees its user frozen and then a folder
 * committed under `parent`: its last event is the 403 problem and the folder is never sent
 * (docs/api.md "Push": the checks run before every event).
 */
export async function assertEndsWhenFrozenWhileIdle(
  stream: OpenedStream,
  sql: RawSql,
  { owner, parent }: { owner: string; parent: string },
): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 300))
  await sql.run(`UPDATE users SET is_suspended = ${sql.true} WHERE id = ?`, owner)
  const late = randomUUID()
  await insertLiveFolder(sql, { id: late, name: 'after the freeze', parent, owner, at: Date.now() })
  const final = await stream.nextEvent(5000)
  assert.equal(final.event, 'error')
  const problem = JSON.parse(final.data) as { status: number; code: string }
  assert.equal(problem.status, 403)
  assert.equal(problem.code, 'FROZEN_ACCOUNT')
  await stream.ended
  assert.ok(
    !stream.items.some((item) => item.kind === 'event' && item.event.data.includes(late)),
    'the change was not sent',
  )
}
