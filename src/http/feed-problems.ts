import type { HoldRefusal } from '../feed/held-request.js'
import { sessionEnded } from './auth.js'
import { problems, type HttpProblem } from './problems.js'

/** The outcomes both feeds (changes, tree) share, as the problems they answer with. */
export type FeedRefusal =
  HoldRefusal | { outcome: 'parent-not-found' } | { outcome: 'cursor-invalid' } | { outcome: 'expired' }

export function feedProblem(refusal: FeedRefusal): HttpProblem {
  switch (refusal.outcome) {
    case 'parent-not-found':
      return problems.folderNotFound()
    case 'cursor-invalid':
      return problems.invalidParameter('cursor')
    case 'expired':
      return problems.cursorExpired()
    case 'busy':
      return problems.tooManyWaiters()
    case 'session-ended':
      return sessionEnded()
    case 'frozen':
      return problems.frozen()
  }
}
