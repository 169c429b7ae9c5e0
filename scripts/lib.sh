# shellcheck shell=bash
# Shared helpers for the project's scripts: install and start project-local
# MariaDB and Redis instances, so that a fresh Debian machine needs nothing
# done by hand. Sourced, not run.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    die "need root to run: $* (install it yourself, or run as root)"; fi
}

# ensure_packages installs the Debian packages that provide the given
# commands (or, for an absolute path, files) when any of them is missing.
# apt-get update runs only then.
ensure_packages() {
  local missing=() cmd pkg
  for pair in "$@"; do
    cmd="${pair%%:*}"; pkg="${pair#*:}"
    command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || { [[ "$cmd" == /* ]] && [ -e "$cmd" ]; } ||
      missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing ${missing[*]} (apt-get)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_go() {
  command -v go >/dev/null 2>&1 && return 0
  [ -x /usr/local/go/bin/go ] && { export PATH="/usr/local/go/bin:$PATH"; return 0; }
  die "Go is not installed (https://go.dev/doc/install)"
}

mariadbd_bin() {
  command -v mariadbd 2>/dev/null || command -v mysqld 2>/dev/null ||
    { [ -x /usr/sbin/mariadbd ] && echo /usr/sbin/mariadbd; } ||
    { [ -x /usr/sbin/mysqld ] && echo /usr/sbin/mysqld; } || die "mariadbd not found"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}

# start_mariadb DIR PORT: a private MariaDB with its data in DIR, listening on
# 127.0.0.1:PORT, with a user counters/counters that may create databases.
# Reuses an instance that is already running from DIR.
start_mariadb() {
  local dir="$1" port="$2" bin user=()
  bin="$(mariadbd_bin)"
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && user=(--user=root)
  if [ -f "$dir/mariadb.pid" ] && kill -0 "$(cat "$dir/mariadb.pid")" 2>/dev/null; then
    log "MariaDB already running from $dir"
    return 0
  fi
  if [ ! -d "$dir/data/mysql" ]; then
    log "initialising MariaDB data dir $dir/data"
    local ok=""
    for _ in 1 2 3; do # the bootstrap has been seen to fail now and then on a busy machine
      rm -rf "$dir/data"
      if mariadb-install-db --no-defaults "${user[@]}" --datadir="$dir/data" \
        --auth-root-authentication-method=socket --skip-test-db >"$dir/install.log" 2>&1; then ok=1; break; fi
    done
    [ -n "$ok" ] || { cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
  fi
  log "starting MariaDB on 127.0.0.1:$port"
  "$bin" --no-defaults "${user[@]}" --datadir="$dir/data" --socket="$dir/mariadb.sock" \
    --pid-file="$dir/mariadb.pid" --port="$port" --bind-address=127.0.0.1 \
    --skip-name-resolve --max-connections=500 --innodb-buffer-pool-size=256M \
    --log-error="$dir/mariadb.err" >/dev/null 2>&1 &
  local i
  for i in $(seq 1 120); do
    mariadb --no-defaults --socket="$dir/mariadb.sock" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
    [ "$i" -eq 120 ] && { tail -20 "$dir/mariadb.err" >&2; die "MariaDB did not start"; }
    sleep 0.25
  done
  mariadb --no-defaults --socket="$dir/mariadb.sock" -uroot <<'SQL'
CREATE USER IF NOT EXISTS 'counters'@'127.0.0.1' IDENTIFIED BY 'counters';
CREATE USER IF NOT EXISTS 'counters'@'localhost' IDENTIFIED BY 'counters';
GRANT ALL PRIVILEGES ON *.* TO 'counters'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'counters'@'localhost';
CREATE DATABASE IF NOT EXISTS counters;
SQL
}

stop_mariadb() {
  local dir="$1"
  [ -f "$dir/mariadb.pid" ] || return 0
  local pid; pid="$(cat "$dir/mariadb.pid")"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 80); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null || true
}

# start_redis DIR PORT: a private Redis on 127.0.0.1:PORT without persistence
# (it only caches).
start_redis() {
  local dir="$1" port="$2"
  mkdir -p "$dir"
  if [ -f "$dir/redis.pid" ] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; then
    log "Redis already running from $dir"
    return 0
  fi
  log "starting Redis on 127.0.0.1:$port"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save '' --appendonly no >/dev/null
  for i in $(seq 1 40); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    [ "$i" -eq 40 ] && die "Redis did not start"
    sleep 0.1
  done
}

stop_redis() {
  local dir="$1"
  [ -f "$dir/redis.pid" ] || return 0
  kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
}
