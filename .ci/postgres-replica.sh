# A streaming replica of the machine's PostgreSQL 15 cluster `15 main` (source after
# .ci/postgres.sh and start_postgres): a second cluster, `15 replica` on REPLICA_PORT
# (default 5433), made with pg_basebackup -R -X stream -c fast. Run as root.
#
#   source .ci/postgres.sh && start_postgres && export TEST_DATABASE_URL
#   source .ci/postgres-replica.sh && start_postgres_replica && export TEST_DATABASE_READ_URL
#
# Sets TEST_DATABASE_READ_URL: TEST_DATABASE_URL with the replica's port (the same role and
# database: a physical replica holds every database and role of the primary). Idempotent: a
# replica that is running and streaming from the primary is kept; anything else of that
# name is dropped and made again. The primary is only reloaded, never restarted.
REPLICA_CLUSTER="${REPLICA_CLUSTER:-replica}"
REPLICA_PORT="${REPLICA_PORT:-5433}"

# psql as the postgres superuser on a local port, quiet, stopping at the first error.
_replica_psql() {
  local port="$1"
  shift
  su postgres -c "psql -p ${port} -qAtX -v ON_ERROR_STOP=1 $*"
}

# The primary must let the postgres superuser stream over its local socket, and its
# settings must allow a WAL sender (Debian's PG 15 defaults do: wal_level=replica,
# max_wal_senders=10). pg_hba.conf is read again on reload; the WAL settings need a restart,
# which this script refuses to do to a shared server.
_replica_prepare_primary() {
  local hba wal_level senders
  hba="$(_replica_psql 5432 -c "'SHOW hba_file'")"
  if ! grep -Eq '^[[:space:]]*local[[:space:]]+replication[[:space:]]+(all|postgres)[[:space:]]+(peer|trust)' "$hba"; then
    printf '%s\n' 'local   replication     postgres                                peer' >>"$hba"
    _replica_psql 5432 -c "'SELECT pg_reload_conf()'" >/dev/null
  fi
  wal_level="$(_replica_psql 5432 -c "'SHOW wal_level'")"
  senders="$(_replica_psql 5432 -c "'SHOW max_wal_senders'")"
  if [ "$wal_level" = minimal ] || [ "$senders" -lt 2 ]; then
    echo "postgres-replica: the primary has wal_level=${wal_level}, max_wal_senders=${senders};" \
      "streaming needs wal_level=replica and max_wal_senders >= 2 (a restart of the primary)" >&2
    return 1
  fi
}

# True when the replica answers, is in recovery and its WAL receiver streams.
_replica_is_streaming() {
  [ "$(_replica_psql "$REPLICA_PORT" -c "\"SELECT pg_is_in_recovery() AND EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming')\"" 2>/dev/null)" = t ]
}

_replica_create() {
  local data="/var/lib/postgresql/15/${REPLICA_CLUSTER}"
  if pg_lsclusters -h | grep -q "^15 *${REPLICA_CLUSTER} "; then
    pg_dropcluster --stop 15 "$REPLICA_CLUSTER"
  fi
  if ss -Hltn "sport = :${REPLICA_PORT}" | grep -q .; then
    echo "postgres-replica: port ${REPLICA_PORT} is taken by something else (set REPLICA_PORT)" >&2
    return 1
  fi
  pg_createcluster 15 "$REPLICA_CLUSTER" -p "$REPLICA_PORT" >/dev/null
  rm -rf "$data"
  # Over the local socket as postgres (peer authentication): no password is written anywhere.
  su postgres -c "pg_basebackup -p 5432 -D '${data}' -R -X stream -c fast"
  pg_ctlcluster --skip-systemctl-redirect 15 "$REPLICA_CLUSTER" start
}

start_postgres_replica() {
  if [ -z "${TEST_DATABASE_URL:-}" ]; then
    echo "postgres-replica: run start_postgres first (TEST_DATABASE_URL is not set)" >&2
    return 1
  fi
  _replica_prepare_primary || return 1
  if ! _replica_is_streaming; then
    _replica_create || return 1
  fi
  local ok=''
  for _ in $(seq 1 60); do
    if _replica_is_streaming; then ok=1 && break; fi
    sleep 1
  done
  if [ -z "$ok" ]; then
    echo "postgres-replica: the replica on port ${REPLICA_PORT} did not start streaming" >&2
    return 1
  fi
  TEST_DATABASE_READ_URL="$(printf '%s' "$TEST_DATABASE_URL" | sed -E "s#@([^:/]+):5432/#@\1:${REPLICA_PORT}/#")"
  # Replay works: the test database (created after any earlier base backup) is there.
  local db="${TEST_DATABASE_URL##*/}"
  db="${db%%\?*}"
  for _ in $(seq 1 30); do
    if [ "$(_replica_psql "$REPLICA_PORT" -c "\"SELECT count(*) FROM pg_database WHERE datname = '${db}'\"")" = 1 ]; then
      return 0
    fi
    sleep 1
  done
  echo "postgres-replica: the replica on port ${REPLICA_PORT} does not replay (no database ${db})" >&2
  return 1
}
