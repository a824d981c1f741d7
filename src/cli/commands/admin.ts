import { printable } from '../../printable.js'
import type { Command } from 'commander'
import { isUuid, normaliseUuid } from '../../ids.js'
import { validateImport } from '../../import/validate-import.js'
import type { FolderRecord, Store, UserRecord } from '../../store/store.js'
import { formatTimestamp } from '../../time.js'
import { print, UsageError, withStore, type DbOptions } from '../run-command.js'
import { parseDuration } from '../duration.js'

/**
 * user, session and folder: the admin commands (README, "Command line"). Creation goes through
 * the import validator, so a record made here obeys exactly the rules of an imported one.
 */

type JsonOption = DbOptions & { json?: boolean }

const DEFAULT_SESSION_TTL = '30d'

async function requireUser(store: Store, ref: string): Promise<UserRecord> {
  const user = await store.findUser(ref)
  if (user === null) throw new UsageError(`no user with id or username '${ref}'`)
  return user
}

function requireUuid(value: string, what: string): string {
  if (!isUuid(value)) throw new UsageError(`${what} must be a UUID, got '${value}'`)
  return normaliseUuid(value)
}

function publicUser(user: UserRecord) {
  return { id: user.id, username: user.username, frozen: user.is_suspended }
}

/** Past this depth a line is indented no further and shows its depth as a number instead. */
const MAX_INDENTED_DEPTH = 20

/**
 * The tree as lines, depth first, written as they come: a 25,000-deep chain is 25,000 short
 * lines, not one string of indentation that grows with the square of the depth.
 */
function* treeLines(folders: FolderRecord[]): Generator<string> {
  const children = new Map<string | null, FolderRecord[]>()
  for (const folder of folders) {
    const siblings = children.get(folder.folder_id) ?? []
    siblings.push(folder)
    children.set(folder.folder_id, siblings)
  }
  // Iterative depth-first walk: a folder chain may be deeper than the call stack.
  const stack: { folder: FolderRecord; depth: number }[] = (children.get(null) ?? [])
    .map((folder) => ({ folder, depth: 0 }))
    .reverse()
  while (stack.length > 0) {
    const { folder, depth } = stack.pop() as { folder: FolderRecord; depth: number }
    const indent =
      depth <= MAX_INDENTED_DEPTH ? '  '.repeat(depth) : `${'  '.repeat(MAX_INDENTED_DEPTH)}[depth ${depth}] `
    yield `${indent}${printable(folder.name)}/  ${folder.id}`
    for (const child of [...(children.get(folder.id) ?? [])].reverse())
      stack.push({ folder: child, depth: depth + 1 })
  }
}

/** Writes the lines in chunks of about 64 KB. */
function writeTree(folders: FolderRecord[]): void {
  let chunk = ''
  let any = false
  for (const line of treeLines(folders)) {
    any = true
    chunk += `${line}\n`
    if (chunk.length >= 65_536) {
      process.stdout.write(chunk)
      chunk = ''
    }
  }
  process.stdout.write(any ? chunk : '(no folders)\n')
}

function registerUserCommands(program: Command): void {
  const user = program.command('user').description('manage users')
  user
    .command('add')
    .description('create a user; prints its id')
    .requiredOption('--username <name>', 'unique user name')
    .option('--email <email>', 'e-mail address (never shown by the API)')
    .option('--avatar-url <url>', 'URL of the avatar image')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the user as JSON')
    .action((options: JsonOption & { username: string; email?: string; avatarUrl?: string }) =>
      withStore(options, async (store) => {
        const data = validateImport(
          {
            users: [
              {
                username: options.username,
                email: options.email ?? null,
                avatar_url: options.avatarUrl ?? null,
              },
            ],
          },
          Date.now(),
        )
        await store.importData(data)
        const created = data.users[0]?.row as UserRecord
        print(options.json, publicUser(created), () => created.id)
      }),
    )
  for (const [name, frozen] of [
    ['freeze', true],
    ['unfreeze', false],
  ] as const) {
    user
      .command(name)
      .description(frozen ? 'freeze an account (its requests get 403)' : 'unfreeze an account')
      .argument('<user>', 'username or user id')
      .option('--db <url>', 'database URL')
      .option('--json', 'print the user as JSON')
      .action((ref: string, options: JsonOption) =>
        withStore(options, async (store) => {
          const found = await requireUser(store, ref)
          await store.setUserSuspended(found.id, frozen, Date.now())
          print(
            options.json,
            { ...publicUser(found), frozen },
            () => `${found.username} ${frozen ? 'frozen' : 'unfrozen'}`,
          )
        }),
      )
  }
  user
    .command('list')
    .description('list users (id, username, frozen)')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the users as JSON')
    .action((options: JsonOption) =>
      withStore(options, async (store) => {
        const users = (await store.listUsers()).map(publicUser)
        print(options.json, users, () =>
          users.length === 0
            ? '(no users)'
            : users.map((u) => `${u.id}  ${u.username}${u.frozen ? '  (frozen)' : ''}`).join('\n'),
        )
      }),
    )
}

function registerSessionCommands(program: Command): void {
  const session = program.command('session').description('manage sessions')
  session
    .command('add')
    .description('create a session; prints its id')
    .requiredOption('--user <user>', 'username or user id')
    .option('--ttl <duration>', 'lifetime such as 30d, 12h, 15m', DEFAULT_SESSION_TTL)
    .option('--db <url>', 'database URL')
    .option('--json', 'print the session as JSON')
    .action((options: JsonOption & { user: string; ttl: string }) =>
      withStore(options, async (store) => {
        const ttlMs = parseDuration(options.ttl)
        const found = await requireUser(store, options.user)
        const now = Date.now()
        const data = validateImport(
          { sessions: [{ user_id: found.id, expires_at: formatTimestamp(now + ttlMs) }] },
          now,
        )
        await store.importData(data)
        const created = data.sessions[0]?.row
        print(
          options.json,
          { id: created?.id, user_id: found.id, expires_at: formatTimestamp(now + ttlMs) },
          () => created?.id ?? '',
        )
      }),
    )
  session
    .command('revoke')
    .description('end a session')
    .argument('<session-id>', 'the session id')
    .option('--db <url>', 'database URL')
    .action((id: string, options: DbOptions) =>
      withStore(options, async (store) => {
        if (!(await store.deleteSession(requireUuid(id, 'session id')))) {
          throw new UsageError(`no session ${id}`)
        }
        process.stdout.write('session revoked\n')
      }),
    )
}

function registerFolderCommands(program: Command): void {
  const folder = program.command('folder').description('manage folders')
  folder
    .command('add')
    .description('create a folder; prints its id')
    .requiredOption('--user <user>', 'owner: username or user id')
    .requiredOption('--name <name>', 'folder name (trimmed; 1 to 255 characters)')
    .option('--parent <id>', 'parent folder id (default: the root)')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the folder as JSON')
    .action((options: JsonOption & { user: string; name: string; parent?: string }) =>
      withStore(options, async (store) => {
        const owner = await requireUser(store, options.user)
        const parentId = options.parent === undefined ? null : requireUuid(options.parent, '--parent')
        if (parentId !== null) {
          const parent = await store.findFolder(parentId)
          if (parent === null || parent.is_deleted || parent.owner_id !== owner.id) {
            throw new UsageError(`no live folder ${parentId} of ${owner.username}`)
          }
        }
        const data = validateImport(
          { folders: [{ name: options.name, folder_id: parentId, owner_id: owner.id }] },
          Date.now(),
        )
        const created = data.folders[0]?.row as FolderRecord
        // One change of its parent for the feed's followers; an import would reset the feed.
        await store.addFolder(created)
        print(
          options.json,
          { id: created.id, name: created.name, folder_id: created.folder_id, owner_id: created.owner_id },
          () => created.id,
        )
      }),
    )
  folder
    .command('delete')
    .description('mark a folder deleted (logical; it disappears from listings)')
    .argument('<id>', 'folder id')
    .option('--db <url>', 'database URL')
    .action((id: string, options: DbOptions) =>
      withStore(options, async (store) => {
        if (!(await store.markFolderDeleted(requireUuid(id, 'folder id'), Date.now()))) {
          throw new UsageError(`no live folder ${id}`)
        }
        process.stdout.write('folder deleted\n')
      }),
    )
  folder
    .command('tree')
    .description("print a user's live folder tree")
    .requiredOption('--user <user>', 'username or user id')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the folders as JSON')
    .action((options: JsonOption & { user: string }) =>
      withStore(options, async (store) => {
        const owner = await requireUser(store, options.user)
        const folders = await store.listLiveFolders(owner.id)
        if (options.json) {
          print(
            true,
            folders.map((f) => ({ id: f.id, name: f.name, folder_id: f.folder_id })),
            () => '',
          )
        } else {
          writeTree(folders)
        }
      }),
    )
}

export function registerAdminCommands(program: Command): void {
  registerUserCommands(program)
  registerSessionCommands(program)
  registerFolderCommands(program)
}
