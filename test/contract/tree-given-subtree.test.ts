import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { Store, TreeQuery } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'

/**
 * A subtree given to another user by SQL in one statement (docs/api.md "Folder tree"):
 * `UPDATE folders SET owner_id = <new>, folder_id = CASE WHEN id = <top> THEN <place> ELSE
 * folder_id END` over the subtree's rows. The new owner's follower gets each folder of it
 * once, in answers of any `limit` (which may end between the statement's rows), and then
 * holds exactly the new owner's tree; the old owner's follower removes it.
 */

interface Held {
  parent: string | null
  name: string
}

for (const backend of allBackends()) {
  describe(`${backend.name}: a subtree given to another user`, { skip: backend.skip }, () => {
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

    async function user(name: string): Promise<string> {
      const id = randomUUID()
      await sql.run(
        `INSERT INTO users (id, username, is_suspended, created_at, updated_at)
         VALUES (?, ?, ${sql.false}, ${sql.time}, ${sql.time})`,
        id,
        `${name}-${id.slice(0, 8)}`,
        Date.now(),
        Date.now(),
      )
      return id
    }
    async function folder(owner: string, parent: string | null, name: string): Promise<string> {
      const id = randomUUID()
      await insertLiveFolder(sql, { id, name, parent, owner, at: Date.now() })
      return id
    }

    /** Follows `owner`'s tree from `from` to the present; every entry, answer by answer. */
    async function follow(owner: string, from: TreeQuery['from'], limit: number, tree: Map<string, Held>) {
      const answers: string[][] = []
      for (let more = true; more;) {
        const answer = await store.readTree({ ownerId: owner, rootId: null, from, limit })
        if (answer.outcome !== 'answer') throw new Error(answer.outcome)
        const ids: string[] = []
        for (const entry of answer.entries) {
          if (entry.type === 'owner') continue
          if (entry.type === 'upsert') {
            ids.push(entry.folder.id)
            tree.set(entry.folder.id, { parent: entry.folder.folder_id, name: entry.folder.name })
          } else {
            ids.push(entry.id)
            const gone = [entry.id]
            while (gone.length > 0) {
              const id = gone.pop() as string
              tree.delete(id)
              for (const [child, held] of tree) if (held.parent === id) gone.push(child)
            }
          }
        }
        answers.push(ids)
        from = { position: answer.position, expansion: answer.expansion }
        more = answer.more
      }
      return { answers, from }
    }

    for (const limit of [1000, 3, 2, 1]) {
      for (const into of ['the root', 'a folder'] as const) {
        it(`limit ${limit}, given into ${into}: each folder once, then exactly the new owner's tree`, async () => {
          const [alice, bob] = [await user('alice'), await user('bob')]
          const outer = await folder(alice, null, 'outer')
          const top = await folder(alice, outer, 'e-1')
          const eclair = await folder(alice, top, 'Éclair')
          const deep = await folder(alice, eclair, 'e-2')
          const side = await folder(alice, top, 'e-3')
          const own = await folder(bob, null, 'own')
          const place = into === 'the root' ? null : own
          const [aliceTree, bobTree] = [new Map<string, Held>(), new Map<string, Held>()]
          const { from: aliceAt } = await follow(alice, null, 1000, aliceTree)
          const { from: bobAt } = await follow(bob, null, 1000, bobTree)

          await sql.run(
            `UPDATE folders SET owner_id = ?, folder_id = CASE WHEN id = ? THEN ? ELSE folder_id END
              WHERE id IN (?, ?, ?, ?)`,
            bob,
            top,
            place,
            top,
            eclair,
            deep,
            side,
          )

          const { answers } = await follow(bob, bobAt, limit, bobTree)
          for (const ids of answers)
            assert.equal(new Set(ids).size, ids.length, `an answer: ${ids.join(' ')}`)
          const sent = answers.flat()
          for (const id of [top, eclair, deep, side])
            assert.equal(
              sent.filter((s) => s === id).length,
              1,
              `entries of ${id}: ${JSON.stringify(answers)}`,
            )
          assert.deepEqual(
            bobTree,
            new Map<string, Held>([
              [own, { parent: null, name: 'own' }],
              [top, { parent: place, name: 'e-1' }],
              [eclair, { parent: top, name: 'Éclair' }],
              [deep, { parent: eclair, name: 'e-2' }],
              [side, { parent: top, name: 'e-3' }],
            ]),
          )

          // The old owner's follower: removes only, each folder at most once (an answer that ends
          // between the statement's rows removes a child before its parent leaves), then `outer`.
          const { answers: aliceAnswers } = await follow(alice, aliceAt, limit, aliceTree)
          const removed = aliceAnswers.flat()
          assert.equal(new Set(removed).size, removed.length, JSON.stringify(aliceAnswers))
          assert.ok(removed.includes(top) && removed.every((id) => [top, eclair, deep, side].includes(id)))
          assert.deepEqual(aliceTree, new Map([[outer, { parent: null, name: 'outer' }]]))
        })
      }
    }
  })
}
