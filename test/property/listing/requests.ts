import assert from 'node:assert/strict'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { modelAnswer, type ModelRequest } from '../../helpers/fixtures/model.js'
import { assertMatchesModel, describe, record, type CheckStats } from './check.js'
import { maybeUpper, type Concrete } from './data.js'
import type { GenCookie, GenNumber, GenRequest } from './generators.js'

/**
 * The requests: a generated one turned into a Cookie header and a query string over a
 * concrete data set, sent through app.inject, and each answer checked against the model.
 */

/** The session a `session` cookie names: any, or (usable) one that authenticates if there is one. */
function pickSession(c: Concrete, cookie: { pick: number; usable: boolean }): string {
  const now = Date.now()
  const usable = c.sessionIds.filter((id) => {
    const s = c.model.sessions.get(id)
    const user = s === undefined ? undefined : c.model.users.get(s.user_id)
    return s !== undefined && (s.expires_at === null || s.expires_at > now) && user?.is_suspended === false
  })
  const from = cookie.usable && usable.length > 0 ? usable : c.sessionIds
  return from[cookie.pick % from.length] as string
}

function sessionUserId(c: Concrete, cookie: GenCookie): string | undefined {
  if (cookie.kind !== 'session') return undefined
  return c.model.sessions.get(pickSession(c, cookie))?.user_id
}

function cookieHeader(c: Concrete, cookie: GenCookie): string | undefined {
  switch (cookie.kind) {
    case 'none':
      return undefined
    case 'session': {
      const id = maybeUpper(pickSession(c, cookie), cookie.upper)
      switch (cookie.form) {
        case 'plain':
          return `session_id=${id}`
        case 'amid':
          return `theme=dark; session_id=${id}; lang=fr`
        case 'dupFirst':
          return `session_id=${id}; session_id=not-a-uuid`
        case 'dupSecond':
          return `session_id=not-a-uuid; session_id=${id}`
        case 'tight':
          return `a=1;session_id=${id};b=2`
      }
      break
    }
    case 'unknown':
      return `session_id=${cookie.uuid}`
    case 'garbage':
      return `session_id=${cookie.value}`
    case 'otherCookiesOnly':
      return 'theme=dark; sid=1'
    case 'wrongName':
      return `${cookie.name}=${c.sessionIds[cookie.pick % c.sessionIds.length] as string}`
  }
  return undefined
}

function parentParams(c: Concrete, r: GenRequest): [string, string][] {
  const p = r.parent
  const folderAt = (ids: string[], pick: number) => ids[pick % ids.length]
  switch (p.kind) {
    case 'absent':
      return []
    case 'own': {
      const owner = sessionUserId(c, r.cookie)
      const own = c.folderIds.filter((id) => c.model.folders.get(id)?.owner_id === owner)
      const id = folderAt(own.length > 0 ? own : c.folderIds, p.pick)
      return id === undefined ? [] : [['folder_id', maybeUpper(id, p.upper)]]
    }
    case 'busiest': {
      const owner = sessionUserId(c, r.cookie)
      const counts = new Map<string | null, number>()
      for (const f of c.model.folders.values()) {
        if (f.owner_id === owner && !f.is_deleted) counts.set(f.folder_id, (counts.get(f.folder_id) ?? 0) + 1)
      }
      let best: string | null = null
      for (const [parent, n] of counts) if (n > (counts.get(best) ?? 0)) best = parent
      return best === null ? [] : [['folder_id', maybeUpper(best, p.upper)]]
    }
    case 'any': {
      const id = folderAt(c.folderIds, p.pick)
      return id === undefined ? [] : [['folder_id', maybeUpper(id, p.upper)]]
    }
    case 'unknown':
      return [['folder_id', p.uuid]]
    case 'malformed':
      return [['folder_id', p.value]]
    case 'twice': {
      const id = folderAt(c.folderIds, p.pick) ?? '00000000-0000-4000-8000-000000000000'
      return [
        ['folder_id', id],
        ['folder_id', id],
      ]
    }
  }
}

function numberParams(name: string, n: GenNumber): [string, string][] {
  switch (n.kind) {
    case 'absent':
      return []
    case 'valid':
      return [[name, `${'0'.repeat(n.zeros)}${n.value}`]]
    case 'invalid':
      return [[name, n.text]]
    case 'twice':
      return [
        [name, String(n.a)],
        [name, String(n.b)],
      ]
  }
}

/** `%`-encodes every character of a parameter name: the same name once decoded. */
const encodeName = (name: string) =>
  [...Buffer.from(name, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('')

function queryString(pairs: [string, string][], r: GenRequest): string {
  const keyed = pairs.map((pair, i) => ({ pair, key: (r.order[i % r.order.length] ?? 0) * 100 + i }))
  keyed.sort((a, b) => a.key - b.key)
  return keyed
    .map(
      ({ pair: [name, value] }) =>
        `${r.encodeNames ? encodeName(name) : encodeURIComponent(name)}=${encodeURIComponent(value)}`,
    )
    .join('&')
}

async function send(app: FastifyInstance, req: ModelRequest): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'GET',
    url: req.query === '' ? '/v1/folders' : `/v1/folders?${req.query}`,
    headers: req.cookie === undefined ? {} : { cookie: req.cookie },
  })
}

/** Sends one generated request (or walks its pages) and checks each answer. */
export async function checkRequest(
  app: FastifyInstance,
  c: Concrete,
  r: GenRequest,
  stats: CheckStats,
): Promise<void> {
  const cookie = cookieHeader(c, r.cookie)
  const fixed = [...parentParams(c, r), ...numberParams('limit', r.limit), ...r.extra]
  if (!r.walk) {
    const req = { cookie, query: queryString([...fixed, ...numberParams('page', r.page)], r) }
    const expected = modelAnswer(c.model, req, Date.now())
    assertMatchesModel(req, await send(app, req), expected)
    record(stats, expected, r.page.kind === 'valid' ? r.page.value : 1)
    return
  }
  // Walk: pages 1..last+1; together they must be the whole list, each folder once, in order.
  const seen: string[] = []
  for (let page = 1; page <= 300; page++) {
    const req = { cookie, query: queryString([...fixed, ['page', String(page)]], r) }
    const expected = modelAnswer(c.model, req, Date.now())
    const res = await send(app, req)
    assertMatchesModel(req, res, expected)
    record(stats, expected, page)
    if (expected.status !== 200) return
    // A conditional repeat of a page is answered 304 with no body.
    if (page === 1) {
      const again = await app.inject({
        method: 'GET',
        url: `/v1/folders?${req.query}`,
        headers: { ...(cookie === undefined ? {} : { cookie }), 'if-none-match': String(res.headers.etag) },
      })
      assert.equal(again.statusCode, 304, describe(req, again, expected))
      assert.equal(again.payload, '')
    }
    seen.push(...expected.body.folders.map((f) => f.id))
    if (expected.body.folders.length === 0) {
      assert.equal(seen.length, expected.body.total, `pages must cover the total exactly\n${req.query}`)
      assert.equal(new Set(seen).size, seen.length, 'no folder may appear on two pages')
      return
    }
  }
}
