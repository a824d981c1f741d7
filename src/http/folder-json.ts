import type { FolderListBody } from '../schemas/folder.js'

/**
 * A folder's JSON text, and the strings in it, written as the route schemas' serialiser
 * writes them: shared by the hand-written answers of the listing (folder-list-json.ts) and
 * of the tree (folder-tree-json.ts). A string that needs escaping goes through
 * JSON.stringify, which escapes exactly as the schema serialiser does (it falls back to
 * JSON.stringify for anything it would escape); the others (ids, timestamps, most names)
 * are written between quotes as they are.
 */

type Folder = FolderListBody['folders'][number]
/** The `owner` object of a folder (schema OwnerInfo). */
export type Owner = Folder['owner']

/** What JSON.stringify would escape: quote, backslash, control characters, lone surrogate halves. */
// eslint-disable-next-line no-control-regex -- control characters are what JSON must escape
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/

/** JSON.stringify(value): half the cost on a page when most strings need no escape. */
export const quoted = (value: string): string =>
  NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`

export const nullable = (value: string | null): string => (value === null ? 'null' : quoted(value))

export const ownerJson = ({ id, username, avatar_url }: Owner): string =>
  `{"id":${quoted(id)},"username":${quoted(username)},"avatar_url":${nullable(avatar_url)}}`

/** A folder's JSON (schema Folder), its owner's already written as `ownerText`. */
export const folderJson = (folder: Folder, ownerText: string): string =>
  '{"id":' +
  quoted(folder.id) +
  ',"name":' +
  quoted(folder.name) +
  ',"folder_id":' +
  nullable(folder.folder_id) +
  ',"owner":' +
  ownerText +
  ',"created_at":' +
  quoted(folder.created_at) +
  ',"updated_at":' +
  quoted(folder.updated_at) +
  '}'
