# A pg_auto_failover formation on loopback for the failover test (test/faults/pg-auto-failover.test.ts): a
# monitor and three data nodes of PostgreSQL 15, each with its own PGDATA under
# FAILOVER_DIR and its own port (FAILOVER_PORT, the monitor, then the next three), run by
# `pg_autoctl` as the postgres OS user, beside the machine's cluster and its replica.
# Source after .ci/postgres.sh; run as root:
#
#   source .ci/postgres-failover.sh && start_postgres_failover && export TEST_FAILOVER_URL
#
# Sets TEST_FAILOVER_URL: `pg_autoctl show uri` of the formation (three hosts,
# target_session_attrs=read-write) with a role of this run that may create databases.
# The monitor's health checks are made fast (a check every 500 ms, a node unhealthy after
# 2 s, 3 s for an unreachable primary to demote itself) so a crashed primary is replaced in
# seconds rather than the default minute: fine for a test, too eager for a real network.
# Idempotent: a formation that runs with a primary and two secondaries is kept.
FAILOVER_DIR="${FAILOVER_DIR:-/var/lib/postgresql/failover-ci}"
FAILOVER_PORT="${FAILOVER_PORT:-6000}"
FAILOVER_DB="${FAILOVER_DB:-folder_service}"

_failover_as_postgres() {
  su postgres -c "PATH=/usr/lib/postgresql/15/bin:\$PATH; $*"
}

_failover_monitor_uri() {
  echo "postgres://autoctl_node@127.0.0.1:${FAILOVER_PORT}/pg_auto_failover?sslmode=disable"
}

# The number of nodes in `state` (primary, secondary) as the monitor sees them.
_failover_count() {
  _failover_as_postgres "psql -p ${FAILOVER_PORT} -d pg_auto_failover -qAtX -c \
    \"SELECT count(*) FROM pgautofailover.node WHERE reportedstate = '$1' AND goalstate = '$1'\"" 2>/dev/null || echo 0
}

_failover_healthy() {
  [ "$(_failover_count primary)" = 1 ] && [ "$(_failover_count secondary)" = 2 ]
}

# Starts `pg_autoctl run` for one PGDATA in the background, detached, logging beside it, in
# the formation's own directory: a keeper started in a checkout that is later removed can no
# longer restart its postgres ("could not identify current directory"), so a kept formation
# would fail its next switchover.
_failover_run() {
  local pgdata="$1"
  _failover_as_postgres "cd '${FAILOVER_DIR}' && setsid nohup pg_autoctl run --pgdata '${pgdata}' >'${pgdata}.log' 2>&1 </dev/null &"
}

_failover_wait() {
  local what="$1" tries="$2"
  shift 2
  for _ in $(seq 1 "$tries"); do
    "$@" && return 0
    sleep 1
  done
  echo "postgres-failover: ${what} did not happen in ${tries} s" >&2
  return 1
}

# A lone first node is `single`; once others join it is `primary` beside `secondary` ones.
_failover_node_ready() {
  if [ "$1" = 0 ]; then
    [ "$(_failover_count single)" = 1 ]
  else
    [ "$(_failover_count primary)" = 1 ] && [ "$(_failover_count secondary)" -ge "$1" ]
  fi
}

# Ends every pg_autoctl of the formation and removes its data.
stop_postgres_failover() {
  local pgdata
  for pgdata in "${FAILOVER_DIR}"/node* "${FAILOVER_DIR}/monitor"; do
    [ -d "$pgdata" ] || continue
    _failover_as_postgres "pg_autoctl stop --pgdata '${pgdata}' --immediate" >/dev/null 2>&1 || true
  done
  sleep 1
  for pgdata in "${FAILOVER_DIR}"/node* "${FAILOVER_DIR}/monitor"; do
    [ -d "$pgdata" ] || continue
    _failover_as_postgres "pg_ctl -D '${pgdata}' -m immediate stop" >/dev/null 2>&1 || true
  done
  # pg_autoctl keeps each node's configuration and state outside PGDATA, under the postgres
  # user's XDG directories by PGDATA path: a node made again at that path would read them.
  rm -rf "${FAILOVER_DIR}" ~postgres/.config/pg_autoctl"${FAILOVER_DIR}" ~postgres/.local/share/pg_autoctl"${FAILOVER_DIR}"
}

_failover_create() {
  stop_postgres_failover
  install -d -o postgres -g postgres "${FAILOVER_DIR}"
  _failover_as_postgres "pg_autoctl create monitor --pgdata '${FAILOVER_DIR}/monitor' --pgport ${FAILOVER_PORT} \
    --hostname 127.0.0.1 --auth trust --no-ssl" >"${FAILOVER_DIR}/create-monitor.log" 2>&1
  _failover_run "${FAILOVER_DIR}/monitor"
  _failover_wait "the monitor answering" 60 \
    _failover_as_postgres "psql -p ${FAILOVER_PORT} -d pg_auto_failover -qAtX -c 'SELECT 1'" >/dev/null 2>&1
  # Health checks fast enough for a test: the defaults take 20-30 s to declare a node gone.
  _failover_as_postgres "psql -p ${FAILOVER_PORT} -d pg_auto_failover -qX -v ON_ERROR_STOP=1" <<'SQL' >/dev/null
ALTER SYSTEM SET pgautofailover.health_check_period = 500;
ALTER SYSTEM SET pgautofailover.health_check_timeout = 500;
ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1;
ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 200;
ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 2000;
-- How long the monitor waits for a primary it cannot reach to demote itself before it
-- promotes another (default 30 s): the crash test's primary is dead, not partitioned.
ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 3000;
SELECT pg_reload_conf();
SQL
  local n
  for n in 1 2 3; do
    _failover_as_postgres "pg_autoctl create postgres --pgdata '${FAILOVER_DIR}/node${n}' \
      --pgport $((FAILOVER_PORT + n)) --hostname 127.0.0.1 --name node${n} --auth trust --no-ssl \
      --dbname ${FAILOVER_DB} --monitor '$(_failover_monitor_uri)'" >"${FAILOVER_DIR}/create-node${n}.log" 2>&1
    _failover_run "${FAILOVER_DIR}/node${n}"
    _failover_wait "node${n} joining" 120 _failover_node_ready $((n - 1))
  done
}

start_postgres_failover() {
  if ! command -v pg_autoctl >/dev/null 2>&1 || [ ! -e /usr/lib/postgresql/15/lib/pgautofailover.so ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pg-auto-failover-cli postgresql-15-auto-failover >/dev/null
  fi
  _failover_healthy || _failover_create
  _failover_healthy || { echo "postgres-failover: the formation is not healthy" >&2; return 1; }
  local uri primary_port role password
  uri="$(_failover_as_postgres "pg_autoctl show uri --pgdata '${FAILOVER_DIR}/monitor' --formation default")"
  primary_port="$(_failover_as_postgres "psql -p ${FAILOVER_PORT} -d pg_auto_failover -qAtX -c \
    \"SELECT nodeport FROM pgautofailover.node WHERE reportedstate = 'primary'\"")"
  role="folder_service_failover_$$"
  password="ci_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  _failover_as_postgres "psql -p ${primary_port} -d ${FAILOVER_DB} -qX -v ON_ERROR_STOP=1" <<SQL >/dev/null
DROP ROLE IF EXISTS ${role};
CREATE ROLE ${role} LOGIN PASSWORD '${password}' CREATEDB;
GRANT ALL ON DATABASE ${FAILOVER_DB} TO ${role};
ALTER DATABASE ${FAILOVER_DB} OWNER TO ${role};
SQL
  # show uri writes postgres://host:port,host:port,.../db?...: the role goes before the hosts.
  TEST_FAILOVER_URL="${uri/postgres:\/\//postgres://${role}:${password}@}"
  FAILOVER_PGDATA="${FAILOVER_DIR}"
}
