import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { Store, TreeQuery } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'

/**
 * A tree follower far behind (docs/api.md "Folder tree"): an answer costs what its own
 * entries cost, not the backlog behind its cursor. Two users hold the same tree and a
 * follower each at the present; one then gets a short backlog of single-row commits, the
 * other a long one (BACKLOG, each an insert under one of the parents, as a sync client's
 * uploads would be), and the first answer of each follower, `limit` 100, is timed,
 * alternately, several times: the long backlog's answer must cost about what the short one's
 * does. Then the long one is followed to the present, each answer within `limit` entries,
 * every folder once.
 */

const PARENTS = 10
const SHORT = 200
const BACKLOG = 20_000
const LIMIT = 100
const ROUNDS = 5

interface Follower {
  owner: string
  from: NonNullable<TreeQuery['from']>
}

for (const backend of allBackends()) {
  describe(`${backend.name}: a tree follower behind a burst`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let store: Store
    let sql: RawSql

    before(async () => {
      opened = await backend.open()
      store = opened.store
      sql = await openRawSql(opened.url)
    })
    after(async () => {
      await sql?.close()
      await opened?.cleanup()
    })

    /** A user with PARENTS folders at the root, and a follower of their tree at the present. */
    async function follower(): Promise<Follower & { parents: string[] }> {
      const owner = randomUUID()
      const at = Date.now()
      await sql.run(
        `INSERT INTO users (id, username, is_suspended, created_at, updated_at)
         VALUES (?, ?, ${sql.false}, ${sql.time}, ${sql.time})`,
        owner,
        `u-${owner.slice(0, 8)}`,
        at,
        at,
      )
      const parents: string[] = []
      for (let i = 0; i < PARENTS; i++) {
        const id = randomUUID()
        await insertLiveFolder(sql, { id, name: `p${i}`, parent: null, owner, at })
        parents.push(id)
      }
      let from: TreeQuery['from'] = null
      for (;;) {
        const answer = await store.readTree({ ownerId: owner, rootId: null, from, limit: 1000 })
        assert.equal(answer.outcome, 'answer')
        if (answer.outcome !== 'answer') throw new Error('unreachable')
        from = { position: answer.position, expansion: answer.expansion }
        if (!answer.more) return { owner, from, parents }
      }
    }

    /**
     * `count` inserts under the parents in turn, written by the database itself so that the
     * test does not wait for 20,000 round trips. SQLite's triggers log each row of the
     * statement at a generation of its own, as if each were a commit of its own; on
     * PostgreSQL the statement is one commit of `count` folders (single-row commits cost a
     * minute here: test/bench figures in docs/performance.md cover them).
     */
    async function backlog({ owner, parents }: { owner: string; parents: string[] }, count: number) {
      const at = Date.now()
      const parentOf = `CASE i % ${parents.length} ${parents.map((id, i) => `WHEN ${i} THEN '${id}'`).join(' ')} END`
      if (backend.name === 'sqlite')
        await sql.run(
          `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ${count})
           INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
           SELECT printf('%08x-0000-4000-8000-%012x', i, abs(random()) % 281474976710656), 'c' || i,
                  ${parentOf}, ?, 0, ?, ? FROM n`,
          owner,
          at,
          at,
        )
      else
        await sql.run(
          `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
           SELECT gen_random_uuid(), 'c' || i, (${parentOf})::uuid, ?, false, ${sql.time}, ${sql.time}
             FROM generate_series(0, ${count - 1}) AS i`,
          owner,
          at,
          at,
        )
    }

    async function firstAnswerMs({ owner, from }: Follower): Promise<number> {
      const started = performance.now()
      const answer = await store.readTree({ ownerId: owner, rootId: null, from, limit: LIMIT })
      const ms = performance.now() - started
      assert.equal(answer.outcome, 'answer')
      if (answer.outcome === 'answer') assert.equal(answer.entries.length, LIMIT)
      return ms
    }

    const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] as number

    it(`an answer ${BACKLOG.toLocaleString('en')} commits behind costs about what one ${SHORT} behind does`, async (t) => {
      const [near, far] = [await follower(), await follower()]
      await backlog(near, SHORT)
      await backlog(far, BACKLOG)
      const nearMs: number[] = []
      const farMs: number[] = []
      // One answer of each first: statements prepared, pages cached, alike for both.
      await firstAnswerMs(near)
      await firstAnswerMs(far)
      for (let round = 0; round < ROUNDS; round++) {
        nearMs.push(await firstAnswerMs(near))
        farMs.push(await firstAnswerMs(far))
      }
      const [nearP50, farP50] = [median(nearMs), median(farMs)]
      t.diagnostic(
        `p50 ${nearP50.toFixed(1)} ms at ${SHORT} behind, ${farP50.toFixed(1)} ms at ${BACKLOG} behind`,
      )
      // Proportional to the backlog, the far answer would cost 100 times the near one.
      assert.ok(farP50 < 3 * nearP50 + 5, `${farP50.toFixed(1)} ms against ${nearP50.toFixed(1)} ms`)

      // And the far follower reaches the present in answers of `limit` entries, each folder once.
      let from: TreeQuery['from'] = far.from
      const seen = new Set<string>()
      let answers = 0
      for (let more = true; more; answers++) {
        const answer = await store.readTree({ ownerId: far.owner, rootId: null, from, limit: 1000 })
        if (answer.outcome !== 'answer') throw new Error(answer.outcome)
        for (const entry of answer.entries) {
          assert.equal(entry.type, 'upsert')
          if (entry.type === 'upsert') {
            assert.ok(!seen.has(entry.folder.id), `${entry.folder.id} sent twice`)
            seen.add(entry.folder.id)
          }
        }
        from = { position: answer.position, expansion: answer.expansion }
        more = answer.more
      }
      assert.equal(seen.size, BACKLOG)
      assert.ok(answers <= BACKLOG / 1000 + 1, `${answers} answers`)
    })
  })
}
