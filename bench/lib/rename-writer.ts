import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import Database from 'better-sqlite3'
import pg from 'pg'

/**
 * The fan-out bench's writer: another process that renames folders by plain SQL on its own
 * connection (nothing of the service or its Store), each rename its own commit, as another
 * service of a drive would. The folder's new name is `wake <seq>`, so a follower can tell
 * which commit an event carries; the writer reports when each commit returned, on the clock
 * every process of the machine shares (performance.timeOrigin + performance.now(), ms).
 *
 * Commands (one JSON line each on stdin), reports (one line each on stdout):
 * - `{"rename": ID}`: one rename now -> `C seq -1 at`;
 * - `{"spread": [[ID, ...], ...], "rate": N, "seconds": S}`: renames of a random user's
 *   random folder (the lists are the users' folders), evenly spread at N a second (one due
 *   every 1000/N ms, none skipped), for S seconds -> `C seq user at` each, then `E count`.
 *
 * It ends when its stdin closes, so it never outlives the bench.
 *
 *   node --import tsx bench/lib/rename-writer.ts DATABASE_URL
 */

/** The clock shared by the bench's processes, in ms. */
export const sharedNow = (): number => performance.timeOrigin + performance.now()

/** The name of the `seq`-th rename, and how a follower finds it in what it receives. */
const wakeName = (seq: number): string => `wake ${seq}`
export const WAKE_NAME_MARK = '"name":"wake '

export interface Commit {
  seq: number
  /** the user's index in `spread`'s lists; -1 for a single rename */
  user: number
  /** when the commit returned, on {@link sharedNow}'s clock */
  at: number
}

async function serveCommands(url: string): Promise<void> {
  let rename: (name: string, id: string) => Promise<void>
  let close: () => Promise<void>
  if (/^postgres(ql)?:\/\//i.test(url)) {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    rename = async (name, id) => {
      await client.query('UPDATE folders SET name = $1 WHERE id = $2', [name, id])
    }
    close = () => client.end()
  } else {
    const db = new Database(url.replace(/^sqlite:(\/\/)?/i, ''), { timeout: 5000 })
    const statement = db.prepare('UPDATE folders SET name = ? WHERE id = ?')
    rename = (name, id) => Promise.resolve(void statement.run(name, id))
    close = () => Promise.resolve(void db.close())
  }
  let seq = 0
  const commit = async (id: string, user: number): Promise<string> => {
    const mine = ++seq
    await rename(wakeName(mine), id)
    return `C ${mine} ${user} ${sharedNow().toFixed(3)}\n`
  }
  const lines = createInterface({ input: process.stdin })
  for await (const line of lines) {
    const command = JSON.parse(line) as
      { rename: string } | { spread: string[][]; rate: number; seconds: number }
    if ('rename' in command) {
      process.stdout.write(await commit(command.rename, -1))
      continue
    }
    const { spread, rate, seconds } = command
    const started = performance.now()
    let made = 0
    let out = ''
    for (;;) {
      const elapsed = performance.now() - started
      if (elapsed >= seconds * 1000) break
      const due = Math.min(Math.floor((elapsed / 1000) * rate) + 1, Math.ceil(seconds * rate))
      for (; made < due; made++) {
        const user = Math.floor(Math.random() * spread.length)
        const folders = spread[user] as string[]
        out += await commit(folders[Math.floor(Math.random() * folders.length)] as string, user)
      }
      process.stdout.write(out)
      out = ''
      // the next rename's due time (each 1000/rate ms)
      const next = (made / rate) * 1000 - (performance.now() - started)
      if (next > 0) await new Promise((resolve) => setTimeout(resolve, next))
    }
    process.stdout.write(`E ${made}\n`)
  }
  await close()
}

export interface RenameWriter {
  /** one rename of folder `id`: resolves once its commit returned, with its report */
  rename(id: string): Promise<Commit>
  /** renames spread over `folders` (per user) at `rate` a second for `seconds`; each commit to `onCommit` */
  spread(
    folders: string[][],
    rate: number,
    seconds: number,
    onCommit: (commit: Commit) => void,
  ): Promise<number>
  close(): void
}

/** The writer process on `url`, started from the repository at `root`. */
export function startRenameWriter(root: string, url: string): RenameWriter {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/lib/rename-writer.ts', url], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  let waiting: ((line: string) => void) | null = null
  const lines = createInterface({ input: child.stdout })
  lines.on('line', (line) => waiting?.(line))
  const parse = (line: string): Commit => {
    const [, seq, user, at] = line.split(' ')
    return { seq: Number(seq), user: Number(user), at: Number(at) }
  }
  const send = (command: object) => child.stdin.write(`${JSON.stringify(command)}\n`)
  return {
    rename: (id) =>
      new Promise((resolve) => {
        waiting = (line) => {
          waiting = null
          resolve(parse(line))
        }
        send({ rename: id })
      }),
    spread: (folders, rate, seconds, onCommit) =>
      new Promise((resolve) => {
        waiting = (line) => {
          if (line.startsWith('C ')) return onCommit(parse(line))
          waiting = null
          resolve(Number(line.split(' ')[1]))
        }
        send({ spread: folders, rate, seconds })
      }),
    close: () => child.stdin.end(),
  }
}

if (process.argv[1]?.endsWith('rename-writer.ts')) {
  const url = process.argv[2]
  if (url === undefined) {
    process.stderr.write('usage: rename-writer.ts DATABASE_URL\n')
    process.exit(2)
  }
  await serveCommands(url)
}
