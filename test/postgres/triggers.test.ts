import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { ALL_ROWS, type ChangePosition, type Store } from '../../src/store/store.js'
import { postgresBackend } from '../helpers/databases/backends.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { withAdminClient } from '../helpers/databases/postgres.js'

/**
 * Writes to folders that PostgreSQL's row and statement triggers used to miss: writes made
 * from inside another service's trigger (the count trigger returned early below the first
 * trigger level) and TRUNCATE (which fires no row or UPDATE/DELETE trigger). The derived
 * data (counts, generations, change log) must be right after each, as after any write.
 */

const OWNER = uuid('f6000000', 1)
const OTHER = uuid('f6000000', 2)
const PARENT = uuid('f6100000', 1)
const T0 = Date.parse('2026-05-01T10:00:00.000Z')

describe('postgres: writes from nested triggers and TRUNCATE', { skip: postgresBackend.skip }, () => {
  let opened: Awaited<ReturnType<typeof postgresBackend.open>>
  let store: Store

  const admin = (sql: string, values: unknown[] = []) =>
    withAdminClient(opened.url, (client) => client.query(sql, values))
  const listed = async (parent: string | null, owner = OWNER) => {
    const page = await store.listFolders({ ownerId: owner, parentId: parent, page: 1, limit: 100 })
    assert.ok(page !== null)
    return { total: page.total, names: page.folders.map((f) => f.name) }
  }
  const present = async (owner: string): Promise<ChangePosition> => ({
    generation: (await store.ownerGenerations([owner])).get(owner) as number,
    row: ALL_ROWS,
  })
  const logged = async (owner: string, parent: string | null, at: ChangePosition) => {
    const result = await store.readChanges({ ownerId: owner, parentId: parent, after: at, limit: 100 })
    assert.equal(result.outcome, 'changes', JSON.stringify(result))
    return result.rows.map((row) =>
      row.kind === 'folder' ? `${row.folder ? 'upsert' : 'remove'} ${row.id}` : 'owner',
    )
  }

  before(async () => {
    opened = await postgresBackend.open()
    store = opened.store
    await store.importData(
      validateImport(
        {
          users: [
            { id: OWNER, username: 'owner' },
            { id: OTHER, username: 'other' },
          ],
          folders: [{ id: PARENT, name: 'Parent', owner_id: OWNER }],
        },
        T0,
      ),
    )
    // Another service's table whose trigger writes folders: a job creates two folders for
    // its owner, renames one and deletes the other, all from inside the trigger.
    await admin(`
      CREATE TABLE other_service_jobs (owner_id uuid NOT NULL, a uuid NOT NULL, b uuid NOT NULL);
      CREATE FUNCTION other_service_job() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO folders (id, name, folder_id, owner_id, created_at, updated_at)
        VALUES (NEW.a, 'job a', NULL, NEW.owner_id, now(), now()),
               (NEW.b, 'job b', NULL, NEW.owner_id, now(), now());
        RETURN NULL;
      END;
      $$;
      CREATE TRIGGER other_service_job AFTER INSERT ON other_service_jobs
        FOR EACH ROW EXECUTE FUNCTION other_service_job();
      CREATE FUNCTION other_service_cleanup() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE folders SET name = 'job a (renamed)', folder_id = '${PARENT}' WHERE id = OLD.a;
        DELETE FROM folders WHERE id = OLD.b;
        RETURN NULL;
      END;
      $$;
      CREATE TRIGGER other_service_cleanup AFTER DELETE ON other_service_jobs
        FOR EACH ROW EXECUTE FUNCTION other_service_cleanup();
    `)
  })
  after(() => opened.cleanup())

  it("counts and logs folders written from inside another service's trigger", async () => {
    const [a, b] = [uuid('f6200000', 1), uuid('f6200000', 2)]
    const rootAt = await present(OWNER)
    await admin('INSERT INTO other_service_jobs VALUES ($1, $2, $3)', [OWNER, a, b])
    assert.deepEqual(await listed(null), { total: 3, names: ['Parent', 'job a', 'job b'] })
    assert.deepEqual((await logged(OWNER, null, rootAt)).sort(), [`upsert ${a}`, `upsert ${b}`].sort())

    const parentAt = await present(OWNER)
    const rootAgain = await present(OWNER)
    await admin('DELETE FROM other_service_jobs')
    assert.deepEqual(await listed(null), { total: 1, names: ['Parent'] })
    assert.deepEqual(await listed(PARENT), { total: 1, names: ['job a (renamed)'] })
    assert.deepEqual((await logged(OWNER, null, rootAgain)).sort(), [`remove ${a}`, `remove ${b}`].sort())
    assert.deepEqual(await logged(OWNER, PARENT, parentAt), [`upsert ${a}`])
  })

  it("fixes the counts and resets every owner's feed on TRUNCATE folders", async () => {
    await admin(
      `INSERT INTO folders (id, name, folder_id, owner_id, created_at, updated_at)
       VALUES ($1, 'other root', NULL, $2, now(), now())`,
      [uuid('f6200000', 3), OTHER],
    )
    const owner = await present(OWNER)
    const other = await present(OTHER)
    assert.ok((await listed(null)).total > 0)
    await admin('TRUNCATE folders, files')
    assert.deepEqual(await listed(null), { total: 0, names: [] })
    assert.deepEqual(await listed(null, OTHER), { total: 0, names: [] })
    for (const [user, at] of [
      [OWNER, owner],
      [OTHER, other],
    ] as const) {
      const now = await present(user)
      assert.ok(now.generation > at.generation, 'a new generation: cached answers are not reused')
      assert.deepEqual(await store.readChanges({ ownerId: user, parentId: null, after: at, limit: 10 }), {
        outcome: 'expired',
      })
      assert.deepEqual(await logged(user, null, now), [], 'the present after the TRUNCATE is valid')
    }
  })

  it('forgets the history of truncated users, so a user made again with the same id starts afresh', async () => {
    const at = await present(OTHER)
    await admin('TRUNCATE users CASCADE')
    await store.importData(validateImport({ users: [{ id: OTHER, username: 'other again' }] }, T0))
    assert.deepEqual(await store.readChanges({ ownerId: OTHER, parentId: null, after: at, limit: 10 }), {
      outcome: 'expired',
    })
  })
})
