#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 with a `test` database (what the Postgres tests use).
# Starts the machine's Debian cluster when it is down; fails loudly (never skips) when it cannot.
set -euo pipefail
ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
if ! ready; then
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$version" ]; then
    echo "ensure-postgres: no PostgreSQL cluster under /etc/postgresql and nothing answers on 127.0.0.1:5432" >&2
    exit 1
  fi
  echo "ensure-postgres: starting PostgreSQL $version/main" >&2
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 50); do ready && break; sleep 0.2; done
  ready || { echo "ensure-postgres: PostgreSQL $version/main did not come up on 127.0.0.1:5432" >&2; exit 1; }
fi
# The tests connect as postgres (trust) to database `test`.
if ! psql -h 127.0.0.1 -U postgres -d test -Atqc 'SELECT 1' >/dev/null 2>&1; then
  psql -h 127.0.0.1 -U postgres -d postgres -qc 'CREATE DATABASE test' >&2
fi
