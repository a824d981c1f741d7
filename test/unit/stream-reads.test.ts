import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { StreamReads, type FeedStep, type GroupReader } from '../../src/http/feeds/stream-reads.js'
import type { FeedBody } from '../../src/feed/feed.js'
import type { SessionUser } from '../../src/store/store.js'

/**
 * The reads of event streams made for groups (src/http/feeds/stream-reads.ts): the streams
 * that ask in one run of the loop for the same read make one read and one session lookup
 * between them, and each gets its own outcome; streams asking for different reads do not
 * share. Counted, not timed.
 */

const user = (generation: number): SessionUser => ({
  id: 'owner',
  username: 'owner',
  avatar_url: null,
  is_suspended: false,
  generation,
})

const settle = () => new Promise((resolve) => setImmediate(resolve))

class FakeReader implements GroupReader<FeedBody> {
  readonly queryKey = '{"rootId":null,"limit":100}'
  behind = false
  ended = false
  steps = 0
  outcomes: string[] = []

  constructor(
    readonly sessionId: string,
    public cursor: string,
    public user: SessionUser,
    private readonly answer: FeedStep<FeedBody>,
  ) {}

  step(): Promise<FeedStep<FeedBody>> {
    this.steps++
    return Promise.resolve(this.answer)
  }
  refused(): void {
    this.outcomes.push('refused')
  }
  failed(): void {
    this.outcomes.push('failed')
  }
  idle(generation: number): void {
    this.outcomes.push(`idle ${generation}`)
  }
  skip(): void {
    this.outcomes.push('skip')
  }
  send(body: FeedBody, as: SessionUser): void {
    this.outcomes.push(`send ${body.cursor} as ${as.generation}`)
  }
}

describe('stream reads in groups', () => {
  it('one read and one lookup for the streams asking alike, each its outcome; others apart', async () => {
    const asked: (readonly string[])[] = []
    const reads = new StreamReads<FeedBody>({
      findAll: (ids) => {
        asked.push(ids)
        // the third session was revoked meanwhile
        return Promise.resolve(ids.map((id) => (id === 's2' ? null : user(8))))
      },
    })
    const body: FeedBody = { changes: [{}], cursor: 'next', has_more: false }
    const alike = Array.from({ length: 12 }, (_, i) => new FakeReader(`s${i}`, 'c1', user(7), { body }))
    const elsewhere = new FakeReader('t', 'c0', user(7), { outcome: 'idle', generation: 9 })
    for (const reader of alike) reads.join(reader, 8, false)
    reads.join(elsewhere, 8, false)
    await settle()
    await settle()

    const steps = alike.reduce((sum, reader) => sum + reader.steps, 0)
    assert.equal(steps, 1, 'one read for the twelve')
    assert.equal(elsewhere.steps, 1, 'another cursor reads apart')
    assert.deepEqual(asked, [alike.map((reader) => reader.sessionId)], 'one lookup for the group')
    alike.forEach((reader, i) =>
      assert.deepEqual(reader.outcomes, [i === 2 ? 'refused' : 'send next as 8'], `reader ${i}`),
    )
    assert.deepEqual(elsewhere.outcomes, ['idle 9'])
  })

  it('a stream that ended meanwhile gets nothing, and is not looked up', async () => {
    const asked: (readonly string[])[] = []
    const reads = new StreamReads<FeedBody>({
      findAll: (ids) => {
        asked.push(ids)
        return Promise.resolve(ids.map(() => user(8)))
      },
    })
    const body: FeedBody = { changes: [{}], cursor: 'next', has_more: false }
    const [staying, leaving] = ['a', 'b'].map((id) => new FakeReader(id, 'c1', user(7), { body }))
    assert.ok(staying !== undefined && leaving !== undefined)
    reads.join(staying, 8, false)
    reads.join(leaving, 8, false)
    leaving.ended = true
    await settle()
    await settle()
    assert.deepEqual(asked, [['a']])
    assert.deepEqual(staying.outcomes, ['send next as 8'])
    assert.deepEqual(leaving.outcomes, [])
  })
})
