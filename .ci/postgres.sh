# Starts the machine's PostgreSQL 15 (installing it when missing) and creates a fresh
# role and database for this run. Sets TEST_DATABASE_URL and TEST_DB_NAME.
start_postgres() {
  if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ ! -d /usr/lib/postgresql/15 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
  fi
  if ! pg_lsclusters -h 2>/dev/null | grep -q '^15 *main'; then
    pg_createcluster 15 main >/dev/null
  fi
  if ! pg_lsclusters -h | grep -q '^15 *main .* online'; then
    pg_ctlcluster --skip-systemctl-redirect 15 main start
  fi
  for _ in $(seq 1 30); do
    su postgres -c "psql -qAtc 'select 1'" >/dev/null 2>&1 && break
    sleep 1
  done
  TEST_DB_NAME="folder_service_ci_$$"
  local password="ci_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  su postgres -c "psql -q -v ON_ERROR_STOP=1" <<SQL >/dev/null
DROP DATABASE IF EXISTS ${TEST_DB_NAME};
DROP ROLE IF EXISTS ${TEST_DB_NAME};
CREATE ROLE ${TEST_DB_NAME} LOGIN PASSWORD '${password}' CREATEDB;
CREATE DATABASE ${TEST_DB_NAME} OWNER ${TEST_DB_NAME};
SQL
  TEST_DATABASE_URL="postgres://${TEST_DB_NAME}:${password}@127.0.0.1:5432/${TEST_DB_NAME}"
}
