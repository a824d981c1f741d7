import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { sessions, useSeededAppWithRawSql, users } from '../helpers/fixtures/contract-data.js'
import { request } from '../helpers/apps/test-app.js'

/**
 * An owner's avatar_url is whatever text other writers stored (at most 2,048 characters):
 * every answer that carries the owner (a listing, the changes feed's owner entry, the tree)
 * sends it as stored, never a 500 because it is not a URI.
 */

const AVATAR = 'not a URI, just text ☃'

for (const backend of allBackends()) {
  describe(`${backend.name}: an avatar_url that is not a URI`, { skip: backend.skip }, () => {
    const t = useSeededAppWithRawSql(backend)

    it('is sent as stored by the listing, the changes feed and the tree', async () => {
      const session = sessions.aliceLive.id
      const start = await request(t.app, { url: '/v1/folders/changes', session })
      assert.equal(start.statusCode, 200, start.payload)
      const cursor = (JSON.parse(start.payload) as { cursor: string }).cursor
      await t.sql.run('UPDATE users SET avatar_url = ? WHERE id = ?', AVATAR, users.alice.id)

      const changes = await request(t.app, { url: '/v1/folders/changes', session, query: `cursor=${cursor}` })
      assert.equal(changes.statusCode, 200, changes.payload)
      assert.ok(changes.payload.includes(JSON.stringify(AVATAR)), changes.payload)
      for (const url of ['/v1/folders', '/v1/folders/tree']) {
        const res = await request(t.app, { url, session })
        assert.equal(res.statusCode, 200, `${url}: ${res.payload}`)
        assert.ok(res.payload.includes(JSON.stringify(AVATAR)), `${url}: ${res.payload}`)
      }
    })
  })
}
