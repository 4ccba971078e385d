#!/usr/bin/env bash
# pgtest.sh - a throwaway PostgreSQL cluster for tests and benchmarks.
#
#   scripts/pgtest.sh start DIR          initdb a fresh cluster into DIR/data and start it
#   scripts/pgtest.sh stop DIR           stop it at once (-m immediate) and rm -rf DIR
#   scripts/pgtest.sh restart DIR [S]    stop the server, wait S seconds (default 0), start
#                                        it again on the same socket (fault tests)
#   scripts/pgtest.sh halt DIR           stop the server but keep DIR (pair with `resume`)
#   scripts/pgtest.sh resume DIR         start a halted server again
#   scripts/pgtest.sh exec DIR NAME CMD...
#                                        (re)create database NAME, run CMD with its URIs
#                                        in the environment (below), drop NAME afterwards;
#                                        the exit code is CMD's
#   scripts/pgtest.sh createdb DIR NAME  (re)create database NAME, owned by `privgen`
#   scripts/pgtest.sh uri DIR [NAME]     print the app URI (of database NAME)
#
# `exec` sets PRIVGEN_TEST_DB (app URI of NAME), PRIVGEN_TEST_PG_ADMIN (the
# superuser's URI of NAME), PRIVGEN_TEST_PG_DIR (DIR), and for the
# integration suites (tests/integration/itest.h) PRIVGEN_TEST_DB_URL (the
# app URI with database "%s") and PRIVGEN_TEST_DB_CREATE (this script's
# `createdb DIR`), so each privgend a test starts gets a database of its own.
#
# After `start`, DIR/uri holds the libpq URI of database `privgen` for role
# `privgen` (password auth, the password is in the URI), and DIR/admin_uri the
# URI of the superuser `postgres` (trust auth) used for cluster-level actions
# such as pg_terminate_backend in fault tests. The server listens on a Unix
# socket only (listen_addresses=''). Data, socket and logs live in DIR
# itself or, when DIR's path is too long for a socket name or DIR is not
# reachable by the cluster's owner (a clone under /root), in a directory
# /tmp/pgtest.XXXXXX named in DIR/home and removed with it. fsync is off: the
# cluster is scratch, never data anyone keeps.
#
# PostgreSQL refuses to run as root, and CI runs as root: then the cluster
# belongs to the Debian `postgres` system user (runuser), and DIR is chowned
# to it. A cluster left behind by a killed earlier run (stale postmaster.pid)
# is stopped and removed by `start` before it creates the new one, so `start`
# is always safe to repeat. Binaries come from /usr/lib/postgresql/*/bin
# (newest version), or from PG_BINDIR when set.
set -euo pipefail

die() {
  echo "pgtest.sh: $*" >&2
  exit 1
}

bindir() {
  if [ -n "${PG_BINDIR:-}" ]; then
    echo "$PG_BINDIR"
    return
  fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] || die "no PostgreSQL server found (scripts/deps.sh installs it)"
  echo "$d"
}

# Runs a command as the cluster's owner: `postgres` when we are root.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Where a cluster's data, socket and logs are (see above).
home_of() {
  local dir=$1
  if [ -f "$dir/home" ]; then cat "$dir/home"; else echo "$dir"; fi
}

# URI-encodes a socket directory for the host part of a libpq URI.
enc() {
  local s=$1 out="" c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case "$c" in
      [A-Za-z0-9._~-]) out+=$c ;;
      *) out+=$(printf '%%%02X' "'$c") ;;
    esac
  done
  echo "$out"
}

pid_alive() {
  local home pid
  home=$(home_of "$1")
  [ -f "$home/data/postmaster.pid" ] || return 1
  pid=$(head -n 1 "$home/data/postmaster.pid" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

stop_server() {
  local dir=$1 bin pid home
  home=$(home_of "$dir")
  [ -d "$home/data" ] || return 0
  bin=$(bindir)
  if pid_alive "$dir"; then
    as_owner "$bin/pg_ctl" -D "$home/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  # pg_ctl may fail on a half-initialized data dir: the postmaster's pid
  # (first line of postmaster.pid) is the fallback.
  if pid_alive "$dir"; then
    pid=$(head -n 1 "$home/data/postmaster.pid")
    kill -QUIT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
}

start_server() {
  local dir=$1 bin home
  bin=$(bindir)
  home=$(home_of "$dir")
  as_owner "$bin/pg_ctl" -D "$home/data" -l "$home/server.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$home'" start >/dev/null ||
    { tail -n 20 "$home/server.log" >&2 || true; die "server in $home did not start"; }
}

psql_admin() {
  local dir=$1
  shift
  PGOPTIONS='-c client_min_messages=warning' "$(bindir)/psql" -X -q -v ON_ERROR_STOP=1 "$(cat "$dir/admin_uri")" "$@"
}

cmd_stop() {
  local dir=$1 sock
  [ -e "$dir" ] || return 0
  stop_server "$dir"
  if [ -f "$dir/home" ]; then
    sock=$(cat "$dir/home")
    case "$sock" in /tmp/pgtest.*) rm -rf "$sock" ;; esac
  fi
  rm -rf "$dir"
}

cmd_start() {
  local dir=$1 bin home pw owner=""
  bin=$(bindir)
  cmd_stop "$dir" # a stale cluster from a killed run, if any
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  home=$dir
  if [ "$(id -u)" -eq 0 ]; then
    getent passwd postgres >/dev/null || die "user postgres missing (install the postgresql package)"
    owner=postgres
    chown postgres: "$dir"
  fi
  # A Unix socket path is limited to 107 bytes ("/.s.PGSQL.5432" needs 14),
  # and every parent of DIR must be searchable by the owner.
  if [ ${#dir} -gt 90 ] || { [ -n "$owner" ] && ! runuser -u postgres -- test -w "$dir"; }; then
    home=$(mktemp -d /tmp/pgtest.XXXXXX)
    echo "$home" >"$dir/home"
    if [ -n "$owner" ]; then chown postgres: "$home"; fi
  fi
  chmod 0700 "$home"
  pw=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  printf '%s\n' "$pw" >"$home/.pw"
  if [ -n "$owner" ]; then chown "$owner" "$home/.pw"; fi
  as_owner "$bin/initdb" -D "$home/data" -U postgres -E UTF8 --locale=C -A trust \
    --pwfile="$home/.pw" --no-sync >"$home/initdb.log" 2>&1 ||
    { tail -n 20 "$home/initdb.log" >&2; die "initdb failed"; }
  rm -f "$home/.pw"
  # The superuser may enter without a password (cluster-level test actions);
  # every other role must present one, as in production.
  as_owner sh -c "cat >'$home/data/pg_hba.conf'" <<'EOF'
local all postgres trust
local all all scram-sha-256
EOF
  as_owner sh -c "cat >>'$home/data/postgresql.conf'" <<'EOF'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
shared_buffers = 64MB
log_min_messages = warning
log_line_prefix = '%m [%p] '
EOF
  start_server "$dir"
  local esock
  esock=$(enc "$home")
  echo "postgresql://postgres@$esock/postgres" >"$dir/admin_uri"
  psql_admin "$dir" -c "CREATE ROLE privgen LOGIN CREATEDB PASSWORD '$pw'" \
    -c "GRANT pg_signal_backend TO privgen" -c "CREATE DATABASE privgen OWNER privgen"
  echo "postgresql://privgen:$pw@$esock/privgen" >"$dir/uri"
  chmod 0644 "$dir/uri" "$dir/admin_uri"
  chmod 0711 "$dir" "$home" # clients reach the socket; the data dir stays 0700
  echo "pgtest.sh: cluster up in $dir (socket in $home)" >&2
}

db_uri() {
  local dir=$1 name=$2
  sed -E "s#/[^/]*\$#/$name#" "$dir/uri"
}

valid_name() {
  [[ $1 =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || die "bad database name: $1"
}

cmd_createdb() {
  local dir=$1 name=$2
  valid_name "$name"
  [ -f "$dir/uri" ] || die "no cluster in $dir (run: pgtest.sh start $dir)"
  psql_admin "$dir" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" \
    -c "CREATE DATABASE $name OWNER privgen" >/dev/null
}

cmd_exec() {
  local dir=$1 name=$2 self
  shift 2
  cmd_createdb "$dir" "$name"
  dir=$(cd "$dir" && pwd)
  self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
  local rc=0
  PRIVGEN_TEST_DB=$(db_uri "$dir" "$name") PRIVGEN_TEST_PG_ADMIN=$(sed -E "s#/[^/]*\$#/$name#" "$dir/admin_uri") \
    PRIVGEN_TEST_PG_DIR=$dir PRIVGEN_TEST_DB_URL=$(db_uri "$dir" '%s') \
    PRIVGEN_TEST_DB_CREATE="$self createdb $dir" "$@" || rc=$?
  psql_admin "$dir" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true
  return $rc
}

[ $# -ge 2 ] || { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
action=$1
dir=$2
shift 2
case "$action" in
  start) cmd_start "$dir" ;;
  stop) cmd_stop "$dir" ;;
  halt) stop_server "$dir" ;;
  resume) start_server "$dir" ;;
  restart)
    stop_server "$dir"
    sleep "${1:-0}"
    start_server "$dir"
    ;;
  exec)
    [ $# -ge 2 ] || die "usage: pgtest.sh exec DIR NAME CMD..."
    cmd_exec "$dir" "$@"
    ;;
  createdb)
    [ $# -ge 1 ] || die "usage: pgtest.sh createdb DIR NAME"
    cmd_createdb "$dir" "$1"
    ;;
  uri)
    if [ $# -ge 1 ]; then valid_name "$1"; db_uri "$dir" "$1"; else cat "$dir/uri"; fi
    ;;
  *) die "unknown action $action (start, stop, restart, halt, resume, exec, createdb, uri)" ;;
esac
