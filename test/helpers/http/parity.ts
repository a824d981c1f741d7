import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { allFolders, sessions, UNKNOWN_ID } from '../fixtures/contract-data.js'
import type { TestApp } from '../apps/test-app.js'

/**
 * Two apps that must answer byte for byte alike (two backends; the primary and a replica):
 * the contract data set loaded in both, the same requests to both, and status, the headers
 * that describe the body and the body itself (request_id blanked in problems) compared.
 * Equal ETags double-check that the bodies are the same bytes.
 */

const listed = (folderId: string | null, query: string) =>
  `/v1/folders?${folderId === null ? '' : `folder_id=${folderId}&`}${query}`

/** Every parent that has children (and the root), at several page sizes and pages, and some errors. */
export function parityRequests(): string[] {
  const requests: string[] = []
  const parents = [null, ...new Set(allFolders.flatMap((f) => (f.folder_id === null ? [] : [f.folder_id])))]
  for (const parent of parents) {
    for (const query of ['', 'limit=1', 'limit=7&page=2', 'limit=100&page=3', 'page=999', 'limit=500']) {
      requests.push(listed(parent, query))
    }
  }
  requests.push(
    listed(parents[1] ?? null, 'limit=50').replace(
      /folder_id=([0-9a-f-]+)/,
      (_, id: string) => `folder_id=${id.toUpperCase()}`,
    ),
  )
  requests.push(listed(UNKNOWN_ID, ''), '/v1/folders?page=0', '/v1/folders?limit=abc')
  return requests
}

/** Alice owns most of the data set; Bob and Dave little, but their 404s and roots count too. */
export const PARITY_SESSIONS = [
  [sessions.aliceLive, 20],
  [sessions.bobLive, 1],
  [sessions.daveLive, 1],
] as const

const blankRequestId = (res: LightMyRequestResponse) =>
  res.body.replace(/"request_id":"[^"]*"/, '"request_id":""')

// Continuation tokens are sealed with a random nonce (and, across databases, under each one's
// own key): they must sit in the same links, but their bytes differ by design.
const withoutCursors = ({ headers }: LightMyRequestResponse) =>
  typeof headers.link === 'string'
    ? headers.link.replace(/([?&])cursor=[A-Za-z0-9_-]+>/g, '$1cursor=*>')
    : headers.link

/** Sends every parity request of `sessionId` to both apps; returns how many 200s were compared. */
export async function assertSameAnswers(
  reference: TestApp,
  other: TestApp,
  sessionId: string,
): Promise<number> {
  let compared = 0
  for (const url of parityRequests()) {
    const inject = (t: TestApp) => t.app.inject({ url, headers: { cookie: `session_id=${sessionId}` } })
    const [a, b] = [await inject(reference), await inject(other)]
    assert.equal(b.statusCode, a.statusCode, url)
    assert.equal(b.headers['content-type'], a.headers['content-type'], url)
    assert.equal(withoutCursors(b), withoutCursors(a), url)
    assert.equal(b.headers.etag, a.headers.etag, url)
    assert.equal(blankRequestId(b), blankRequestId(a), url)
    if (a.statusCode === 200) compared++
  }
  return compared
}
