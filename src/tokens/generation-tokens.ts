import { RecencyMap } from '../recency-map.js'
import { ALL_ROWS } from '../store/store.js'
import { changesBinding, type ChangesCursors } from './changes-cursor.js'

/**
 * The changes cursor of a listing answer's `rel="changes"` link names the point the page was
 * read at: the owner's listing generation, bound to the user and the folder. Nothing else goes
 * into it, so every answer of one folder at one generation may carry the same sealed cursor:
 * it is sealed once per folder and generation and handed out again until a write moves the
 * generation on (every page of a folder, every order, every repeat after the answer cache
 * dropped it). Sealing was an AES-GCM cipher a request, about a tenth of an uncached root
 * listing's CPU (docs/performance.md "The listing path").
 *
 * A cursor is as opaque, unforgeable and bound as before (the same sealing); a client that
 * sees the same cursor twice learns that nothing changed, which the ETag already tells it.
 * The newest generation of each folder is kept, at most {@link GENERATION_TOKENS} folders
 * (about 300 bytes each), the least recently used out first.
 */

const GENERATION_TOKENS = 4096

interface Sealed {
  generation: number
  token: string
}

export class ChangesLinkTokens {
  /** binding -> the cursor of its newest generation seen */
  private readonly sealed: RecencyMap<string, Sealed>
  /** what the kept cursors were sealed with: under any other key they would not open */
  private sealedWith: ChangesCursors | undefined

  constructor(max = GENERATION_TOKENS) {
    this.sealed = new RecencyMap(max)
  }

  /** The changes cursor of `userId`'s listing of `parentId` (null: the root) at `generation`. */
  cursor(cursors: ChangesCursors, userId: string, parentId: string | null, generation: number): string {
    if (cursors !== this.sealedWith) {
      this.sealed.clear()
      this.sealedWith = cursors
    }
    const binding = changesBinding(userId, parentId)
    const kept = this.sealed.touch(binding)
    // An older answer (a replica, a request that read before a write) keeps its own point.
    if (kept !== undefined && kept.generation === generation) return kept.token
    return this.keep(binding, cursors, generation, kept)
  }

  /** Seals the cursor of `generation`; keeps it unless `kept` holds a newer generation. */
  private keep(
    binding: string,
    cursors: ChangesCursors,
    generation: number,
    kept: Sealed | undefined,
  ): string {
    const token = cursors.seal({ generation, row: ALL_ROWS }, binding)
    this.sealed.set(
      binding,
      kept !== undefined && kept.generation > generation ? kept : { generation, token },
    )
    return token
  }
}
