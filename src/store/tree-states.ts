import type { ChangePosition, FolderRow } from './store.js'
import { ask, type FolderHistory, type Reading } from './tree-reads.js'

/**
 * The owner's folders as they were at one log position (tree-reads.ts says how a state is
 * read), read lazily and kept for one answer, and which of them were in the tree of the
 * root then: live, the owner's, not the root, with a parent that is the root or in the tree
 * (a parent cycle is out). Each membership is memoised, so an answer reads each folder and
 * ancestor once: its cost is bounded by its entries times the depth, not by the backlog.
 */

/** A folder's state at the position: null when it was not the owner's (or had no row). */
export interface State {
  live: boolean
  parent: string | null
  /** its listing's columns then, with `folder_id` the parent then */
  folder: FolderRow
  /** it may have had live children of the owner then */
  mayHaveChildren: boolean
}

/** A row logged before migration 015 does not carry the old state: the position can't be read. */
export class StateUnknown extends Error {
  constructor() {
    super('a log row without the old state (before migration 015)')
  }
}

function stateOf({ first, now, parentOfOldState }: FolderHistory, id: string, ownerId: string): State | null {
  if (first !== null) {
    if (first.side === 1) return null
    const { live, parentId, name, created_at, updated_at } = first
    if (live === null || name === null || created_at === null || updated_at === null) throw new StateUnknown()
    return {
      live,
      parent: parentId,
      folder: { id, name, folder_id: parentId, created_at, updated_at },
      mayHaveChildren: parentOfOldState || (now?.childCount ?? 0) > 0,
    }
  }
  if (now === null || now.ownerId !== ownerId) return null
  return {
    live: !now.deleted,
    parent: now.folder.folder_id,
    folder: now.folder,
    mayHaveChildren: parentOfOldState || now.childCount > 0,
  }
}

export class TreeAt {
  private readonly states = new Map<string, State | null>()
  private readonly memo = new Map<string, boolean>()

  constructor(
    readonly at: ChangePosition,
    private readonly ownerId: string,
    private readonly rootId: string | null,
  ) {}

  /** Reads the states of `ids` and of their ancestors at this position, a level per read. */
  *load(ids: Iterable<string | null>): Reading<void> {
    let frontier = [...new Set(ids)].filter((id): id is string => id !== null && !this.states.has(id))
    while (frontier.length > 0) {
      const read = yield* ask({ read: 'states', ids: frontier, at: this.at })
      const next = new Set<string>()
      for (const id of frontier) {
        const state = stateOf(
          read.get(id) ?? { first: null, now: null, parentOfOldState: false },
          id,
          this.ownerId,
        )
        this.states.set(id, state)
        const parent = state?.parent ?? null
        if (state?.live === true && parent !== null && parent !== this.rootId && !this.states.has(parent))
          next.add(parent)
      }
      frontier = [...next]
    }
  }

  /** The state of a folder loaded before; null when it was not the owner's. */
  state(id: string): State | null {
    const state = this.states.get(id)
    if (state === undefined) throw new Error(`${id}: state read before it was loaded`)
    return state
  }

  /** The parent of a live folder of the owner that is not the root; undefined otherwise. */
  liveParent(id: string): string | null | undefined {
    if (id === this.rootId) return undefined
    const state = this.state(id)
    return state !== null && state.live ? state.parent : undefined
  }

  /** Whether the folder (loaded with its ancestors) was in the tree. */
  has(id: string): boolean {
    const path: string[] = []
    let inTree = false
    for (let at: string | null = id; at !== null && at !== this.rootId;) {
      const known = this.memo.get(at)
      if (known !== undefined) {
        inTree = known
        break
      }
      const state = this.states.get(at)
      if (state === undefined || state === null || !state.live || path.includes(at)) break
      path.push(at)
      if (state.parent === this.rootId) {
        inTree = true
        break
      }
      at = state.parent
    }
    for (const step of path) this.memo.set(step, inTree)
    return inTree
  }
}
