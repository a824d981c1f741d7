import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { MAX_LIMIT } from '../../src/schemas/list-folders-query.js'
import { openStore } from '../../src/store/open-store.js'
import type { Store } from '../../src/store/store.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import {
  crashPrimary,
  formationDatabase,
  formationEvents,
  formationHealthy,
  formationSkip,
  nodesLacking,
  primaryFolderNames,
  primaryNode,
  psqlInsert,
  restartNode,
  switchover,
  type PsqlWrite,
} from '../../harness/failover-formation.js'
import { followedFolder, seedFollowed } from '../helpers/fixtures/followed-folder.js'
import { openEventStream, type OpenedStream } from '../helpers/http/event-stream-client.js'
import { Load, sleep, tally, type Outcome } from '../helpers/http/load.js'
import { logRecords, startService, type Service } from '../helpers/processes/cli.js'

/**
 * The service on a real pg_auto_failover formation (.ci/postgres-failover.sh: a monitor and
 * three data nodes on loopback) through its `pg_autoctl show uri`, under load the whole time:
 * readers of a folder (cached and uncached pages), followers of its changes and of its tree
 * (long-poll and Server-Sent Events each), and a writer adding sub-folders through psql on
 * the same multi-host URL. Then a planned switchover, then a crash of the primary (keeper
 * and postgres killed). Every answer is checked against what the writer committed and the
 * primary still holds, every follower's replayed state against the final listing, and that
 * listing against the primary's own rows. A write psql saw acknowledged that the primary no
 * longer holds was lost by the database, not by the service (which never deletes a folder):
 * it is reported with the monitor's events of the run, and every answer and follower is
 * still checked against what the database holds.
 */

const SEEDED = 10
/**
 * FAILOVER_WAIT_MS of the service under test: above what the formation takes to move its
 * primary on a loaded 2-core machine (8.5 s without a primary in a CI run; a switchover 10.9 s
 * at a load average of 10), so a switchover is only slower; the readiness check holds
 * the 503s to the times a primary was missing past it, whatever the machine does.
 */
const WAIT_MS = 20_000

type FolderBody = { id: string; name: string }
type FeedBody = {
  changes: { type: string; folder?: FolderBody; id?: string }[]
  cursor: string
  has_more: boolean
}

/** A follower's state: the folders it holds, the statuses it was answered. */
interface Follower {
  name: string
  folders: Map<string, string>
  statuses: number[]
  stop(): Promise<void>
}

function apply(folders: Map<string, string>, body: FeedBody): void {
  for (const change of body.changes) {
    if (change.type === 'upsert' && change.folder !== undefined)
      folders.set(change.folder.id, change.folder.name)
    if (change.type === 'remove' && change.id !== undefined) folders.delete(change.id)
  }
}

const retryAfterMs = (value: string | null | undefined) => Number(value ?? '1') * 1000

/** A feed to follow: where, as whom, from which state and cursor (null: a download first). */
interface Feed {
  name: string
  url: string
  cookie: string
  start: Map<string, string>
  cursor: string | null
}

interface FollowState {
  folders: Map<string, string>
  statuses: number[]
  running: boolean
}

/**
 * Runs `session` (one request, or one stream) again and again from the cursor the last one
 * reached, until stopped; `interrupt` ends a session in progress.
 */
function follower(
  feed: Feed,
  session: (at: string | null, state: FollowState) => Promise<string | null>,
  interrupt: () => void = () => undefined,
): Follower {
  const state: FollowState = { folders: new Map(feed.start), statuses: [], running: true }
  const loop = (async () => {
    let at = feed.cursor
    while (state.running) at = await session(at, state)
  })()
  return {
    name: feed.name,
    folders: state.folders,
    statuses: state.statuses,
    async stop() {
      state.running = false
      interrupt()
      await loop
    },
  }
}

/** A long-poll follower: on 503 it waits Retry-After and asks again from the same cursor. */
function longPoll(feed: Feed): Follower {
  return follower(feed, async (at, state) => {
    let res: Response
    try {
      res = await fetch(`${feed.url}${at === null ? '' : `&cursor=${at}&wait=1`}`, {
        headers: { cookie: feed.cookie },
      })
    } catch {
      state.statuses.push(0)
      await sleep(200)
      return at
    }
    state.statuses.push(res.status)
    if (res.status === 200) {
      const body = (await res.json()) as FeedBody
      apply(state.folders, body)
      return body.cursor
    }
    await res.body?.cancel()
    if (res.status !== 503) throw new Error(`${feed.name}: ${res.status}`)
    await sleep(retryAfterMs(res.headers.get('retry-after')))
    return at
  })
}

/** An EventSource-like follower: reconnects with Last-Event-ID after an error event or an end. */
function eventStream(feed: Feed): Follower {
  let stream: OpenedStream | undefined
  const session = async (at: string | null, state: FollowState): Promise<string | null> => {
    const headers: Record<string, string> = { cookie: feed.cookie }
    if (at !== null) headers['last-event-id'] = at
    try {
      stream = await openEventStream(feed.url, headers)
    } catch {
      state.statuses.push(0)
      await sleep(200)
      return at
    }
    state.statuses.push(stream.status)
    if (stream.status !== 200) {
      if (stream.status !== 503) throw new Error(`${feed.name}: ${stream.status} ${stream.body}`)
      await sleep(retryAfterMs(stream.headers['retry-after']))
      return at
    }
    let lastId = at
    for (let ended = false; !ended && state.running;) {
      let event
      try {
        event = await stream.nextEvent(1000)
      } catch {
        ended = await Promise.race([stream.ended.then(() => true), sleep(0).then(() => false)])
        continue
      }
      if (event.event === 'error') {
        const problem = JSON.parse(event.data) as { status: number }
        state.statuses.push(problem.status)
        if (problem.status !== 503) throw new Error(`${feed.name}: error event ${event.data}`)
        break
      }
      apply(state.folders, JSON.parse(event.data) as FeedBody)
      lastId = event.id
    }
    stream.close()
    if (state.running) await sleep(300)
    return lastId
  }
  return follower(feed, session, () => stream?.close())
}

describe('a pg_auto_failover formation: switchover and crash under load', { skip: formationSkip }, () => {
  const f = followedFolder('fa11a000')
  const cookie = `session_id=${f.session}`
  const seeded = Array.from({ length: SEEDED }, (_, i) => ({ id: randomUUID(), name: `seed ${i}` }))
  let db: Awaited<ReturnType<typeof formationDatabase>>
  let store: Store
  let service: Service
  const writes: PsqlWrite[] = []
  let writing = true
  let writer: Promise<void>
  let load: Load
  /** /readyz asked throughout, as a load balancer would */
  let readiness: Load
  let followers: Follower[] = []
  let outcomes: Outcome[] = []
  /** when the run began, for the monitor's events */
  let since = 0
  /**
   * The switchover and the crash: when the primary began to go, and the latest a request may
   * still miss the new one (the switchover's end; 1 s after the new primary accepted a write).
   */
  const moves: { name: string; at: number; end: number }[] = []
  /** acknowledged writes the primary no longer holds: the database's loss, reported at the end */
  const lostByDatabase = new Set<string>()

  before(async () => {
    if (process.env.TEST_FAILOVER_URL === undefined)
      throw new Error('TEST_FAILOVER_URL is not set (CI starts the formation)')
    // An earlier run's crashed node may still be rejoining.
    for (let waited = 0; !formationHealthy() && waited < 60_000; waited += 500) await sleep(500)
    assert.ok(formationHealthy(), 'the formation has a primary and two secondaries')
    since = Date.now()
    db = await formationDatabase()
    store = await openStore({ ...TEST_SETTINGS, databaseUrl: db.url, failoverWaitMs: WAIT_MS })
    await seedFollowed(store, f, {})
    for (const folder of seeded) {
      await store.addFolder({
        ...folder,
        folder_id: f.parent,
        owner_id: f.owner,
        is_deleted: false,
        created_at: Date.now(),
        updated_at: Date.now(),
      })
    }
    service = await startService(db.url, {
      FAILOVER_WAIT_MS: String(WAIT_MS),
      DB_CONNECT_TIMEOUT_MS: '1000',
      DB_POOL_SIZE: '6',
      LONG_POLL_INTERVAL_MS: '250',
    })
    const base = service.base
    const start = new Map(seeded.map((folder) => [folder.id, folder.name]))
    const fresh = async (path: string) => {
      const res = await fetch(`${base}${path}`, { headers: { cookie } })
      assert.equal(res.status, 200)
      return ((await res.json()) as FeedBody).cursor
    }
    const changes = `/v1/folders/changes?folder_id=${f.parent}&limit=1000`
    const tree = `/v1/folders/tree?root=${f.parent}&limit=1000`
    const feed = (name: string, path: string, cursor: string | null): Feed => ({
      name,
      url: `${base}${path}`,
      cookie,
      start: cursor === null ? new Map<string, string>() : start,
      cursor,
    })
    followers = [
      longPoll(feed('changes long-poll', changes, await fresh(changes))),
      eventStream(feed('changes stream', changes, await fresh(changes))),
      longPoll(feed('tree long-poll', tree, null)),
      eventStream(feed('tree stream', tree, null)),
    ]
    // Readers: the same page over and over (a cache hit until the next write), and pages of
    // changing sizes (a cache miss each).
    readiness = new Load({
      base,
      connections: 1,
      path: () => '/readyz',
      timeoutMs: WAIT_MS + 5000,
      pauseMs: 100,
    }).start()
    load = new Load({
      base,
      connections: 4,
      path: (w, n) => `/v1/folders?folder_id=${f.parent}&limit=${w % 2 === 0 ? 1000 : 500 + (n % 400)}`,
      cookie,
      timeoutMs: WAIT_MS + 5000,
      pauseMs: 10,
    }).start()
    writer = (async () => {
      for (let i = 0; writing; i++) {
        const name = `write ${String(i).padStart(5, '0')}`
        const sql = `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at) VALUES ('${randomUUID()}', '${name}', '${f.parent}', '${f.owner}', false, now(), now())`
        writes.push(await psqlInsert(db.url, sql, name))
        await sleep(50)
      }
    })()
    await sleep(2000)
  })

  after(async () => {
    writing = false
    await writer
    await load?.stop()
    await readiness?.stop()
    await Promise.all(followers.map((follower) => follower.stop()))
    await service?.stop()
    await store?.close()
    await db?.drop().catch(() => undefined)
  })

  /**
   * Every 200 listing holds what was committed before it was asked, and nothing unwritten.
   * An acknowledged write that `held` (the primary's rows now) lacks is the database's loss.
   */
  function checkAnswers(from: number, to: number, held: Set<string>) {
    const mine = outcomes.filter((o) => o.startedAt >= from && o.startedAt < to)
    for (const w of writes) if (w.ok && !held.has(w.name)) lostByDatabase.add(w.name)
    for (const o of mine) {
      if (o.status !== 200) continue
      const page = (JSON.parse(o.body) as { folders: FolderBody[] }).folders.map((x) => x.name)
      const names = new Set(page)
      // A page holds at most MAX_LIMIT folders, the first by name: a full one says nothing of
      // the names after its last.
      const limit = Math.min(Number(/limit=(\d+)/.exec(o.path)?.[1]), MAX_LIMIT)
      const last = names.size < limit ? undefined : page.at(-1)
      for (const w of writes) {
        if (w.ok && w.endedAt < o.startedAt && held.has(w.name) && (last === undefined || w.name <= last))
          assert.ok(names.has(w.name), `${o.path} at ${o.startedAt} lacks ${w.name}`)
      }
      for (const name of names) {
        if (name.startsWith('write '))
          assert.ok(
            writes.some((w) => w.name === name && w.startedAt <= o.endedAt),
            `${name} served but never written`,
          )
      }
    }
    return mine
  }

  it('a planned switchover: answers are slower, never an error', async () => {
    const before = primaryNode()
    const from = Date.now()
    await switchover()
    moves.push({ name: 'switchover', at: from, end: Date.now() })
    await sleep(2000)
    outcomes = load.outcomes
    const mine = checkAnswers(from, Date.now(), await primaryFolderNames(db.url, f.parent))
    const after = primaryNode()
    assert.notEqual(after?.name, before?.name, 'the primary moved')
    assert.deepEqual(Object.keys(tally(mine)), ['200'], JSON.stringify(tally(mine)))
    const slowest = Math.max(...mine.map((o) => o.endedAt - o.startedAt))
    const moved = logRecords(service).filter((r) => String(r.msg).includes('the primary moved'))
    assert.equal(moved.length, 1, 'one log line for the change')
    console.log(`switchover: ${JSON.stringify(tally(mine))}, slowest ${slowest} ms; ${String(moved[0]?.msg)}`)
  })

  it('a crash of the primary: 200, or 503 with Retry-After; back within 1 s of the new primary accepting writes', async () => {
    while (!formationHealthy()) await sleep(500)
    const crashedAt = Date.now()
    const crashed = crashPrimary()
    let accepted: PsqlWrite | undefined
    while (accepted === undefined && Date.now() - crashedAt < 60_000) {
      accepted = writes.find((w) => w.ok && w.startedAt > crashedAt)
      await sleep(100)
    }
    assert.ok(accepted !== undefined, 'a write succeeded after the crash')
    moves.push({ name: 'crash', at: crashedAt, end: accepted.endedAt + 1000 })
    await sleep(3000)
    const to = Date.now()
    const held = await primaryFolderNames(db.url, f.parent)
    restartNode(crashed)
    outcomes = load.outcomes
    const mine = checkAnswers(crashedAt, to, held)
    assert.notEqual(primaryNode()?.name, crashed, 'the primary moved')
    for (const o of mine) {
      assert.ok(
        o.status === 200 || (o.status === 503 && o.headers['retry-after'] !== undefined),
        `${o.status} ${o.error} after ${o.endedAt - o.startedAt} ms, ${o.startedAt - crashedAt} ms after the crash: ${o.body.slice(0, 200)}`,
      )
    }
    const late = mine.filter((o) => o.startedAt > accepted.endedAt + 1000 && o.status !== 200)
    assert.deepEqual(
      late.map((o) => o.status),
      [],
      'every request from 1 s after the new primary accepted writes is 200',
    )
    const errors = mine.filter((o) => o.status !== 200)
    const window =
      errors.length === 0
        ? 0
        : Math.max(...errors.map((o) => o.endedAt)) - Math.min(...errors.map((o) => o.startedAt))
    console.log(
      `crash: ${JSON.stringify(tally(mine))}, error window ${window} ms, writes accepted ${accepted.endedAt - crashedAt} ms after the crash`,
    )
  })

  it('/readyz is ready throughout, except once a primary has been missing past FAILOVER_WAIT_MS; /metrics counts both changes of primary', async () => {
    // Readiness follows what requests get (postgres-connections.ts ping): while a search for
    // the primary is inside FAILOVER_WAIT_MS requests wait and are served, so /readyz is 200;
    // past it they get 503, and so does /readyz. A quick failover never shows a 503; on a
    // loaded machine the formation can take longer than the wait.
    assert.equal(moves.length, 2, 'the switchover and the crash ran')
    const answers = tally(readiness.outcomes)
    for (const o of readiness.outcomes) {
      if (o.status === 200) continue
      const when = moves.map(
        (m) =>
          `${o.startedAt - m.at}..${o.endedAt - m.at} ms after the ${m.name} began (ended at ${m.end - m.at} ms)`,
      )
      assert.ok(
        o.status === 503 && o.headers['retry-after'] !== undefined,
        `${o.status} ${o.error}: ${when.join('; ')}`,
      )
      assert.ok(
        moves.some((m) => o.endedAt >= m.at + WAIT_MS && o.startedAt <= m.end),
        `a 503 outside a primary missing past FAILOVER_WAIT_MS: ${when.join('; ')}`,
      )
    }
    const metrics = await (await fetch(`${service.base}/metrics`)).text()
    assert.match(metrics, /^db_primary_changes_total 2$/m)
    const without = Number(/^db_without_primary_seconds_total (\S+)$/m.exec(metrics)?.[1])
    assert.ok(without > 0, `time without a primary: ${without} s`)
    assert.match(metrics, /^db_primary\{host="127\.0\.0\.1:600[123]"\} 1$/m)
    console.log(`readyz: ${JSON.stringify(answers)}; ${without.toFixed(1)} s without a primary`)
  })

  it('every follower holds what the final listing holds; no 410, nothing written lost', async () => {
    writing = false
    await writer
    // Every page: a page holds at most MAX_LIMIT folders.
    const listed = new Map<string, string>()
    for (let page = 1, more = true; more; page++) {
      const res = await fetch(
        `${service.base}/v1/folders?folder_id=${f.parent}&limit=${MAX_LIMIT}&page=${page}`,
        {
          headers: { cookie },
        },
      )
      assert.equal(res.status, 200)
      const { folders } = (await res.json()) as { folders: FolderBody[] }
      for (const folder of folders) listed.set(folder.id, folder.name)
      more = folders.length === MAX_LIMIT
    }
    const held = await primaryFolderNames(db.url, f.parent)
    const missing = [...held].filter((name) => ![...listed.values()].includes(name))
    if (missing.length > 0) {
      // Where the service reads, and what each node holds: for the message.
      const primaryLine = /^db_primary\{.*$/m.exec(await (await fetch(`${service.base}/metrics`)).text())?.[0]
      console.log(
        `the final listing lacks ${missing.join(', ')}; the service's ${primaryLine ?? 'db_primary: none'}; the nodes:\n${await nodesLacking(db.url, f.parent, missing)}\nthe monitor's events:\n${formationEvents(since)}`,
      )
    }
    assert.deepEqual(new Set(listed.values()), held, 'the final listing is what the primary holds')
    for (const w of writes.filter((w) => w.ok)) {
      if (!held.has(w.name)) lostByDatabase.add(w.name)
      else assert.ok([...listed.values()].includes(w.name), `${w.name} was acknowledged and lost`)
    }
    if (lostByDatabase.size > 0) {
      console.log(
        `the database lost ${lostByDatabase.size} acknowledged write(s): ${[...lostByDatabase].join(', ')}; the monitor's events:\n${formationEvents(since)}`,
      )
    }
    const deadline = Date.now() + 15_000
    for (const follower of followers) {
      while (
        Date.now() < deadline &&
        JSON.stringify([...follower.folders].sort()) !== JSON.stringify([...listed].sort())
      )
        await sleep(200)
      assert.deepEqual(new Map([...follower.folders].sort()), new Map([...listed].sort()), follower.name)
      assert.ok(
        follower.statuses.every((s) => s === 200 || s === 503 || s === 0),
        `${follower.name}: ${follower.statuses.join(',')}`,
      )
    }
  })
})
