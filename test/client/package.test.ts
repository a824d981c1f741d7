import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { sqliteBackend } from '../helpers/databases/backends.js'
import { ROOT } from '../helpers/processes/build.js'
import { tempDir } from '../helpers/processes/cli-database.js'
import { serveBackend, type ServedBackend } from '../helpers/apps/served-backend.js'

/**
 * The client as another project gets it (docs/client.md "Installing the client"): the
 * package of packages/client, packed with `npm pack`, installed offline into a fresh project
 * with nothing else and set up exactly as the package's README says (its package.json and
 * tsconfig.json), the README's example and a test example type-checked by `tsc --strict`,
 * then the test example run against a served instance.
 */

const USER = 'c1000000-0000-4000-8000-000000000001'
const SESSION = 'c1000000-0000-4000-8000-00000000000a'

const EXAMPLE = `import { FolderServiceClient, FolderServiceError, type Folder } from 'folder-service-client'

export async function rootNames(baseUrl: string, sessionId: string): Promise<string[]> {
  const client = new FolderServiceClient({ baseUrl, sessionId })
  const page = await client.listFolders({ limit: 10 })
  const names = page.body.folders.map((folder: Folder) => folder.name)
  // The wire types are the real ones, not \`any\`: a field the service never sends is an error.
  // @ts-expect-error -- no such field
  void page.body.folders[0]?.size
  try {
    await new FolderServiceClient({ baseUrl }).listFolders()
  } catch (error) {
    if (error instanceof FolderServiceError) names.push(error.code)
  }
  return names
}
`

/** The README's fenced blocks of `language`, in order. */
function fencedBlocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp('^```' + language + '\\n([\\s\\S]*?)^```$', 'gm'))].map(
    (match) => match[1] ?? '',
  )
}

function run(command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: 120_000 })
  assert.equal(result.status, 0, `${command} ${args.join(' ')}\n${result.stdout}\n${result.stderr}`)
  return result.stdout
}

describe('the client package, installed in another project', () => {
  let served: ServedBackend
  let tmp: ReturnType<typeof tempDir>

  before(async () => {
    tmp = tempDir('folder-service-client-package-')
    served = await serveBackend(sqliteBackend, (store) =>
      store.importData(
        validateImport(
          {
            users: [{ id: USER, username: 'pia' }],
            sessions: [{ id: SESSION, user_id: USER }],
            folders: [
              { name: 'Beta', owner_id: USER },
              { name: 'Alpha', owner_id: USER },
            ],
          },
          Date.now(),
        ),
      ),
    )
  })
  after(async () => {
    await served?.close()
    tmp?.remove()
  })

  it('installs offline with no dependency, type-checks under --strict and lists folders', () => {
    run('npm', ['run', 'build:client', '--silent'], ROOT)
    const packed = run(
      'npm',
      ['pack', '--silent', '--pack-destination', tmp.dir],
      join(ROOT, 'packages', 'client'),
    )
    const tarball = join(tmp.dir, packed.trim().split('\n').at(-1) ?? '')

    const project = join(tmp.dir, 'project')
    run('mkdir', ['-p', project], tmp.dir)
    const readme = readFileSync(join(ROOT, 'packages', 'client', 'README.md'), 'utf8')
    const [packageJson, tsconfig] = fencedBlocks(readme, 'json').map((text) => JSON.parse(text) as object)
    const [readmeExample] = fencedBlocks(readme, 'ts')
    assert.ok(packageJson !== undefined && tsconfig !== undefined && readmeExample !== undefined)
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, ...packageJson }),
    )
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig))
    run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], project)
    assert.deepEqual(
      readdirSync(join(project, 'node_modules')).filter((name) => !name.startsWith('.')),
      ['folder-service-client'],
      'nothing but the client is installed',
    )
    const manifest = JSON.parse(
      readFileSync(join(project, 'node_modules', 'folder-service-client', 'package.json'), 'utf8'),
    ) as Record<string, unknown>
    assert.equal(manifest.dependencies, undefined)
    assert.equal(
      readFileSync(join(project, 'node_modules', 'folder-service-client', 'README.md'), 'utf8'),
      readme,
      'the package carries its README',
    )

    writeFileSync(join(project, 'example.ts'), EXAMPLE)
    writeFileSync(join(project, 'readme-example.ts'), readmeExample)
    run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', '.'], project)
    const names = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { rootNames } from './out/example.js'
         console.log(JSON.stringify(await rootNames(process.argv[1], process.argv[2])))`,
        served.service.base,
        SESSION,
      ],
      project,
    )
    assert.deepEqual(JSON.parse(names), ['Alpha', 'Beta', 'UNAUTHORIZED'])
  })
})
