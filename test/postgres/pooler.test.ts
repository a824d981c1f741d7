import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { pgbouncerSkip, startPgbouncer, type Pgbouncer } from '../../harness/pgbouncer.js'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { validateImport } from '../../src/import/validate-import.js'
import { openStore } from '../../src/store/open-store.js'
import { StoreUnavailableError, type Store } from '../../src/store/store.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { createEmptyDatabase, withAdminClient } from '../helpers/databases/postgres.js'
import { changesOf, followedFolder, insertChild } from '../helpers/fixtures/followed-folder.js'
import { openEventStream, type OpenedStream } from '../helpers/http/event-stream-client.js'
import { tempDir, writeJson } from '../helpers/processes/cli-database.js'
import { logRecords, runCli, startService, type Service } from '../helpers/processes/cli.js'

/**
 * Behind PgBouncer in transaction mode (CONTRACT 17; docs/operations.md "Behind a connection
 * pooler"): private PgBouncers from the distribution, started by .ci/pgbouncer.sh with its
 * stock configuration, in front of a fresh database. Every command works through one with
 * DATABASE_POOLER=transaction; the statement timeout holds without a startup parameter, on
 * the server; both feeds deliver with DATABASE_DIRECT_URL (LISTEN) and without (the poll);
 * 64 connections get only 200s; a restart of the pooler under readers gives only 200 or 503
 * with Retry-After, and 200 again within 1 s of it accepting; one that refuses clients past
 * max_client_conn gives 503 with Retry-After, never 500; a replica is read through a pooler
 * of its own (DATABASE_READ_URLS); a pooler used without DATABASE_POOLER is named in one
 * line, and answered 503, never 500.
 */

const databaseUrl = process.env.TEST_DATABASE_URL ?? ''
const replicaUrl = process.env.TEST_DATABASE_READ_URL ?? ''
const replicaSkip =
  replicaUrl === '' && process.env.CI !== 'true'
    ? 'TEST_DATABASE_READ_URL is not set (.ci/postgres-replica.sh starts a replica)'
    : false
const F = followedFolder('9b000000')
const cookie = `session_id=${F.session}`
const POOLED = { DATABASE_POOLER: 'transaction' }

/** The answers of `readers` concurrent loops of GET /v1/folders over `ms`: status and Retry-After. */
async function readFor(
  base: string,
  readers: number,
  ms: number,
  during: () => Promise<void> = () => Promise.resolve(),
): Promise<{ at: number; status: number; retryAfter: string | null }[]> {
  const answers: { at: number; status: number; retryAfter: string | null }[] = []
  let reading = true
  const loop = async () => {
    while (reading) {
      try {
        const res = await fetch(`${base}/v1/folders?folder_id=${F.parent}`, { headers: { cookie } })
        await res.arrayBuffer()
        answers.push({ at: Date.now(), status: res.status, retryAfter: res.headers.get('retry-after') })
      } catch (error) {
        answers.push({ at: Date.now(), status: 0, retryAfter: String(error) })
        await sleep(20)
      }
    }
  }
  const loops = Array.from({ length: readers }, loop)
  const ended = sleep(ms).then(() => {
    reading = false
  })
  await during()
  await ended
  await Promise.all(loops)
  return answers
}

const tally = (answers: { status: number }[]) =>
  answers.reduce<Record<number, number>>((counts, { status }) => {
    counts[status] = (counts[status] ?? 0) + 1
    return counts
  }, {})

describe('PostgreSQL behind PgBouncer in transaction mode', { skip: pgbouncerSkip }, () => {
  let db: Awaited<ReturnType<typeof createEmptyDatabase>>
  let bouncer: Pgbouncer
  let pooled: string
  let sql: RawSql
  const services: Service[] = []
  const stores: Store[] = []
  const serve = async (env: Record<string, string>) => {
    const service = await startService(pooled, { ...env, LISTING_CACHE_MB: '0' })
    services.push(service)
    return service
  }

  before(async () => {
    db = await createEmptyDatabase(databaseUrl)
    bouncer = await startPgbouncer(databaseUrl)
    pooled = bouncer.through(db.url)
    // Writes by raw SQL go to the database itself, as another writer's would.
    sql = await openRawSql(db.url)
  })
  after(async () => {
    await Promise.all(services.map((service) => service.stop()))
    for (const store of stores) await store.close()
    await sql?.close()
    bouncer?.close()
    await db?.drop()
  })

  it('runs every command through it: migrate, import, seed, user, session and folder', async () => {
    const env = { DATABASE_URL: pooled, ...POOLED }
    const cli = async (...args: string[]) => {
      const run = await runCli(args, { env })
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`)
      return run.stdout.trim()
    }
    await cli('migrate')
    const dir = tempDir()
    try {
      const data = {
        users: [{ id: F.owner, username: 'pooled' }],
        sessions: [{ id: F.session, user_id: F.owner }],
        folders: [
          { id: F.parent, name: 'followed', owner_id: F.owner },
          ...Array.from({ length: 200 }, (_, i) => ({
            name: `child ${i}`,
            owner_id: F.owner,
            folder_id: F.parent,
          })),
        ],
      }
      await cli('import', writeJson(dir.dir, 'data.json', data))
    } finally {
      dir.remove()
    }
    await cli('seed', '--demo')
    const user = await cli('user', 'add', '--username', 'cli-pooled')
    await cli('session', 'add', '--user', 'cli-pooled')
    const folder = await cli('folder', 'add', '--user', 'cli-pooled', '--name', 'a')
    const other = await cli('folder', 'add', '--user', 'cli-pooled', '--name', 'b')
    await cli('folder', 'rename', folder, '--name', 'a2')
    await cli('folder', 'move', folder, '--parent', other)
    await cli('folder', 'delete', other)
    await cli('user', 'freeze', user)
    assert.match(await cli('folder', 'list', '--user', 'pooled', '--parent', F.parent), /child 0/)
    assert.match(await cli('user', 'list'), /cli-pooled/)
  })

  it('keeps the statement timeout on the server, for a lone statement and in a transaction', async () => {
    const store = await openStore({
      ...TEST_SETTINGS,
      databaseUrl: pooled,
      databasePooler: 'transaction',
      dbStatementTimeoutMs: 400,
    })
    stores.push(store)
    const page = await store.listFolders({ ownerId: F.owner, parentId: F.parent, page: 1, limit: 2 })
    const [first, second] = page?.folders ?? []
    assert.ok(first !== undefined && second !== undefined)
    const waiting = () =>
      withAdminClient(db.url, async (client) => {
        const { rows } = await client.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'folder-service' AND state = 'active'",
        )
        return Number(rows[0]?.n)
      })
    // The owner's row locked by another writer: a rename (one UPDATE) and a move (a
    // transaction) wait for it until the timeout cancels them on the server.
    await withAdminClient(db.url, async (locker) => {
      await locker.query('BEGIN')
      await locker.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [F.owner])
      for (const [name, write] of [
        ['a lone statement', () => store.renameFolder(first.id, 'renamed', Date.now())],
        ['a transaction', () => store.moveFolder(first.id, second.id, Date.now())],
      ] as const) {
        const started = Date.now()
        await assert.rejects(write(), (error: Error) => {
          assert.ok(error instanceof StoreUnavailableError && error.timedOut, `${name}: ${String(error)}`)
          return true
        })
        const took = Date.now() - started
        assert.ok(took < 2000, `${name}: cancelled after ${took} ms`)
        // Nothing of the service still waits on the server: the statement was cancelled there.
        let left = await waiting()
        for (let i = 0; left > 0 && i < 20; i++) left = await sleep(50).then(waiting)
        assert.equal(left, 0, `${name}: statements still running on the server`)
      }
      await locker.query('ROLLBACK')
    })
  })

  it('delivers both feeds: within 300 ms with DATABASE_DIRECT_URL, by the poll without it', async () => {
    const streams: OpenedStream[] = []
    try {
      for (const [name, env, withinMs] of [
        // The poll at its longest: only LISTEN on the direct URL answers this soon.
        [
          'with DATABASE_DIRECT_URL',
          { ...POOLED, DATABASE_DIRECT_URL: db.url, LONG_POLL_INTERVAL_MS: '1000' },
          300,
        ],
        ['without it', { ...POOLED, LONG_POLL_INTERVAL_MS: '250' }, 250 + 400],
      ] as const) {
        const service = await serve(env)
        const tree = await openEventStream(`${service.base}/v1/folders/tree?root=${F.parent}&limit=1000`, {
          cookie,
        })
        streams.push(tree)
        for (let more = true; more;) {
          more = (JSON.parse((await tree.nextEvent(10_000)).data) as { has_more: boolean }).has_more
        }
        let { cursor } = await changesOf(F, service.base, '')
        const delays: number[] = []
        // The first commit is not measured: the LISTEN connection opens with the first wait.
        for (let i = 0; i < 4; i++) {
          const held = changesOf(F, service.base, `cursor=${cursor}&wait=20`)
          await sleep(i === 0 ? 500 : 150)
          const committed = Date.now()
          const id = await insertChild(sql, F, `woken ${name} ${i}`)
          const event = await tree.nextEvent(5000)
          const streamed = Date.now() - committed
          const answer = await held
          const answered = Date.now() - committed
          assert.ok(event.data.includes(id), `${name}: the tree event names the new folder`)
          assert.deepEqual(
            answer.changes.map((change) => change.folder?.id),
            [id],
          )
          cursor = answer.cursor
          if (i > 0) delays.push(streamed, answered)
        }
        assert.ok(
          delays.every((ms) => ms < withinMs),
          `${name}: commit to the tree event and to the changes answer (ms): ${delays.join(', ')}; expected < ${withinMs}`,
        )
      }
    } finally {
      for (const stream of streams) stream.close()
    }
  })

  it('answers 64 connections for several seconds with 200 alone', async () => {
    const service = await serve(POOLED)
    const answers = await readFor(service.base, 64, 3000)
    assert.ok(answers.length > 64, `${answers.length} answers`)
    assert.deepEqual(Object.keys(tally(answers)), ['200'], JSON.stringify(tally(answers)))
  })

  it('rides a restart of the pooler: only 200 or 503 with Retry-After, 200 within 1 s of it accepting', async () => {
    const service = await serve(POOLED)
    let accepting = 0
    const answers = await readFor(service.base, 8, 5000, async () => {
      await sleep(1000)
      bouncer.stop()
      await sleep(500)
      bouncer.start()
      accepting = Date.now()
    })
    const counts = tally(answers)
    assert.deepEqual(
      Object.keys(counts).filter((status) => status !== '200' && status !== '503'),
      [],
      JSON.stringify(counts),
    )
    assert.ok((counts[503] ?? 0) > 0, `the outage was seen: ${JSON.stringify(counts)}`)
    assert.ok(
      answers.every((answer) => answer.status !== 503 || answer.retryAfter !== null),
      'every 503 says Retry-After',
    )
    const back = answers.find((answer) => answer.at >= accepting && answer.status === 200)
    assert.ok(back !== undefined, 'answered 200 after the restart')
    assert.ok(back.at - accepting < 1000, `200 again ${back.at - accepting} ms after the pooler accepted`)
    assert.ok(
      answers.filter((answer) => answer.at > back.at).every((answer) => answer.status === 200),
      'only 200 after the first one',
    )
  })

  it('answers 503 with Retry-After while the pooler refuses clients (no more connections allowed), never 500', async () => {
    // Room for four clients: the service's pool of eight is refused past it, then fits.
    const full = await startPgbouncer(databaseUrl, 'max_client_conn = 4')
    try {
      const service = await startService(full.through(db.url), {
        ...POOLED,
        LISTING_CACHE_MB: '0',
        DB_POOL_SIZE: '8',
      })
      services.push(service)
      const crowded = await readFor(service.base, 16, 2000)
      const counts = tally(crowded)
      assert.deepEqual(
        Object.keys(counts).filter((status) => status !== '200' && status !== '503'),
        [],
        JSON.stringify(counts),
      )
      assert.ok((counts[503] ?? 0) > 0, `the refusal was met: ${JSON.stringify(counts)}`)
      assert.ok(
        crowded.every((answer) => answer.status !== 503 || answer.retryAfter !== null),
        'every 503 says Retry-After',
      )
      assert.ok(
        logRecords(service).some((record) => JSON.stringify(record).includes('no more connections allowed')),
        'the refusal is logged',
      )
      // Within the pooler's room again, only 200.
      const roomy = await readFor(service.base, 2, 1000)
      assert.deepEqual(Object.keys(tally(roomy)), ['200'], JSON.stringify(tally(roomy)))
    } finally {
      full.close()
    }
  })

  it(
    'reads listings on a replica through a pooler of its own (DATABASE_READ_URLS)',
    { skip: replicaSkip },
    async () => {
      const replicaBouncer = await startPgbouncer(replicaUrl)
      try {
        const replicaPort = new URL(replicaUrl).port
        const onReplica = new URL(db.url)
        onReplica.port = replicaPort
        const store = await openStore({
          ...TEST_SETTINGS,
          databaseUrl: pooled,
          databasePooler: 'transaction',
          databaseReadUrls: [replicaBouncer.through(onReplica.toString())],
        })
        stores.push(store)
        const direct = await openStore({ ...TEST_SETTINGS, databaseUrl: db.url })
        stores.push(direct)
        // The session's generation, as a request carries it: a replica that has it may serve.
        const session = await direct.findSessionUser(F.session, Date.now())
        assert.ok(session !== null)
        const query = {
          ownerId: F.owner,
          parentId: F.parent,
          page: 1,
          limit: 50,
          minGeneration: session.generation,
        }
        const expected = await direct.listFolders(query)
        // The replica serves once it has replayed the owner's generation; until then the primary does.
        const deadline = Date.now() + 10_000
        let read = 0
        while (read === 0 && Date.now() < deadline) {
          assert.deepEqual(await store.listFolders(query), expected)
          read = store.readRouting?.().replicas[0]?.reads ?? 0
          if (read === 0) await sleep(50)
        }
        assert.ok(
          read > 0,
          `the replica was read through its pooler: ${JSON.stringify(store.readRouting?.())}`,
        )
      } finally {
        replicaBouncer.close()
      }
    },
  )
})

describe('a transaction pooler used without DATABASE_POOLER', { skip: pgbouncerSkip }, () => {
  let db: Awaited<ReturnType<typeof createEmptyDatabase>>
  let bouncer: Pgbouncer
  let tolerant: Pgbouncer
  let service: Service | undefined

  before(async () => {
    db = await createEmptyDatabase(databaseUrl)
    const store = await openStore({ ...TEST_SETTINGS, databaseUrl: db.url })
    await store.importData(
      validateImport(
        {
          users: [{ id: F.owner, username: 'misconfigured' }],
          sessions: [{ id: F.session, user_id: F.owner }],
          folders: [{ id: F.parent, name: 'followed', owner_id: F.owner }],
        },
        Date.now(),
      ),
    )
    await store.close()
    bouncer = await startPgbouncer(databaseUrl)
    // As an operator might "fix" the refused startup parameters: the named statements remain.
    tolerant = await startPgbouncer(
      databaseUrl,
      'ignore_startup_parameters = statement_timeout, idle_in_transaction_session_timeout',
    )
  })
  after(async () => {
    await service?.stop()
    bouncer?.close()
    tolerant?.close()
    await db?.drop()
  })

  it('stops start-up in one line naming DATABASE_POOLER (a refused startup parameter)', async () => {
    const run = await runCli(['migrate'], { env: { DATABASE_URL: bouncer.through(db.url) } })
    assert.notEqual(run.code, 0)
    const lines = run.stderr.trim().split('\n')
    assert.equal(lines.length, 1, run.stderr)
    assert.match(lines[0] ?? '', /unsupported startup parameter: .*set DATABASE_POOLER=transaction/)
    assert.doesNotMatch(run.stderr, new RegExp(new URL(db.url).password))
  })

  it('answers 503 with Retry-After naming DATABASE_POOLER, never 500 (named statements)', async () => {
    service = await startService(tolerant.through(db.url), { LISTING_CACHE_MB: '0' })
    const base = service.base
    const answers = await readFor(base, 64, 3000)
    const counts = tally(answers)
    assert.deepEqual(
      Object.keys(counts).filter((status) => status !== '200' && status !== '503'),
      [],
      JSON.stringify(counts),
    )
    // Named statements collide on the pooler's shared server connections under this load.
    assert.ok((counts[503] ?? 0) > 0, `the collisions were met: ${JSON.stringify(counts)}`)
    assert.ok(answers.every((answer) => answer.status !== 503 || answer.retryAfter !== null))
    const named = logRecords(service).filter((record) =>
      JSON.stringify(record).includes('DATABASE_POOLER=transaction'),
    )
    assert.ok(named.length > 0, 'a log line names DATABASE_POOLER')
  })
})
