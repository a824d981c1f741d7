import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { parseDatabaseUrl } from '../../src/store/open-store.js'
import { parseHostList, splitUrlList } from '../../src/database-url/host-list.js'

/**
 * Multi-host PostgreSQL URLs as libpq and `pg_autoctl show uri` write them: split into one
 * single-host URL per host for node-postgres, target_session_attrs read, and every URL the
 * service cannot use refused at start-up in one line naming the setting, no password.
 */

const PASSWORD = 's3cret-pw'
const AUTOCTL = `postgres://app:${PASSWORD}@localhost:6010,localhost:6011,localhost:6012/app?target_session_attrs=read-write&sslmode=prefer`

describe('a host list in DATABASE_URL', () => {
  it('splits pg_autoctl show uri into one URL per host, in order, without target_session_attrs', () => {
    const list = parseHostList(AUTOCTL)
    assert.equal(list.attrs, 'read-write')
    assert.equal(list.follows, true)
    assert.deepEqual(
      list.hosts.map((host) => host.target),
      ['localhost:6010', 'localhost:6011', 'localhost:6012'],
    )
    assert.deepEqual(list.hosts[1], {
      target: 'localhost:6011',
      url: `postgres://app:${PASSWORD}@localhost:6011/app?sslmode=prefer`,
      plainUrl: `postgres://app:${PASSWORD}@localhost:6011/app?sslmode=disable`,
    })
  })

  it('reads primary as read-write, any or nothing as the first that answers; a default port', () => {
    assert.equal(parseHostList('postgres://u@a,b/db?target_session_attrs=primary').attrs, 'read-write')
    assert.equal(parseHostList('postgres://u@a,b/db?target_session_attrs=any').attrs, 'any')
    const plain = parseHostList('postgresql://u@a,[::1]:5433/db')
    assert.equal(plain.attrs, 'any')
    assert.deepEqual(
      plain.hosts.map((host) => host.target),
      ['a:5432', '[::1]:5433'],
    )
  })

  it('leaves one host without target_session_attrs as it always was: not followed', () => {
    const url = `postgres://u:${PASSWORD}@db.example:6000/app?sslmode=require`
    const list = parseHostList(url)
    assert.equal(list.follows, false)
    assert.deepEqual(list.hosts, [{ target: 'db.example:6000', url }])
    // One host with read-write (a cloud endpoint whose name moves) is followed.
    assert.equal(parseHostList(`${url}&target_session_attrs=read-write`).follows, true)
  })

  for (const [name, url, reason] of [
    [
      'an unknown target_session_attrs',
      'postgres://u:PW@a,b/db?target_session_attrs=standby',
      /target_session_attrs=standby/,
    ],
    ['an empty host entry', 'postgres://u:PW@a,,b/db', /empty host entry \(host 2\)/],
    ['a port out of range', 'postgres://u:PW@a:5432,b:70000/db', /host 2 has port 70000/],
    ['a malformed host entry', 'postgres://u:PW@a,b@c/db', /malformed host entry \(host 2\)/],
  ] as const) {
    it(`stops start-up on ${name}, naming DATABASE_URL, never the password`, () => {
      const withPassword = url.replace('PW', PASSWORD)
      assert.throws(
        () => parseDatabaseUrl(withPassword),
        (error: Error) => {
          assert.match(error.message, /DATABASE_URL/)
          assert.match(error.message, reason)
          assert.doesNotMatch(error.message, new RegExp(PASSWORD))
          assert.equal(error.message.split('\n').length, 1)
          return true
        },
      )
    })
  }
})

describe('host and port lists in the query, as libpq reads them', () => {
  const targets = (url: string) => parseHostList(url).hosts.map((host) => host.target)

  it('takes a port= for every host, where the statements then go', () => {
    const list = parseHostList(
      `postgres://u:${PASSWORD}@h:1,h:2/fs?port=5481&target_session_attrs=read-write`,
    )
    assert.deepEqual(
      list.hosts.map((host) => host.target),
      ['h:5481', 'h:5481'],
    )
    // Each host's URL names its own port alone: node-postgres lets a port= in the query win.
    assert.equal(list.hosts[0]?.url, `postgres://u:${PASSWORD}@h:5481/fs`)
  })

  it('takes a port list, one port per host, and an empty item as 5432', () => {
    assert.deepEqual(targets('postgres://u@h,h/fs?port=1,5481'), ['h:1', 'h:5481'])
    assert.deepEqual(targets('postgres://u@a,b/fs?port=5433,'), ['a:5433', 'b:5432'])
    const list = parseHostList('postgres://u@a,b/fs?sslmode=prefer&port=1,2&application_name=x')
    assert.deepEqual(list.hosts[1], {
      target: 'b:2',
      url: 'postgres://u@b:2/fs?sslmode=prefer&application_name=x',
      plainUrl: 'postgres://u@b:2/fs?sslmode=disable&application_name=x',
    })
  })

  it('takes a host list in the query over the host part, which keeps its ports', () => {
    assert.deepEqual(targets('postgres://u@/fs?host=a,b&port=1,2'), ['a:1', 'b:2'])
    assert.deepEqual(targets('postgres://u@x:9,y/fs?host=a,b'), ['a:9', 'b:5432'])
    assert.deepEqual(targets('postgres://u@/fs?host=::1,a%2Eb&port=6000'), ['[::1]:6000', 'a.b:6000'])
    // The last host= or port= given wins, as in libpq.
    assert.deepEqual(targets('postgres://u@a,b/fs?port=1&port=2,3'), ['a:2', 'b:3'])
  })

  it('names the port a single host is reached on, a query port included', () => {
    assert.deepEqual(targets('postgres://u@h:1/fs?port=5433'), ['h:5433'])
    assert.deepEqual(targets('postgres://u@h:1/fs?host=db&port=7&port=8'), ['db:8'])
  })

  for (const [name, url, reason] of [
    ['more ports than hosts', 'postgres://u:PW@h,h/fs?port=1,2,3', /has 3 ports for 2 hosts/],
    ['a port list for one host', 'postgres://u:PW@h/fs?port=1,2', /has 2 ports for 1 host /],
    ['a host= list shorter than the ports', 'postgres://u:PW@a:1,b:2/fs?host=c', /has 2 ports for 1 host /],
    ['a bad port in the list', 'postgres://u:PW@h,h/fs?port=1,x', /host 2 has port x/],
    ['a bad port for one host', 'postgres://u:PW@h/fs?port=99999', /host 1 has port 99999/],
    ['an empty host in the list', 'postgres://u:PW@/fs?host=a,,b', /empty host entry \(host 2\)/],
    ['a socket directory in a list', 'postgres://u:PW@/fs?host=/run/pg,a', /socket directory/],
  ] as const) {
    it(`stops start-up on ${name}, in one line naming DATABASE_URL, never the password`, () => {
      assert.throws(
        () => parseDatabaseUrl(url.replace('PW', PASSWORD)),
        (error: Error) => {
          assert.match(error.message, /^DATABASE_URL: /)
          assert.match(error.message, reason)
          assert.doesNotMatch(error.message, new RegExp(PASSWORD))
          assert.equal(error.message.split('\n').length, 1)
          return true
        },
      )
    })
  }

  it('keeps a query port list inside its DATABASE_READ_URLS entry', () => {
    assert.deepEqual(splitUrlList('postgres://u@h,h/db?port=1,2&x=1,postgres://u@c/db?host=a,b'), [
      'postgres://u@h,h/db?port=1,2&x=1',
      'postgres://u@c/db?host=a,b',
    ])
    const config = loadConfig({ DATABASE_READ_URLS: 'postgres://u@h,h/db?port=1,2,postgres://u@c/db' })
    assert.deepEqual(config.databaseReadUrls, ['postgres://u@h,h/db?port=1,2', 'postgres://u@c/db'])
  })
})

describe('host lists in DATABASE_READ_URLS', () => {
  it('keeps each entry whole, hosts and all, between the commas that separate entries', () => {
    assert.deepEqual(splitUrlList('postgres://u@a:1,b:2/db?x=1, postgres://u@c/db'), [
      'postgres://u@a:1,b:2/db?x=1',
      'postgres://u@c/db',
    ])
    assert.deepEqual(splitUrlList('postgres://u@a/db,,postgres://u@c/db'), [
      'postgres://u@a/db',
      '',
      'postgres://u@c/db',
    ])
  })

  it('accepts multi-host entries and refuses a malformed one in one line without the password', () => {
    const config = loadConfig({ DATABASE_READ_URLS: 'postgres://u:p@a:5433,b:5434/db,postgres://u:p@c/db' })
    assert.deepEqual(config.databaseReadUrls, ['postgres://u:p@a:5433,b:5434/db', 'postgres://u:p@c/db'])
    assert.throws(
      () => loadConfig({ DATABASE_READ_URLS: `postgres://u:${PASSWORD}@a:5433,:0/db` }),
      (error: Error) => {
        assert.match(error.message, /^DATABASE_READ_URLS: .*entry 1 has a malformed host entry \(host 2\)/)
        assert.doesNotMatch(error.message, new RegExp(PASSWORD))
        return true
      },
    )
    assert.throws(
      () => loadConfig({ DATABASE_READ_URLS: 'postgres://u@a/db,junk' }),
      /entry 2 is not a postgres:\/\/ URL/,
    )
  })
})

describe('FAILOVER_WAIT_MS', () => {
  it('defaults to 10 s, takes 0, and refuses what is not a whole number of ms', () => {
    assert.equal(loadConfig({}).failoverWaitMs, 10_000)
    assert.equal(loadConfig({ FAILOVER_WAIT_MS: '0' }).failoverWaitMs, 0)
    assert.throws(() => loadConfig({ FAILOVER_WAIT_MS: '-1' }), /FAILOVER_WAIT_MS/)
  })
})

describe('sslmode=prefer, as pg_autoctl show uri writes it', () => {
  it('keeps a plain fallback URL for each host (libpq tries SSL, then without)', () => {
    const list = parseHostList('postgres://u@a:1,b:2/db?target_session_attrs=read-write&sslmode=prefer')
    assert.deepEqual(list.hosts[0], {
      target: 'a:1',
      url: 'postgres://u@a:1/db?sslmode=prefer',
      plainUrl: 'postgres://u@a:1/db?sslmode=disable',
    })
    assert.equal(parseHostList('postgres://u@a:1,b:2/db?sslmode=require').hosts[0]?.plainUrl, undefined)
    // One host not followed: node-postgres reads it as it always did.
    assert.equal(parseHostList('postgres://u@a:1/db?sslmode=prefer').hosts[0]?.plainUrl, undefined)
  })
})
