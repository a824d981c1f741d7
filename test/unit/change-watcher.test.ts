import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ChangeWatcher, type HeldClient, type Hold, type WaitEnd } from '../../src/feed/watcher.js'

/** The long-poll watcher against a fake generation source: one read per interval, exact wakes. */

function fakeGenerations(initial: Record<string, number>) {
  const generations = new Map(Object.entries(initial))
  const calls: string[][] = []
  return {
    generations,
    calls,
    store: {
      ownerGenerations: (ids: readonly string[]) => {
        calls.push([...ids])
        return Promise.resolve(
          new Map(ids.flatMap((id) => (generations.has(id) ? [[id, generations.get(id) as number]] : []))),
        )
      },
    },
  }
}

/** A held request's client that stays. */
const never: HeldClient = { destroyed: false }

/** `hold` parks a record whose target reports `wake(end)` and keeps the generation that woke it. */
function parkCalling(
  hold: Hold,
  ownerId: string,
  baseline: number,
  deadline: number,
  wake: (end: WaitEnd) => void,
) {
  const woken = { at: null as number | null }
  const parked = hold.parkTarget(ownerId, baseline, deadline, {
    woken: (end, generation) => {
      woken.at = generation
      wake(end)
    },
  })
  return { woken, unpark: () => hold.unpark(parked) }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('change watcher', () => {
  it('reads nothing while no one waits, then all owners in one read per interval', async () => {
    const fake = fakeGenerations({ a: 1, b: 5 })
    const watcher = new ChangeWatcher(fake.store, { intervalMs: 20, maxWaiters: 10, maxPerHolder: 10 })
    await sleep(60)
    assert.equal(fake.calls.length, 0)
    const holdA = watcher.hold('s')
    const holdB = watcher.hold('s')
    assert.ok(holdA !== null && holdB !== null)
    const ended = Promise.all([
      holdA.until('a', 1, Date.now() + 150, never),
      holdB.until('b', 5, Date.now() + 150, never),
    ])
    await sleep(70)
    assert.ok(fake.calls.length >= 2 && fake.calls.length <= 4, `calls: ${fake.calls.length}`)
    for (const ids of fake.calls) assert.deepEqual([...ids].sort(), ['a', 'b'])
    assert.deepEqual(await ended, ['timeout', 'timeout'])
    holdA.release()
    holdB.release()
    const after = fake.calls.length
    await sleep(60)
    assert.equal(fake.calls.length, after, 'no reads once the waits ended')
    assert.equal(watcher.size, 0)
  })

  it('after hints that name owners reads those alone, and every owner at least once an interval', async () => {
    const fake = fakeGenerations({ a: 1, b: 5, c: 7 })
    const watcher = new ChangeWatcher(fake.store, { intervalMs: 150, maxWaiters: 10, maxPerHolder: 10 })
    const deadline = Date.now() + 2_000
    const a = watcher.hold('s')?.until('a', 1, deadline, never)
    const b = watcher.hold('s')?.until('b', 5, deadline, never)
    void watcher.hold('s')?.until('c', 7, deadline, never)
    watcher.nudge('a')
    await sleep(5)
    assert.deepEqual(fake.calls.at(-1), ['a', 'b', 'c'], 'the first read covers every owner')
    fake.generations.set('b', 6)
    watcher.nudge('b')
    // Hints during that read: one read for both owners after it.
    watcher.nudge('c')
    watcher.nudge('a')
    assert.equal(await b, 'changed')
    await sleep(5)
    assert.deepEqual(fake.calls.slice(1, 3), [['b'], ['c', 'a']])
    watcher.nudge('unknown')
    await sleep(5)
    assert.equal(fake.calls.length, 3, 'a hint about an owner nobody waits for reads nothing')
    watcher.nudge(null)
    await sleep(5)
    assert.deepEqual(fake.calls.at(-1), ['a', 'c'], 'a hint naming no owner reads every owner')
    // Hints about `c` alone, every 10 ms for three intervals: every owner is read meanwhile.
    const from = fake.calls.length
    for (let i = 0; i < 45; i++) {
      watcher.nudge('c')
      await sleep(10)
    }
    const full = fake.calls.slice(from).filter((ids) => ids.length === 2).length
    assert.ok(full >= 2, `${full} reads of every owner during 450 ms of hints, interval 150 ms`)
    assert.ok(fake.calls.slice(from).length - full > full, 'most reads are of the hinted owner alone')
    fake.generations.set('a', 2)
    assert.equal(await a, 'changed', 'woken by a read at the interval without a hint about it')
    watcher.close()
  })

  it('wakes exactly the waiters whose owner moved', async () => {
    const fake = fakeGenerations({ a: 1, b: 5 })
    const watcher = new ChangeWatcher(fake.store, { intervalMs: 10, maxWaiters: 10, maxPerHolder: 10 })
    const a = watcher.hold('s')?.until('a', 1, Date.now() + 300, never)
    const b = watcher.hold('s')?.until('b', 5, Date.now() + 300, never)
    const started = Date.now()
    fake.generations.set('a', 2)
    assert.equal(await a, 'changed')
    assert.ok(Date.now() - started < 100)
    assert.equal(await b, 'timeout')
  })

  it('reads at once the owner of a follower that parks just after a hint about it', async () => {
    // The follower read before the commit and parks after its hint came: not a second's wait.
    const fake = fakeGenerations({ a: 1, other: 1 })
    const watcher = new ChangeWatcher(fake.store, { intervalMs: 1000, maxWaiters: 10, maxPerHolder: 10 })
    void watcher.hold('s')?.until('other', 1, Date.now() + 3000, never)
    fake.generations.set('a', 2)
    watcher.nudge('a')
    await sleep(20)
    const started = Date.now()
    assert.equal(await watcher.hold('s')?.until('a', 1, Date.now() + 3000, never), 'changed')
    assert.ok(Date.now() - started < 200, `woken ${Date.now() - started} ms after it parked`)
    // A hint older than that is not kept: the follower waits for the read of every owner.
    watcher.nudge('b')
    fake.generations.set('b', 2)
    await sleep(2100)
    const b = watcher.hold('s')?.until('b', 1, Date.now() + 3000, never)
    await sleep(50)
    assert.ok(!fake.calls.some((ids) => ids.length === 1 && ids[0] === 'b'), 'b is not read alone')
    assert.equal(await b, 'changed')
    watcher.close()
  })

  it('while hints name owners, reads every owner no more often than 50 times that read takes', async () => {
    const fake = fakeGenerations({ a: 1, b: 1, c: 1 })
    // A read of every owner takes 20 ms; the interval is 50 ms: every owner read once a second at most.
    const store = {
      ownerGenerations: async (ids: readonly string[]) => {
        if (ids.length > 1) await sleep(20)
        return fake.store.ownerGenerations(ids)
      },
    }
    const watcher = new ChangeWatcher(store, { intervalMs: 50, maxWaiters: 10, maxPerHolder: 10 })
    const deadline = Date.now() + 5000
    for (const owner of ['a', 'b', 'c']) void watcher.hold('s')?.until(owner, 1, deadline, never)
    await sleep(100)
    const from = fake.calls.length
    for (let i = 0; i < 150; i++) {
      watcher.nudge('c')
      await sleep(10)
    }
    const full = fake.calls.slice(from).filter((ids) => ids.length === 3).length
    assert.ok(full >= 1 && full <= 3, `${full} reads of every owner in about 1.5 s of hints`)
    watcher.close()
  })

  it('tells the generation that woke a hold, so the read after it is at least that new', async () => {
    const fake = fakeGenerations({ a: 1 })
    const watcher = new ChangeWatcher(fake.store, { intervalMs: 10, maxWaiters: 10, maxPerHolder: 10 })
    const hold = watcher.hold('s')
    assert.ok(hold !== null)
    fake.generations.set('a', 7)
    assert.equal(await hold.until('a', 1, Date.now() + 300, never), 'changed')
    assert.equal(hold.wokenAt, 7)
    assert.equal(await hold.until('a', 7, Date.now() + 30, never), 'timeout')
    assert.equal(hold.wokenAt, null)
    hold.release()
  })

  it('bounds holds per holder (a session) apart from the process bound', () => {
    const fake = fakeGenerations({})
    const watcher = new ChangeWatcher(fake.store, { intervalMs: 10, maxWaiters: 10, maxPerHolder: 2 })
    const first = watcher.hold('one')
    assert.ok(first !== null && watcher.hold('one') !== null)
    assert.equal(watcher.hold('one'), null, 'a third hold of one holder')
    assert.ok(watcher.hold('two') !== null, 'another holder still holds')
    first.release()
    assert.ok(watcher.hold('one') !== null, 'a released slot is the holder’s again')
  })

  it("bounds holds, frees a slot on release, a departed client's when a slot is wanted, and answers all on close", async () => {
    const fake = fakeGenerations({ a: 1 })
    const watcher = new ChangeWatcher(fake.store, { intervalMs: 10, maxWaiters: 2, maxPerHolder: 10 })
    const one = watcher.hold('s')
    const two = watcher.hold('s')
    assert.ok(one !== null && two !== null)
    assert.equal(watcher.hold('s'), null)
    const gone = { destroyed: false }
    const leaving = one.until('a', 1, Date.now() + 5000, gone)
    const staying = two.until('a', 1, Date.now() + 5000, never)
    gone.destroyed = true
    const third = watcher.hold('s') // wanted: the departed client's slot is freed first
    assert.equal(await leaving, 'gone')
    assert.ok(third !== null)
    third.release()
    one.release() // harmless: the watcher released it already
    one.release() // twice too
    assert.equal(watcher.size, 1)
    watcher.close()
    assert.equal(await staying, 'closed')
    assert.equal(watcher.open, false)
  })

  it('parks a caller as a record: woken by a change, at its deadline by one sweep, taken back without a wake', async (t) => {
    const fake = fakeGenerations({ a: 1 })
    const watcher = new ChangeWatcher(fake.store, { intervalMs: 10, maxWaiters: 10, maxPerHolder: 10 })
    t.after(() => watcher.close())
    const hold = watcher.hold('s')
    assert.ok(hold !== null)
    const wakes: string[] = []
    const wake = (name: string) => (end: string) => void wakes.push(`${name} ${end}`)
    const first = parkCalling(hold, 'a', 1, Date.now() + 5000, wake('changed'))
    fake.generations.set('a', 4)
    await sleep(60)
    assert.deepEqual(wakes, ['changed changed'])
    assert.equal(first.woken.at, 4)

    const started = Date.now()
    parkCalling(hold, 'a', 4, started + 80, wake('early'))
    parkCalling(hold, 'a', 4, started + 120, wake('late'))
    parkCalling(hold, 'a', 4, started + 100, wake('left')).unpark()
    await sleep(60)
    assert.deepEqual(wakes, ['changed changed'], 'nothing before its deadline')
    await sleep(400)
    assert.deepEqual(wakes, ['changed changed', 'early timeout', 'late timeout'])
    const reads = fake.calls.length
    await sleep(60)
    assert.equal(fake.calls.length, reads, 'no reads once nothing is parked')

    parkCalling(hold, 'a', 4, Date.now() + 5000, wake('open'))
    watcher.close()
    parkCalling(hold, 'a', 4, Date.now() + 5000, wake('after'))
    assert.deepEqual(wakes.slice(3), ['open closed'])
    await sleep(0)
    assert.deepEqual(wakes.slice(3), ['open closed', 'after closed'])
    hold.release()
  })

  it('reads the held sessions again while they wait, in one call for all, and ends only the refused ones', async (t) => {
    const fake = fakeGenerations({ a: 1, b: 1 })
    const asked: string[][] = []
    const refused = new Set<string>()
    const watcher = new ChangeWatcher(fake.store, {
      intervalMs: 1000,
      maxWaiters: 10,
      maxPerHolder: 10,
      sessions: {
        everyMs: 30,
        refused: (holders) => {
          asked.push([...holders])
          return Promise.resolve(new Set(holders.filter((holder) => refused.has(holder))))
        },
      },
    })
    t.after(() => watcher.close())
    await sleep(80)
    assert.equal(asked.length, 0, 'nothing read while nothing is held')
    const frozen = watcher.hold('frozen')
    const kept = watcher.hold('kept')
    assert.ok(frozen !== null && kept !== null)
    const heldEnd = frozen.until('a', 1, Date.now() + 5000, never)
    const wakes: string[] = []
    parkCalling(frozen, 'b', 1, Date.now() + 5000, (end) => void wakes.push(`frozen ${end}`))
    parkCalling(kept, 'a', 1, Date.now() + 5000, (end) => void wakes.push(`kept ${end}`))
    await sleep(80)
    assert.ok(asked.length >= 1, 'read while held')
    for (const holders of asked) assert.deepEqual([...holders].sort(), ['frozen', 'kept'])
    assert.deepEqual(wakes, [], 'no session refused: every wait goes on')
    refused.add('frozen')
    assert.equal(await heldEnd, 'session')
    await sleep(10)
    assert.deepEqual(wakes, ['frozen session'])
    const reads = asked.length
    await sleep(80)
    assert.ok(asked.length > reads, 'the kept wait is still read')
    assert.deepEqual(asked.at(-1), ['kept'])
    assert.deepEqual(wakes, ['frozen session'], 'the kept wait is not ended')
    watcher.close()
    const closedAt = asked.length
    await sleep(80)
    assert.equal(asked.length, closedAt, 'nothing read once closed')
  })
})
