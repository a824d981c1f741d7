import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { SHARED_SCHEMAS } from '../../src/schemas/shared-schemas.js'
import type { FolderTreeBody } from '../../src/schemas/tree-body.js'
import { FOLDER_TREE_PATH } from '../../src/api/paths.js'

/** The tree feed's wire shape (docs/api.md "Folder tree"): what a body may and may not hold. */

// The shared schemas as the app registers them, resolved by $id as Fastify's validator does.
const ajv = new Ajv({ schemas: [...SHARED_SCHEMAS] })
addFormats.default(ajv)
const owner = { id: '0a11ce00-0000-4000-8000-000000000001', username: 'alice', avatar_url: null }
const folder = {
  id: 'f0000000-0000-4000-8000-000000000001',
  name: 'Projects',
  folder_id: null,
  owner,
  created_at: '2026-01-31T09:15:00.000Z',
  updated_at: '2026-01-31T09:15:00.000Z',
}
const body: FolderTreeBody = {
  changes: [
    { type: 'upsert', folder },
    { type: 'upsert', folder, previous_folder_id: null },
    { type: 'remove', id: folder.id, folder_id: null },
    { type: 'owner', owner },
  ],
  cursor: 'abc',
  has_more: false,
}
const check = (value: unknown) => ajv.validate('FolderTree', value)

describe('the folder tree body', () => {
  it('is served at /v1/folders/tree', () => {
    assert.equal(FOLDER_TREE_PATH, '/v1/folders/tree')
  })

  it('holds upserts (with or without the previous parent), removes with the parent, owner entries', () => {
    assert.equal(check(body), true)
  })

  it('refuses a remove without its parent, a field it does not name, a bad previous parent', () => {
    assert.equal(check({ ...body, changes: [{ type: 'remove', id: folder.id }] }), false)
    assert.equal(check({ ...body, changes: [{ type: 'upsert', folder, is_deleted: false }] }), false)
    assert.equal(
      check({ ...body, changes: [{ type: 'upsert', folder: { ...folder, owner_id: 'x' } }] }),
      false,
    )
    assert.equal(check({ ...body, changes: [{ type: 'upsert', folder, previous_folder_id: 'x' }] }), false)
    assert.equal(check({ ...body, extra: 1 }), false)
  })
})
