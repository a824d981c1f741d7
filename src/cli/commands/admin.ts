import type { Command } from 'commander'
import type { UserRecord } from '../../store/store.js'
import { formatTimestamp } from '../../time.js'
import { importOwnRecords, print, UsageError, withStore, type DbOptions } from '../run-command.js'
import { parseDuration } from '../duration.js'
import { requireUser, requireUuid } from '../lookups.js'

/**
 * user and session: the admin commands (README, "Command line"). Creation goes through
 * the import validator, so a record made here obeys exactly the rules of an imported one.
 */

type JsonOption = DbOptions & { json?: boolean }

const DEFAULT_SESSION_TTL = '30d'

function publicUser(user: UserRecord) {
  return { id: user.id, username: user.username, frozen: user.is_suspended }
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
        const data = await importOwnRecords(
          store,
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
          await store.setUserFrozen(found.id, frozen, Date.now())
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
        const data = await importOwnRecords(
          store,
          { sessions: [{ user_id: found.id, expires_at: formatTimestamp(now + ttlMs) }] },
          now,
        )
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

export function registerAdminCommands(program: Command): void {
  registerUserCommands(program)
  registerSessionCommands(program)
}
