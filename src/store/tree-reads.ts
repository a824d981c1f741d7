import type { ChangePosition, FolderRow } from './store.js'

/**
 * The reads the tree feed's answers are made of (tree-answer.ts, tree-walk.ts), each about
 * the owner's folders as they were at a log position: the answer's code yields them, and
 * the store answers each in ONE snapshot (SQLite: at once, in a read transaction;
 * PostgreSQL: a statement each in one repeatable-read transaction). So the code that decides
 * the entries is shared by both backends and knows nothing of SQL.
 *
 * A folder's state at a position x (migration 015): the old state carried by its first log
 * row after x when that row is an old state (side 0); "not the owner's" when that row is a
 * new place (side 1: inserted, or given to the owner, after x); else its row now. A log is
 * only ever appended to, so the tree at x never changes: a walk at x resumed from a path is
 * exact, and two reads at x agree whenever they are made.
 */

/** One log row of the owner, as the tree reads it. */
export type LoggedRow =
  | { kind: 'owner'; position: ChangePosition }
  | {
      kind: 'folder'
      position: ChangePosition
      id: string
      /** 0: the folder's old state (its parent then); 1: a place it was not in before */
      side: 0 | 1
      parentId: string | null
    }

/** The old state a side-0 row carries; `live` null on rows logged before migration 015. */
interface OldState {
  live: boolean | null
  parentId: string | null
  name: string | null
  created_at: number | null
  updated_at: number | null
}

/** What a 'states' read finds of one folder. */
export interface FolderHistory {
  /** its first log row after the position: a new place (side 1), or an old state */
  first: { side: 1 } | ({ side: 0 } & OldState) | null
  /** its row now, whoever owns it */
  now: { folder: FolderRow; ownerId: string; deleted: boolean; childCount: number } | null
  /** a side-0 row after the position names it as the parent: it may have had children then */
  parentOfOldState: boolean
}

/** A child at a position, as a walk reads it. */
export interface ChildAt {
  folder: FolderRow
  /** it may have live children of the owner at the position (no read below it when false) */
  mayHaveChildren: boolean
}

export type TreeRead =
  /** the owner's 'folder' and 'owner' rows after `after`, in log order, at most `limit` */
  | { read: 'log'; after: ChangePosition; limit: number }
  /** each id's history after `at` */
  | { read: 'states'; ids: string[]; at: ChangePosition }
  /**
   * The folders that were live children of `parent` (null: the user's root) of the owner at
   * `at`, with ids greater than `after` ('' : all), by id, at most `limit`, never the tree's
   * root; each with its state at `at`.
   */
  | { read: 'children'; parent: string | null; after: string; at: ChangePosition; limit: number }
  /**
   * Which of `ids` a new place (side 1) of the owner at or before `at` names as the parent:
   * a folder put under it then (a superset: any such row, however old, is named).
   */
  | { read: 'placedUnder'; ids: string[]; at: ChangePosition }

/** The answer to each kind of read. */
export interface ReadAnswers {
  log: LoggedRow[]
  states: Map<string, FolderHistory>
  children: ChildAt[]
  placedUnder: Set<string>
}

export type AnswerOf<R extends TreeRead> = ReadAnswers[R['read']]

/** Code that yields reads and is sent each one's answer. */
export type Reading<T> = Generator<TreeRead, T, ReadAnswers[keyof ReadAnswers]>

/** Runs `reading`, answering each read at once (SQLite, inside its read transaction). */
export function readNow<T>(
  reading: Reading<T>,
  answer: (read: TreeRead) => ReadAnswers[keyof ReadAnswers],
): T {
  for (let step = reading.next(); ;) {
    if (step.done === true) return step.value
    step = reading.next(answer(step.value))
  }
}

/** Runs `reading`, each read a statement (PostgreSQL, inside one repeatable-read transaction). */
export async function readEach<T>(
  reading: Reading<T>,
  answer: (read: TreeRead) => Promise<ReadAnswers[keyof ReadAnswers]>,
): Promise<T> {
  for (let step = reading.next(); ;) {
    if (step.done === true) return step.value
    step = reading.next(await answer(step.value))
  }
}

/** Yields one read and returns its answer, typed by the read's kind. */
export function* ask<R extends TreeRead>(
  read: R,
): Generator<TreeRead, AnswerOf<R>, ReadAnswers[keyof ReadAnswers]> {
  return (yield read) as AnswerOf<R>
}
