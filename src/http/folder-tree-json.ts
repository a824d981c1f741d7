import type { FolderTreeBody } from '../schemas/tree-body.js'
import { folderJson, nullable, ownerJson, quoted, type Owner } from './folder-json.js'

/**
 * The JSON text of a tree answer, written field by field in FolderTree's order: the same
 * bytes the route's 200 schema serialiser writes (test/property/folder-tree-json.test.ts
 * compares them over arbitrary answers), without its main cost: the serialiser picks each
 * entry's branch of the union by validating the entry against each in turn, formats
 * included. Like it, it writes only the schema's fields, so nothing else on the objects can
 * leak.
 */

export function folderTreeJson({ changes, cursor, has_more }: FolderTreeBody): string {
  let text = '{"changes":['
  // A download's folders share one owner object (feed/tree-feed.ts): its text is written once.
  let owner: Owner | undefined
  let ownerText = ''
  for (let i = 0; i < changes.length; i++) {
    const entry = changes[i] as FolderTreeBody['changes'][number]
    if (i > 0) text += ','
    if (entry.type === 'upsert') {
      if (entry.folder.owner !== owner) {
        owner = entry.folder.owner
        ownerText = ownerJson(owner)
      }
      text += '{"type":"upsert","folder":' + folderJson(entry.folder, ownerText)
      if (entry.previous_folder_id !== undefined)
        text += ',"previous_folder_id":' + nullable(entry.previous_folder_id)
      text += '}'
    } else if (entry.type === 'remove') {
      text += '{"type":"remove","id":' + quoted(entry.id) + ',"folder_id":' + nullable(entry.folder_id) + '}'
    } else {
      text += '{"type":"owner","owner":' + ownerJson(entry.owner) + '}'
    }
  }
  return `${text}],"cursor":${quoted(cursor)},"has_more":${has_more}}`
}
