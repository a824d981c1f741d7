import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { instrumented, type Outcome } from '../../src/store/instrumented-store.js'

/** The Store decorator behind db_operation_duration_seconds. */

class Inner {
  readonly kind = 'fake'
  calls = 0
  work(value: number): Promise<number> {
    this.calls++
    return Promise.resolve(value * 2)
  }
  fail(): Promise<never> {
    return Promise.reject(new Error('down'))
  }
  throwAtOnce(): Promise<never> {
    throw new Error('thrown before any promise')
  }
  plain(): string {
    return `plain ${this.kind}`
  }
}

function timedInner() {
  const seen: [string, Outcome][] = []
  const inner = new Inner()
  const timed = instrumented(inner, (operation, outcome, seconds) => {
    assert.ok(seconds >= 0)
    seen.push([operation, outcome])
  })
  return { inner, timed, seen }
}

describe('instrumented store', () => {
  it('returns the store’s own promise, so the caller waits no extra turn', async () => {
    const { inner, timed, seen } = timedInner()
    const promise = Promise.resolve(7)
    inner.work = () => promise
    assert.equal(timed.work(1), promise)
    await promise
    assert.deepEqual(seen, [['work', 'ok']])
  })

  it('times a settled call before the caller resumes, as ok or error', async () => {
    const { timed, seen } = timedInner()
    assert.equal(await timed.work(21), 42)
    assert.deepEqual(seen, [['work', 'ok']])
    await assert.rejects(timed.fail(), /down/)
    assert.deepEqual(seen.at(-1), ['fail', 'error'])
    assert.throws(() => timed.throwAtOnce(), /thrown before any promise/)
    assert.deepEqual(seen.at(-1), ['throwAtOnce', 'error'])
  })

  it('reads properties through, calls methods on the store itself, and leaves plain results untimed', () => {
    const { inner, timed, seen } = timedInner()
    assert.equal(timed.kind, 'fake')
    void timed.work(1)
    assert.equal(inner.calls, 1, 'the method ran with the store as this')
    assert.equal(timed.plain(), 'plain fake')
    assert.deepEqual(
      seen.map(([operation]) => operation),
      [],
      'nothing settled yet, and a plain result is not timed',
    )
  })

  it('calls the method the store has now, so a fault injected after wrapping is timed', async () => {
    const { inner, timed, seen } = timedInner()
    inner.work = () => Promise.reject(new Error('injected'))
    await assert.rejects(timed.work(1), /injected/)
    assert.deepEqual(seen, [['work', 'error']])
  })
})
