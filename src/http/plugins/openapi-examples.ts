import { MISSING } from '../auth.js'
import { problemBody, problems, type HttpProblem } from '../problems.js'

/**
 * Example bodies for the OpenAPI document, made by the same code that makes real answers
 * (the problems are the service's own, with their real details), so they cannot drift.
 */

const EXAMPLE_REQUEST_ID = '6f1c2a5e-3b0d-4e8a-9c4f-2d7b1e0a9f31'
const OWNER = { id: 'de000000-0000-4000-8000-000000000001', username: 'demo', avatar_url: null }
const FOLDER = {
  id: 'de000000-0000-4000-8000-0000000f0001',
  name: 'Documents',
  folder_id: null,
  owner: OWNER,
  created_at: '2026-01-31T09:15:00.000Z',
  updated_at: '2026-01-31T09:15:00.000Z',
}

const example = (summary: string, problem: HttpProblem) => ({
  summary,
  value: problemBody(problem, EXAMPLE_REQUEST_ID),
})

/** Examples of each status, as `examples` of its media type. */
export const EXAMPLES: Record<string, Record<string, { summary: string; value: unknown }>> = {
  400: {
    page: example('a malformed page (`page=1e2`)', problems.invalidParameter('page')),
  },
  401: {
    missing: example('no session cookie', problems.unauthorized(MISSING)),
  },
  403: { frozen: example('a frozen account', problems.frozen()) },
  404: { notFound: example('not a live folder of this user', problems.folderNotFound()) },
  410: { expired: example('changes no longer kept', problems.cursorExpired()) },
  429: { waiting: example('too many held requests', problems.tooManyWaiters()) },
  500: { internal: example('an unexpected error', problems.internal()) },
  503: { unavailable: example('the database is unreachable', problems.unavailable()) },
}

/** 200 examples by operationId. */
export const SUCCESS_EXAMPLES: Record<string, { summary: string; value: unknown }> = {
  listFolders: {
    summary: 'the first page of the root',
    value: { folders: [FOLDER], total: 5, page: 1, limit: 1 },
  },
  listFolderChanges: {
    summary: 'a renamed folder and a deleted one',
    value: {
      changes: [
        { type: 'upsert', folder: { ...FOLDER, name: 'Papers', updated_at: '2026-02-01T10:00:00.000Z' } },
        { type: 'remove', id: 'de000000-0000-4000-8000-0000000f0002' },
      ],
      cursor: 'AbC123_-xyz',
      has_more: false,
    },
  },
  followFolderTree: {
    summary: 'a folder moved under another, and a subtree that left the tree',
    value: {
      changes: [
        {
          type: 'upsert',
          folder: { ...FOLDER, folder_id: 'de000000-0000-4000-8000-0000000f0003' },
          previous_folder_id: null,
        },
        { type: 'remove', id: 'de000000-0000-4000-8000-0000000f0002', folder_id: null },
      ],
      cursor: 'AbC123_-xyz',
      has_more: false,
    },
  },
  checkHealth: { summary: 'the process answers', value: { status: 'ok' } },
  checkReadiness: { summary: 'the database answers', value: { status: 'ready' } },
}
