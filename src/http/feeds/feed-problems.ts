import type { HoldRefusal } from '../../feed/held-request.js'
import { sessionEnded } from '../auth.js'
import type { ParameterRules } from '../../schemas/list-folders-query.js'
import { problems, type HttpProblem } from '../problems.js'

/** The outcomes both feeds (changes, tree) share, as the problems they answer with. */
export type FeedRefusal =
  HoldRefusal | { outcome: 'parent-not-found' } | { outcome: 'cursor-invalid' } | { outcome: 'expired' }

/** `rules`: the feed's own parameter texts, so a bad cursor's 400 says where that cursor comes from. */
export function feedProblem(refusal: FeedRefusal, rules: ParameterRules): HttpProblem {
  switch (refusal.outcome) {
    case 'parent-not-found':
      return problems.folderNotFound()
    case 'cursor-invalid':
      return problems.invalidParameter('cursor', rules)
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
