import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg from 'pg'
import { StoreUnavailableError } from '../../src/store/store.js'
import { replicaFailureOf } from '../../src/store/postgres/postgres-errors.js'

/**
 * Why a replica read failed decides the fallback reason on /metrics (docs/scale-out.md); every
 * one of them sends the read to the primary. The real recovery conflict, stop and timeout are
 * provoked in test/replica/read-replicas.test.ts; here each SQLSTATE and driver error is named.
 */

function serverError(code: string, message: string): pg.DatabaseError {
  const error = new pg.DatabaseError(message, message.length, 'error')
  error.code = code
  return error
}

const network = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5433`), { code })

describe('replica failure reasons', () => {
  const cases: [unknown, ReturnType<typeof replicaFailureOf>][] = [
    [serverError('40001', 'canceling statement due to conflict with recovery'), 'conflict'],
    [serverError('40P01', 'canceling statement due to conflict with recovery'), 'conflict'],
    [serverError('57P04', 'terminating connection due to conflict with recovery'), 'conflict'],
    [serverError('57014', 'canceling statement due to statement timeout'), 'timeout'],
    [new Error('timeout exceeded when trying to connect'), 'timeout'],
    [new Error('Query read timeout'), 'timeout'],
    [network('ECONNREFUSED'), 'unavailable'],
    [serverError('57P01', 'terminating connection due to administrator command'), 'unavailable'],
    [new Error('Connection terminated unexpectedly'), 'unavailable'],
    [serverError('3D000', 'database "x" does not exist'), 'error'],
    [serverError('42703', 'column "generation" does not exist'), 'error'],
  ]
  for (const [error, reason] of cases) {
    it(`${(error as Error).message} -> ${reason}`, () => {
      assert.equal(replicaFailureOf(error), reason)
      // As the pool's wrapper delivers it too: the cause decides.
      assert.equal(
        replicaFailureOf(new StoreUnavailableError('PostgreSQL is unavailable', { cause: error })),
        reason === 'error' ? 'unavailable' : reason,
      )
    })
  }
})
