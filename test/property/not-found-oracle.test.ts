import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { allBackends } from '../helpers/databases/backends.js'
import { openFuzzTarget, type FuzzTarget } from '../helpers/fixtures/hostile.js'

/**
 * The existence oracle (docs/api.md "Checks, in this order", the 404 step): asking for another user's folder, a
 * deleted folder (one's own or another's) and a folder that never existed must give the
 * same answer, byte for byte, apart from the request id: status, every header and its
 * order (content-length included; the date and x-request-id aside) and the whole body once
 * request_id is blanked. Otherwise a caller learns that someone else's folder exists.
 */

const IGNORED_HEADERS = new Set(['x-request-id', 'date'])

interface Probe {
  label: string
  folderId: string
}

function comparable(res: LightMyRequestResponse): {
  status: number
  headers: [string, string][]
  body: string
} {
  const requestId = String(res.headers['x-request-id'])
  return {
    status: res.statusCode,
    headers: Object.entries(res.headers)
      .filter(([name]) => !IGNORED_HEADERS.has(name))
      .map(([name, value]) => [name, String(value)]),
    // Blank the id wherever it appears, so nothing but the id may differ.
    body: res.payload.split(requestId).join(''),
  }
}

for (const backend of allBackends()) {
  describe(
    `${backend.name}: one 404 for foreign, deleted and missing folders`,
    { skip: backend.skip },
    () => {
      let t: FuzzTarget
      let probes: Probe[]
      before(async () => {
        t = await openFuzzTarget(backend)
        probes = [
          { label: "another user's live folder", folderId: t.bobFolder },
          { label: "another user's deleted folder", folderId: t.bobDeleted },
          { label: 'own deleted folder', folderId: t.aliceDeleted },
          { label: 'a folder that never existed', folderId: t.unknown },
          { label: 'a random UUID', folderId: randomUUID() },
        ]
      })
      after(async () => {
        await t?.close()
      })

      it('gives byte-identical answers apart from the request id', async () => {
        const request = fc.record({
          method: fc.constantFrom('GET' as const, 'HEAD' as const),
          upper: fc.boolean(),
          page: fc.option(fc.integer({ min: 1, max: 2_147_483_647 }).map(String), { nil: undefined }),
          limit: fc.option(fc.integer({ min: 1, max: 500 }).map(String), { nil: undefined }),
          extra: fc.option(fc.constantFrom('x=1', 'sort=name', 'owner_id=1'), { nil: undefined }),
          clientRequestId: fc.boolean(),
          cookieAmid: fc.boolean(),
          ifNoneMatch: fc.boolean(),
        })
        let compared = 0
        await fc.assert(
          fc.asyncProperty(request, async (r) => {
            const answers: { label: string; res: LightMyRequestResponse }[] = []
            for (const probe of probes) {
              const query = [
                `folder_id=${r.upper ? probe.folderId.toUpperCase() : probe.folderId}`,
                ...(r.page === undefined ? [] : [`page=${r.page}`]),
                ...(r.limit === undefined ? [] : [`limit=${r.limit}`]),
                ...(r.extra === undefined ? [] : [r.extra]),
              ].join('&')
              const cookie = r.cookieAmid
                ? `a=1; session_id=${t.aliceSession}; b=2`
                : `session_id=${t.aliceSession}`
              const headers: Record<string, string> = { cookie }
              // Ids of one length, so the content-length may be compared as sent.
              if (r.clientRequestId) headers['x-request-id'] = `trace-${randomUUID()}`
              if (r.ifNoneMatch) headers['if-none-match'] = '"abc"'
              const res = await t.app.inject({ method: r.method, url: `/v1/folders?${query}`, headers })
              answers.push({ label: probe.label, res })
            }
            const first = answers[0] as (typeof answers)[number]
            assert.equal(first.res.statusCode, 404, first.res.payload)
            if (r.method === 'GET') assert.match(first.res.payload, /"code":"NOT_FOUND"/)
            for (const other of answers.slice(1)) {
              assert.deepStrictEqual(
                comparable(other.res),
                comparable(first.res),
                `${other.label} differs from ${first.label} (${JSON.stringify(r)})`,
              )
              compared++
            }
          }),
          { numRuns: 40, includeErrorInReport: true },
        )
        assert.equal(compared, 40 * 4)
      })

      it('differs from the answer for a live folder of the same user (the comparison can fail)', async () => {
        const own = await t.app.inject({
          url: `/v1/folders?folder_id=${t.aliceFolder}`,
          headers: { cookie: `session_id=${t.aliceSession}` },
        })
        const foreign = await t.app.inject({
          url: `/v1/folders?folder_id=${t.bobFolder}`,
          headers: { cookie: `session_id=${t.aliceSession}` },
        })
        assert.equal(own.statusCode, 200)
        assert.notDeepStrictEqual(comparable(own), comparable(foreign))
      })
    },
  )
}
