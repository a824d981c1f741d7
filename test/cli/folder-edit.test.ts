import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends } from '../helpers/databases/backends.js'
import { assertOk, assertOneLineError, describeRun } from '../helpers/processes/cli-asserts.js'
import { openCliDatabase, type CliDatabase } from '../helpers/processes/cli-database.js'
import { runAll, runCli } from '../helpers/processes/cli.js'

/**
 * `folder rename`, `folder move`, `folder list` and what `folder delete` says (README
 * "Command line"), each judged by GET /v1/folders and by the change feed's followers, on
 * every backend.
 */

const IDA = 'f0000000-0000-4000-8000-000000000001'
const JON = 'f0000000-0000-4000-8000-000000000002'
const IDA_SESSION = 'f0000000-0000-4000-8000-00000000000a'
const id = (n: number) => `f0000000-0000-4000-8000-0000000f${n.toString(16).padStart(4, '0')}`
// Ida: Work/{Reports/{2024, Old (deleted)/{Kept}}, Plans}, Home; Jon: Jons.
const WORK = id(1)
const REPORTS = id(2)
const Y2024 = id(3)
const OLD = id(4)
const KEPT = id(5)
const PLANS = id(6)
const HOME = id(7)
const JONS = id(8)
const UNKNOWN = id(0xfff)

describe('folder-service folder rename, move, list, delete', { concurrency: true }, () => {
  for (const backend of allBackends()) {
    describe(backend.name, { skip: backend.skip, concurrency: 1 }, () => {
      let db: CliDatabase
      const cli = (...args: string[]) => runCli([...args, '--db', db.url])
      const rootNames = () => db.names(IDA_SESSION)

      before(async () => {
        db = await openCliDatabase(backend)
        const folder = (folderId: string, name: string, parent: string | null, extra = {}) => ({
          id: folderId,
          name,
          folder_id: parent,
          owner_id: IDA,
          ...extra,
        })
        await db.store.importData(
          validateImport(
            {
              users: [
                { id: IDA, username: 'ida' },
                { id: JON, username: 'jon' },
              ],
              sessions: [{ id: IDA_SESSION, user_id: IDA }],
              folders: [
                folder(WORK, 'Work', null),
                folder(REPORTS, 'Reports', WORK),
                folder(Y2024, '2024', REPORTS),
                folder(OLD, 'Old', REPORTS, { is_deleted: true }),
                folder(KEPT, 'Kept', OLD),
                folder(PLANS, 'Plans', WORK),
                folder(HOME, 'Home', null),
                { id: JONS, name: 'Jons', owner_id: JON },
              ],
            },
            Date.now(),
          ),
        )
      })

      after(async () => {
        await db?.close()
      })

      it('`folder list` prints the direct sub-folders in listing order; `--json` lists them', async () => {
        const [root, work, json] = await runAll([
          ['folder', 'list', '--user', 'ida', '--db', db.url],
          ['folder', 'list', '--user', IDA, '--parent', WORK.toUpperCase(), '--db', db.url],
          ['folder', 'list', '--user', 'ida', '--parent', REPORTS, '--json', '--db', db.url],
        ])
        assertOk(root!)
        assert.deepEqual(root!.stdout.trimEnd().split('\n'), [`Home/  ${HOME}`, `Work/  ${WORK}`])
        assertOk(work!)
        assert.deepEqual(work!.stdout.trimEnd().split('\n'), [`Plans/  ${PLANS}`, `Reports/  ${REPORTS}`])
        assertOk(json!)
        assert.deepEqual(JSON.parse(json!.stdout), [{ id: Y2024, name: '2024', folder_id: REPORTS }])
      })

      it('`folder list` walks a folder of more than one batch in order, exactly once each', async () => {
        const BIG = id(0x100)
        const children = Array.from({ length: 2345 }, (_, i) => ({
          name: `n${String(2345 - i).padStart(5, '0')}`,
          folder_id: BIG,
          owner_id: JON,
        }))
        await db.store.importData(
          validateImport({ folders: [{ id: BIG, name: 'Big', owner_id: JON }, ...children] }, Date.now()),
        )
        const run = await cli('folder', 'list', '--user', 'jon', '--parent', BIG, '--json')
        assertOk(run)
        const names = (JSON.parse(run.stdout) as { name: string }[]).map((f) => f.name)
        assert.deepEqual(names, children.map((c) => c.name).sort())
      })

      it('`--order name_natural`: `folder list` across batches and `folder tree` in natural order', async () => {
        const KIM = 'f0000000-0000-4000-8000-000000000003'
        const NAT = id(0x200)
        // 1,234 numbered names in scattered order, and the tie-breaks: F1 before f1 (code
        // points), f01 after both (more digits)
        const numbered = Array.from({ length: 1234 }, (_, i) => `f${((i * 7) % 1234) + 1}`)
        const natural = ['F1', 'f1', 'f01', ...Array.from({ length: 1233 }, (_, i) => `f${i + 2}`)]
        const children = [...numbered, 'F1', 'f01'].map((name) => ({ name, folder_id: NAT, owner_id: KIM }))
        await db.store.importData(
          validateImport(
            {
              users: [{ id: KIM, username: 'kim' }],
              folders: [
                { id: NAT, name: 'x10', owner_id: KIM },
                { id: id(0x201), name: 'x9', owner_id: KIM },
                { id: id(0x202), name: 'y10', folder_id: id(0x201), owner_id: KIM },
                { id: id(0x203), name: 'Y2', folder_id: id(0x201), owner_id: KIM },
                ...children,
              ],
            },
            Date.now(),
          ),
        )
        const [naturally, byName, tree, bad] = await runAll([
          [
            'folder',
            'list',
            '--user',
            'kim',
            '--parent',
            NAT,
            '--order',
            'name_natural',
            '--json',
            '--db',
            db.url,
          ],
          ['folder', 'list', '--user', 'kim', '--parent', NAT, '--order', 'name', '--json', '--db', db.url],
          ['folder', 'tree', '--user', 'kim', '--order', 'name_natural', '--db', db.url],
          ['folder', 'list', '--user', 'kim', '--order', 'natural', '--db', db.url],
        ])
        const names = (run: typeof naturally) =>
          (JSON.parse(run!.stdout) as { name: string }[]).map((f) => f.name)
        assertOk(naturally!)
        assert.deepEqual(names(naturally), natural)
        assertOk(byName!)
        assert.deepEqual(names(byName), [...natural].sort())
        assertOk(tree!)
        const lines = tree!.stdout.trimEnd().split('\n')
        assert.deepEqual(lines.slice(0, 4), [
          `x9/  ${id(0x201)}`,
          `  Y2/  ${id(0x203)}`,
          `  y10/  ${id(0x202)}`,
          `x10/  ${NAT}`,
        ])
        assert.deepEqual(
          lines.slice(4).map((line) => line.trim().split('/')[0]),
          natural,
        )
        assertOneLineError(bad!, /--order.*natural/, ['folder', 'list', '--order', 'natural'])
      })

      it('`folder list` of a deleted, foreign or unknown parent, or an unknown user, fails with one line', async () => {
        const commands = [
          ['folder', 'list', '--user', 'ida', '--parent', OLD],
          ['folder', 'list', '--user', 'ida', '--parent', JONS],
          ['folder', 'list', '--user', 'ida', '--parent', UNKNOWN],
          ['folder', 'list', '--user', 'ida', '--parent', 'nope'],
          ['folder', 'list', '--user', 'nobody'],
        ].map((args) => [...args, '--db', db.url])
        const results = await runAll(commands, {}, 3)
        const expected = [new RegExp(OLD), new RegExp(JONS), new RegExp(UNKNOWN), /nope/, /nobody/]
        results.forEach((result, i) => {
          assertOneLineError(result, expected[i], commands[i])
          assert.equal(result.stdout, '', describeRun(commands[i]!, result))
        })
      })

      it('`folder rename` trims the new name; the listing shows it and followers get one upsert', async () => {
        const start = await db.store.readChanges({ ownerId: IDA, parentId: WORK, after: null, limit: 10 })
        assert.equal(start.outcome, 'changes')
        if (start.outcome !== 'changes') return
        assertOk(await cli('folder', 'rename', PLANS, '--name', '  Roadmap '))
        assert.deepEqual(await db.names(IDA_SESSION, WORK), ['Reports', 'Roadmap'])
        const read = await db.store.readChanges({
          ownerId: IDA,
          parentId: WORK,
          after: start.present,
          limit: 10,
        })
        assert.equal(read.outcome, 'changes', 'written as a change, not as a reset of the feed')
        if (read.outcome !== 'changes') return
        assert.deepEqual(
          read.rows.map((row) => (row.kind === 'folder' ? [row.id, row.folder?.name] : [row.kind])),
          [[PLANS, 'Roadmap']],
        )
        const json = await cli('folder', 'rename', PLANS, '--name', 'Plans', '--json')
        assertOk(json)
        assert.deepEqual(JSON.parse(json.stdout), { id: PLANS, name: 'Plans', folder_id: WORK })
      })

      it('`folder rename` refuses a bad name, a deleted or unknown folder, with one line, writing nothing', async () => {
        const commands = [
          ['folder', 'rename', PLANS, '--name', '   '],
          ['folder', 'rename', PLANS, '--name', 'x'.repeat(256)],
          ['folder', 'rename', OLD, '--name', 'X'],
          ['folder', 'rename', UNKNOWN, '--name', 'X'],
          ['folder', 'rename', 'nope', '--name', 'X'],
          ['folder', 'rename', PLANS],
        ].map((args) => [...args, '--db', db.url])
        const results = await runAll(commands, {}, 3)
        const expected = [
          /^folder-service: folder name is empty/,
          /255/,
          new RegExp(OLD),
          new RegExp(UNKNOWN),
          /nope/,
          /--name/,
        ]
        results.forEach((result, i) => assertOneLineError(result, expected[i], commands[i]))
        assert.deepEqual(await db.names(IDA_SESSION, WORK), ['Plans', 'Reports'])
        assert.equal((await db.store.findFolder(OLD))?.name, 'Old')
      })

      it('`folder move --parent` nests a folder elsewhere; `--root` brings it back; both listings follow', async () => {
        assertOk(await cli('folder', 'move', PLANS, '--parent', HOME))
        assert.deepEqual(await db.names(IDA_SESSION, WORK), ['Reports'])
        assert.deepEqual(await db.names(IDA_SESSION, HOME), ['Plans'])

        const json = await cli('folder', 'move', PLANS, '--root', '--json')
        assertOk(json)
        assert.deepEqual(JSON.parse(json.stdout), { id: PLANS, name: 'Plans', folder_id: null })
        assert.deepEqual(await rootNames(), ['Home', 'Plans', 'Work'])
        assert.deepEqual(await db.names(IDA_SESSION, HOME), [])

        assertOk(await cli('folder', 'move', PLANS, '--parent', WORK))
        assert.deepEqual(await db.names(IDA_SESSION, WORK), ['Plans', 'Reports'])
      })

      it('`folder move` refuses its own subtree, a foreign, deleted or unknown parent, a dead folder, writing nothing', async () => {
        const commands = [
          ['folder', 'move', WORK, '--parent', WORK],
          ['folder', 'move', WORK, '--parent', Y2024],
          ['folder', 'move', HOME, '--parent', JONS],
          ['folder', 'move', HOME, '--parent', OLD],
          ['folder', 'move', HOME, '--parent', UNKNOWN],
          ['folder', 'move', OLD, '--root'],
          ['folder', 'move', KEPT, '--parent', HOME],
          ['folder', 'move', HOME],
          ['folder', 'move', HOME, '--root', '--parent', WORK],
          ['folder', 'move', HOME, '--parent', 'nope'],
        ].map((args) => [...args, '--db', db.url])
        const results = await runAll(commands, {}, 3)
        const expected = [
          /into itself/,
          new RegExp(`own sub-folder ${Y2024}`),
          new RegExp(`${JONS} is not a live folder`),
          new RegExp(`${OLD} is not a live folder`),
          new RegExp(`${UNKNOWN} is not a live folder`),
          new RegExp(`no live folder ${OLD}`),
          // Kept is live, but under a deleted folder: it moves (it is not "dead").
          undefined,
          /--parent ID or --root/,
          /--root.*--parent/,
          /nope/,
        ]
        results.forEach((result, i) => {
          if (expected[i] === undefined) assertOk(result, commands[i])
          else assertOneLineError(result, expected[i], commands[i])
        })
        assert.deepEqual(await rootNames(), ['Home', 'Work'])
        assert.deepEqual(await db.names(IDA_SESSION, WORK), ['Plans', 'Reports'])
        assert.deepEqual(await db.names(IDA_SESSION, REPORTS), ['2024'])
        assert.deepEqual(await db.names(IDA_SESSION, HOME), ['Kept'], 'Kept came out from under Old')
      })

      it('`folder delete` says how many live sub-folders (any depth) it hides with it', async () => {
        const [work, home] = await runAll([
          ['folder', 'delete', WORK, '--db', db.url],
          ['folder', 'delete', HOME, '--json', '--db', db.url],
        ])
        // Work hides Plans, Reports and 2024, not Old (deleted already) nor Kept (under Old, then
        // moved to Home above); Home hides Kept.
        assertOk(work!)
        assert.match(work!.stdout, /\b3 live sub-folders\b/)
        assertOk(home!)
        assert.deepEqual(JSON.parse(home!.stdout), { id: HOME, hidden_subfolders: 1 })
        const lone = await cli('folder', 'add', '--user', 'ida', '--name', 'Lone')
        assertOk(lone)
        const loneDeleted = await cli('folder', 'delete', lone.stdout.trim())
        assertOk(loneDeleted)
        assert.match(loneDeleted.stdout, /no live sub-folders/)
        assert.deepEqual(await rootNames(), [])
      })
    })
  }
})
