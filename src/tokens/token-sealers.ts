import type { ServingStore } from '../store/store.js'
import { ChangesCursors } from './changes-cursor.js'
import { TreeCursors } from './tree-cursor.js'
import { CursorSealer } from './listing-cursor.js'

/** The deployment's token sealers, all under the one cursor key kept in the database. */
export interface TokenSealers {
  /** continuation tokens of the listing's next and prev links */
  listing: CursorSealer
  /** changes cursors (the feed's and the listing's rel="changes" link) */
  changes: ChangesCursors
  /** cursors of the folder tree feed */
  tree: TreeCursors
}

/** Reads the deployment key once, shared by the listing and the feed (again after a failed read). */
export class DeploymentSealers {
  private pending: Promise<TokenSealers> | null = null

  constructor(private readonly store: Pick<ServingStore, 'cursorKey'>) {}

  get(): Promise<TokenSealers> {
    this.pending ??= this.store.cursorKey().then(
      (key) => ({
        listing: new CursorSealer(key),
        changes: new ChangesCursors(key),
        tree: new TreeCursors(key),
      }),
      (error: unknown) => {
        this.pending = null
        throw error
      },
    )
    return this.pending
  }
}
