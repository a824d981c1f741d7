import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/**
 * Builds packages/client/dist from src/client (npm run build:client). The client's wire
 * types are derived from the server's TypeBox schemas (`Static<typeof Folder>`), so plain
 * declarations would make every user install TypeBox for its types. Here each such type
 * is written out as the structure it stands for, and the schema modules are left out: the
 * package has no dependencies. Only problem-codes (a plain array the client reads at run
 * time) ships beside the client.
 */

const HERE = fileURLToPath(new URL('.', import.meta.url))
const DIST = join(HERE, 'dist')
const SRC = join(HERE, '..', '..', 'src')

/** The structure of the type alias `name` declared in `file`, with nothing left unexpanded. */
function expandedAlias(program: ts.Program, file: string, name: string): string {
  const source = program.getSourceFile(file)
  const alias = source?.statements.find(
    (s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === name,
  )
  if (alias === undefined) throw new Error(`no type ${name} in ${file}`)
  const checker = program.getTypeChecker()
  const flags = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.InTypeAlias
  return checker.typeToString(checker.getTypeAtLocation(alias.name), undefined, flags)
}

function replaceOnce(text: string, from: string | RegExp, to: string, file: string): string {
  const replaced = text.replace(from, to)
  if (replaced === text) throw new Error(`${file}: ${String(from)} not found`)
  return replaced
}

rmSync(DIST, { recursive: true, force: true })
const config = ts.getParsedCommandLineOfConfigFile(
  join(HERE, 'tsconfig.json'),
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    },
  },
)
if (config === undefined) throw new Error('cannot read packages/client/tsconfig.json')
const program = ts.createProgram(config.fileNames, config.options)
const emitted = program.emit()
const diagnostics = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics]
if (diagnostics.length > 0) {
  throw new Error(
    ts.formatDiagnostics(diagnostics, { ...ts.sys, getCanonicalFileName: (f) => f, getNewLine: () => '\n' }),
  )
}

const clientFile = join(SRC, 'client', 'types.ts')
const clientTypes = join(DIST, 'client', 'types.d.ts')
let client = readFileSync(clientTypes, 'utf8')
client = replaceOnce(client, /^import type \{ Static \} from '@sinclair\/typebox';\n/m, '', clientTypes)
client = replaceOnce(
  client,
  /^import type \{[^}]*\} from '\.\.\/schemas\/changes-body\.js';\n/m,
  '',
  clientTypes,
)
client = replaceOnce(client, /^import type \{[^}]*\} from '\.\.\/schemas\/folder\.js';\n/m, '', clientTypes)
client = replaceOnce(
  client,
  /^import type \{[^}]*\} from '\.\.\/schemas\/tree-body\.js';\n/m,
  '',
  clientTypes,
)
client = replaceOnce(
  client,
  /^export type FolderTreeBody = TreeBody;$/m,
  `export type FolderTreeBody = ${expandedAlias(program, clientFile, 'FolderTreeBody')};`,
  clientTypes,
)
client = replaceOnce(client, "TreeBody['changes']", "FolderTreeBody['changes']", clientTypes)
for (const name of ['Folder', 'FolderList', 'FolderChanges']) {
  client = replaceOnce(
    client,
    new RegExp(`^export type ${name} = Static<typeof \\w+>;$`, 'm'),
    `export type ${name} = ${expandedAlias(program, clientFile, name)};`,
    clientTypes,
  )
}
writeFileSync(clientTypes, client)

const errorTypes = join(DIST, 'client', 'folder-service-error.d.ts')
writeFileSync(
  errorTypes,
  replaceOnce(
    readFileSync(errorTypes, 'utf8'),
    "import type { ProblemBody } from '../schemas/problem.js';",
    `type ProblemBody = ${expandedAlias(program, join(SRC, 'schemas', 'problem.ts'), 'ProblemBody')};`,
    errorTypes,
  ),
)

// The schema modules stay behind, but for the one the client loads at run time.
for (const name of readdirSync(join(DIST, 'schemas'))) {
  if (!name.startsWith('problem-codes.')) rmSync(join(DIST, 'schemas', name))
}
for (const dir of ['client', 'schemas']) {
  for (const name of readdirSync(join(DIST, dir))) {
    if (/typebox|from '\.\.\/schemas\/(?!problem-codes)/.test(readFileSync(join(DIST, dir, name), 'utf8'))) {
      throw new Error(`dist/${dir}/${name} still needs the server's schemas or TypeBox`)
    }
  }
}
if (!existsSync(join(DIST, 'client', 'index.js'))) throw new Error('dist/client/index.js was not written')
