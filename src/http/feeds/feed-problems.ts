import type { FeedRefusal } from '../../feed/feed.js'
import type { SessionRefusal } from '../../feed/session-recheck.js'
import { sessionEnded } from '../auth.js'
import type { ParameterRules } from '../../schemas/parameter-rules.js'
import { problems, type HttpProblem } from '../problems.js'

/** A session that fails the check after a read, as the problem it would get on arrival (401, 403). */
export function sessionProblem(refusal: SessionRefusal): HttpProblem {
  return refusal.outcome === 'frozen' ? problems.frozen() : sessionEnded()
}

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
    case 'frozen':
      return sessionProblem(refusal)
  }
}
