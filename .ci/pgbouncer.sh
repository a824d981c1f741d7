# PgBouncer from the distribution's package (Debian 12: 1.18) in front of the machine's
# PostgreSQL (source after .ci/postgres.sh and start_postgres), in transaction mode with a
# stock configuration: the address, the authentication and pool_mode are set, nothing else
# (no ignore_startup_parameters, no max_prepared_statements). Run as root: PgBouncer
# refuses to run as root, so it runs as the postgres user.
#
#   source .ci/postgres.sh && start_postgres && export TEST_DATABASE_URL
#   source .ci/pgbouncer.sh && start_pgbouncer && export TEST_POOLER_URL
#
# Sets TEST_POOLER_URL: TEST_DATABASE_URL through PgBouncer (the same role, password and
# database; every database name is passed on to TEST_DATABASE_URL's server). PGBOUNCER_PORT (default
# 6435) and PGBOUNCER_DIR (its configuration, log and pid file) choose another instance, as
# the tests that restart one do, and PGBOUNCER_EXTRA adds lines to its [pgbouncer] section
# (a misconfigured pooler's); stop_pgbouncer stops the one of PGBOUNCER_DIR.
PGBOUNCER_PORT="${PGBOUNCER_PORT:-6435}"
PGBOUNCER_DIR="${PGBOUNCER_DIR:-/tmp/folder-service-pgbouncer-${PGBOUNCER_PORT}}"

_pgbouncer_install() {
  if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
  fi
}

_pgbouncer_bin() {
  command -v pgbouncer 2>/dev/null || echo /usr/sbin/pgbouncer
}

# The pid of the PgBouncer of PGBOUNCER_DIR when it runs, else nothing.
_pgbouncer_pid() {
  local pid
  pid="$(cat "${PGBOUNCER_DIR}/pgbouncer.pid" 2>/dev/null)" || return 0
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

_pgbouncer_write_config() {
  # postgres://user:password@host:port/database
  local rest user password server
  rest="${TEST_DATABASE_URL#*://}"
  user="${rest%%:*}"
  password="${rest#*:}"
  password="${password%%@*}"
  server="${rest#*@}"
  server="${server%%/*}"
  mkdir -p "$PGBOUNCER_DIR"
  cat >"${PGBOUNCER_DIR}/pgbouncer.ini" <<INI
[databases]
* = host=${server%%:*} port=${server##*:}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${PGBOUNCER_PORT}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = ${PGBOUNCER_DIR}/userlist.txt
pool_mode = transaction
logfile = ${PGBOUNCER_DIR}/pgbouncer.log
pidfile = ${PGBOUNCER_DIR}/pgbouncer.pid
${PGBOUNCER_EXTRA:-}
INI
  printf '"%s" "%s"\n' "$user" "$password" >"${PGBOUNCER_DIR}/userlist.txt"
  chmod 600 "${PGBOUNCER_DIR}/userlist.txt"
  if [ "$(id -u)" = 0 ]; then chown -R postgres "$PGBOUNCER_DIR"; fi
}

stop_pgbouncer() {
  local pid
  pid="$(_pgbouncer_pid)"
  [ -n "$pid" ] || return 0
  kill -TERM "$pid"
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "pgbouncer: pid ${pid} did not stop" >&2
  return 1
}

start_pgbouncer() {
  if [ -z "${TEST_DATABASE_URL:-}" ]; then
    echo "pgbouncer: run start_postgres first (TEST_DATABASE_URL is not set)" >&2
    return 1
  fi
  _pgbouncer_install
  # A PgBouncer of this directory from an earlier run has another run's user list.
  stop_pgbouncer || return 1
  if ss -Hltn "sport = :${PGBOUNCER_PORT}" | grep -q .; then
    echo "pgbouncer: port ${PGBOUNCER_PORT} is taken by something else (set PGBOUNCER_PORT)" >&2
    return 1
  fi
  _pgbouncer_write_config
  local as_user=()
  if [ "$(id -u)" = 0 ]; then as_user=(-u postgres); fi
  "$(_pgbouncer_bin)" -d "${as_user[@]}" "${PGBOUNCER_DIR}/pgbouncer.ini" >/dev/null
  for _ in $(seq 1 50); do
    if ss -Hltn "sport = :${PGBOUNCER_PORT}" | grep -q .; then break; fi
    sleep 0.1
  done
  if ! ss -Hltn "sport = :${PGBOUNCER_PORT}" | grep -q .; then
    echo "pgbouncer: did not listen on ${PGBOUNCER_PORT}:" >&2
    tail -n 5 "${PGBOUNCER_DIR}/pgbouncer.log" >&2
    return 1
  fi
  local rest
  rest="${TEST_DATABASE_URL#*://}"
  TEST_POOLER_URL="postgres://${rest%%@*}@127.0.0.1:${PGBOUNCER_PORT}/${rest#*/}"
}
