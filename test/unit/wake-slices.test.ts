import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ChangeWatcher, type WaitEnd } from '../../src/feed/watcher.js'
import { WAKE_SLICE } from '../../src/feed/turn-slices.js'
import { SHARED_READ_MS, SharedReads } from '../../src/feed/shared-reads.js'
import { SessionLookups } from '../../src/http/feeds/session-lookups.js'
import { beatEvery } from '../../src/http/feeds/heartbeats.js'
import type { ServerResponse } from 'node:http'
import type { SessionUser } from '../../src/store/store.js'

/**
 * A wake of many followers in slices of the event loop, and the reads the followers of one
 * wake share: counted, not timed.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a wake in slices', () => {
  it('wakes at most WAKE_SLICE followers in one turn of the loop, each once, none taken back', async () => {
    let generation = 1
    const store = {
      ownerGenerations: (ids: readonly string[]) =>
        Promise.resolve(new Map(ids.map((id) => [id, generation]))),
    }
    const total = 3 * WAKE_SLICE + 7
    const watcher = new ChangeWatcher(store, { intervalMs: 5, maxWaiters: total, maxPerHolder: total })
    const woken: WaitEnd[][] = Array.from({ length: total }, () => [])
    const unparks: (() => void)[] = []
    for (let i = 0; i < total; i++) {
      const hold = watcher.hold(`s${i}`)
      assert.ok(hold !== null)
      const parked = hold.parkTarget('owner', 1, Date.now() + 60_000, { woken: (end) => woken[i]?.push(end) })
      unparks.push(() => hold.unpark(parked))
    }
    // Per turn of the loop (one setImmediate callback after another), the followers woken in it.
    const perTurn: number[] = []
    let counted = 0
    const count = () => woken.reduce((sum, ends) => sum + ends.length, 0)
    let turns = 0
    const watch = () => {
      const now = count()
      if (now > counted) perTurn.push(now - counted)
      counted = now
      if (now < total - 1 && turns++ < 10_000) setImmediate(watch)
    }
    setImmediate(watch)
    generation = 2
    watcher.nudge('owner')
    // Taken back after the wake began: the client of the last follower left.
    setImmediate(() => unparks[total - 1]?.())
    for (let waited = 0; count() < total - 1 && waited < 200; waited++) await sleep(5)
    await sleep(20)
    assert.equal(count(), total - 1, 'every follower but the one taken back was woken')
    assert.deepEqual(woken[total - 1], [], 'the record taken back was not woken')
    for (const ends of woken.slice(0, total - 1)) assert.deepEqual(ends, ['changed'])
    assert.ok(perTurn.length >= 4, `turns: ${perTurn.join(', ')}`)
    for (const n of perTurn) assert.ok(n <= WAKE_SLICE, `${n} followers woken in one turn`)
    watcher.close()
  })
})

/** Counts the turns of the event loop (a setImmediate callback each) until stopped. */
function countTurns(): { readonly turn: number; stop(): void } {
  const counted = { turn: 0, running: true }
  const tick = () => {
    counted.turn++
    if (counted.running) setImmediate(tick)
  }
  setImmediate(tick)
  return {
    get turn() {
      return counted.turn
    },
    stop: () => {
      counted.running = false
    },
  }
}

/** Asserts that `turns` (the turn each item was served in) spread over 4 turns or more, WAKE_SLICE a turn at most. */
function assertSliced(turns: readonly number[], what: string): void {
  const perTurn = new Map<number, number>()
  for (const at of turns) perTurn.set(at, (perTurn.get(at) ?? 0) + 1)
  assert.ok(perTurn.size >= 4, `${what} in turns: ${[...perTurn.values()].join(', ')}`)
  for (const n of perTurn.values()) assert.ok(n <= WAKE_SLICE, `${n} ${what} in one turn`)
}

describe('the session checks after a wake', () => {
  it('answers at most WAKE_SLICE sessions in one turn of the loop, each its own, in order', async () => {
    const userOf = (id: string): SessionUser => ({
      id: `user of ${id}`,
      username: id,
      avatar_url: null,
      is_suspended: false,
      generation: 1,
    })
    let statements = 0
    const lookups = new SessionLookups({
      findSessionUser: (id) => {
        statements++
        return Promise.resolve(userOf(id))
      },
      findSessionUsers: (ids) => {
        statements++
        return Promise.resolve(ids.map(userOf))
      },
    })
    // Asked in one turn, as the followers of one shared read ask: lone sessions and a group.
    const total = 3 * WAKE_SLICE + 7
    const ids = Array.from({ length: total }, (_, i) => `s${i}`)
    const turns = countTurns()
    const answeredIn: number[] = []
    const group = lookups.findAll(ids.slice(0, 10)).then((users) => {
      answeredIn.push(...users.map(() => turns.turn))
      return users
    })
    const lone = ids.slice(10).map((id) =>
      lookups.find(id).then((user) => {
        answeredIn.push(turns.turn)
        return user
      }),
    )
    const users = [...(await group), ...(await Promise.all(lone))]
    turns.stop()
    assert.deepEqual(
      users.map((user) => user?.id),
      ids.map((id) => `user of ${id}`),
    )
    assert.ok(statements <= Math.ceil(total / 256) + 1, `${statements} statements`)
    assertSliced(answeredIn, 'sessions answered')
  })
})

describe('the session checks of a wake asked over many turns', () => {
  it('leave in statements of up to 256 sessions, at most 4 out at once', async () => {
    const userOf = (id: string): SessionUser => ({
      id: `user of ${id}`,
      username: id,
      avatar_url: null,
      is_suspended: false,
      generation: 1,
    })
    let statements = 0
    let out = 0
    let mostOut = 0
    // Each statement takes 5 ms, as a round trip to PostgreSQL might.
    const answer = async <T>(value: T): Promise<T> => {
      statements++
      mostOut = Math.max(mostOut, ++out)
      await sleep(5)
      out--
      return value
    }
    const lookups = new SessionLookups({
      findSessionUser: (id) => answer(userOf(id)),
      findSessionUsers: (ids) => answer(ids.map(userOf)),
    })
    // A sliced wake of 10,000 followers: a group of WAKE_SLICE sessions asks in each turn.
    const groups = Math.ceil(10_000 / WAKE_SLICE)
    const asked: Promise<(SessionUser | null)[]>[] = []
    for (let g = 0; g < groups; g++) {
      const ids = Array.from({ length: WAKE_SLICE }, (_, i) => `s${g * WAKE_SLICE + i}`)
      asked.push(lookups.findAll(ids))
      await new Promise((resolve) => setImmediate(resolve))
    }
    const users = (await Promise.all(asked)).flat()
    assert.equal(users.length, groups * WAKE_SLICE)
    assert.deepEqual(
      users.map((user) => user?.id),
      users.map((_, i) => `user of s${i}`),
    )
    assert.ok(mostOut <= 4, `${mostOut} statements out at once`)
    assert.ok(statements <= Math.ceil((groups * WAKE_SLICE) / 256) + 8, `${statements} statements`)
  })
})

describe('the heartbeat of many streams', () => {
  it('writes at most WAKE_SLICE streams in one turn of the loop, each once, none that ended', async () => {
    const total = 3 * WAKE_SLICE + 7
    const turns = countTurns()
    const beatIn: number[][] = Array.from({ length: total }, () => [])
    const streams = beatIn.map(
      (beats) => ({ write: () => beats.push(turns.turn) }) as unknown as ServerResponse,
    )
    const stops = streams.map((stream) => beatEvery(30, stream))
    // The last stream ends while the first slice is written.
    const firstWritten = () => (beatIn[0]?.length ?? 0) > 0
    while (!firstWritten()) await new Promise((resolve) => setImmediate(resolve))
    stops[total - 1]?.()
    while ((beatIn[total - 2]?.length ?? 0) === 0) await new Promise((resolve) => setImmediate(resolve))
    for (const stop of stops.slice(0, total - 1)) stop()
    turns.stop()
    assert.deepEqual(beatIn[total - 1], [], 'the stream that ended got no beat')
    for (const beats of beatIn.slice(0, total - 1)) assert.equal(beats.length, 1)
    assertSliced(
      beatIn.slice(0, total - 1).map(([at]) => at ?? -1),
      'streams beaten',
    )
  })
})

describe('shared reads', () => {
  it('one read per key for every follower asking, kept after it settled, a failed one forgotten', async () => {
    const reads = new SharedReads<{ n: number }>()
    let made = 0
    const read = () => Promise.resolve({ n: ++made })
    const first = reads.share('a 7', read)
    const second = reads.share('a 7', read)
    assert.equal(await first, await second, 'the same answer object')
    await sleep(1)
    assert.equal(await reads.share('a 7', read), await first, 'a later slice of the wake finds it')
    assert.equal(made, 1)
    await reads.share('a 8', read)
    assert.equal(made, 2, 'another generation reads again')
    const failing = reads.share('b 1', () => Promise.reject(new Error('outage')))
    await assert.rejects(failing)
    assert.equal((await reads.share('b 1', read)).n, 3, 'after a failure the next follower reads again')
  })

  it('forgets a read SHARED_READ_MS after it began', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
    const reads = new SharedReads<number>()
    let made = 0
    const read = () => Promise.resolve(++made)
    await reads.share('k', read)
    t.mock.timers.tick(SHARED_READ_MS - 1)
    await reads.share('k', read)
    assert.equal(made, 1)
    t.mock.timers.tick(1)
    await reads.share('k', read)
    assert.equal(made, 2)
  })
})
