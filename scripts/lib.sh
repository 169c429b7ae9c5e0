# shellcheck shell=bash
# Shared helpers for the project's scripts: install and start project-local
# MariaDB and Redis instances, so that a fresh Debian machine needs nothing
# done by hand. Sourced, not run.
#
# They work for root and for an ordinary user alike: root installs what is
# missing with apt-get; a user, who cannot, is told in one line what to run
# as root. The servers they start run as whoever started them, in
# directories of their own, and are detached from the script (their own
# session), so that they outlive it and nothing waits on them by accident.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# package_purpose PKG says why the project needs a Debian package, so that
# whoever installs it knows what the download is for.
package_purpose() {
  case "$1" in
    mariadb-server) echo "the database the service and tests use" ;;
    mariadb-server-core) echo "the database the tests use" ;;
    mariadb-client|mariadb-client-core) echo "to create the database user" ;;
    redis-server) echo "the cache" ;;
    redis-tools) echo "to see that Redis answers" ;;
    gcc) echo "cgo, which go test -race needs" ;;
    libc6-dev) echo "the C headers cgo compiles against" ;;
    curl) echo "the documented examples (README.md, docs/)" ;;
    chromium|chromium-headless-shell) echo "the browser tests (page-hit snippet, dashboard); COUNTERS_TEST_NO_BROWSER=1 skips them" ;;
    python3|python3-pip) echo "the Python client's test, which installs it offline into a venv" ;;
    wrk) echo "the benchmark's load generator" ;;
    galera-4) echo "the Galera cluster of scripts/test --cluster" ;;
    rsync) echo "Galera's state transfer between the cluster test's nodes" ;;
    iproute2) echo "ip, for the tests' client on another address (a network namespace); ss, to see the cluster test's nodes listen" ;;
    nodejs) echo "the TypeScript client's tests (clients/js; npm comes from the npm registry, not apt)" ;;
    *) echo "needed by scripts/${0##*/}" ;;
  esac
}

# ensure_packages installs the Debian packages that provide the given
# commands (cmd:pkg ...) when any of them is missing. As root it runs
# apt-get (update, then install, saying how far it got); anyone else gets one
# line naming the exact command to run as root, since a script that asks
# for a password half-way through is worse than one that stops.
ensure_packages() {
  local missing=() p why="" start="$SECONDS"
  missing_packages "$@"
  missing=("${MISSING[@]}")
  [ "${#missing[@]}" -eq 0 ] && return 0
  for p in "${missing[@]}"; do why+="${why:+, }$p ($(package_purpose "$p"))"; done
  if [ "$(id -u)" -ne 0 ]; then
    die "missing $why; as root, run: sudo apt-get install -y --no-install-recommends ${missing[*]}"
  fi
  command -v apt-get >/dev/null 2>&1 ||
    die "missing $why, and this is no Debian-like system with apt-get: install them yourself"
  log "installing with apt-get: $why"
  apt_update
  local out; out="$(mktemp "${TMPDIR:-/tmp}/apt-get.XXXXXX")"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    -o Dpkg::Use-Pty=0 "${missing[@]}" 2>&1 | apt_progress "$out"; then
    tail -20 "$out" >&2; die "apt-get install ${missing[*]} failed (whole output: $out)"
  fi
  rm -f "$out"
  log "installed ${missing[*]} in $((SECONDS - start)) s"
}

# missing_packages CMD:PKG ... sets MISSING to the packages (each once)
# that provide the commands not found.
missing_packages() {
  local pair cmd pkg
  MISSING=()
  for pair in "$@"; do
    cmd="${pair%%:*}"; pkg="${pair#*:}"
    # A command, or for an absolute path a file (a library, say).
    { command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || { [[ "$cmd" == /* ]] && [ -e "$cmd" ]; }; } && continue
    case " ${MISSING[*]} " in *" $pkg "*) ;; *) MISSING+=("$pkg") ;; esac
  done
}

# start_packages CMD:PKG ... is ensure_packages in the background, for
# root on a machine that lacks some of them: apt-get's download and
# set-up (minutes on a fresh machine, mostly network and disk) then
# overlap what the script does meanwhile (compiling); wait_packages
# waits for it, and fails, after apt-get's own message, when it failed.
# Anyone but root gets ensure_packages' one line at once.
PACKAGES_PID=""
start_packages() {
  missing_packages "$@"
  [ "${#MISSING[@]}" -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 || ensure_packages "$@"
  ensure_packages "$@" &
  PACKAGES_PID=$!
}

wait_packages() {
  [ -n "$PACKAGES_PID" ] || return 0
  local pid="$PACKAGES_PID"
  PACKAGES_PID=""
  wait "$pid" || die "the packages were not installed (apt-get's message is above)"
}

# apt_update fetches the package lists once per script: a fresh machine
# has none, and an old list names versions the mirror no longer has.
APT_UPDATED=""
apt_update() {
  [ -n "$APT_UPDATED" ] && return 0
  log "apt-get update (the package lists)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || die "apt-get update failed"
  APT_UPDATED=1
}

# apt_progress turns apt-get's output (kept whole in $1) into a line every
# APT_PROGRESS_EVERY seconds: the size of the download first, then how many
# packages are fetched and set up, instead of hundreds of lines or none.
APT_PROGRESS_EVERY="${APT_PROGRESS_EVERY:-5}"
apt_progress() {
  local out="$1" line total="?" got=0 setup=0 last="$SECONDS" said=""
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$out"
    case "$line" in
      "Need to get "*) log "  apt-get: ${line%.}" ;;
      *" upgraded, "*" newly installed"*) total="$(apt_changes "$line")" ;;
      Get:*) got=$((got + 1)) ;;
      "Setting up "*) setup=$((setup + 1)) ;;
    esac
    if [ $((SECONDS - last)) -ge "$APT_PROGRESS_EVERY" ] && [ "$said" != "$got/$setup" ] && [ "$got" -gt 0 ]; then
      last="$SECONDS"; said="$got/$setup"
      log "  $got of $total packages downloaded, $setup set up"
    fi
  done
}

# apt_changes reads apt-get's summary ("4 upgraded, 47 newly installed,
# 1 reinstalled, 0 downgraded, 0 to remove and 9 not upgraded.") and prints
# how many packages it fetches: all it installs, upgrades, reinstalls or
# downgrades. The newly installed alone were too few: the upgraded
# dependencies of what is installed are downloaded too ("51 of 47"). A
# package apt finds already in its cache is not fetched again, so the count
# may stop short of the total, never pass it.
apt_changes() {
  local n=0 word re='([0-9]+) (upgraded|newly installed|reinstalled|downgraded)(.*)'
  word="$1"
  while [[ "$word" =~ $re ]]; do
    n=$((n + BASH_REMATCH[1])); word="${BASH_REMATCH[3]}"
  done
  echo "$n"
}

# The npm that the TypeScript client's tests run (internal/clienttest,
# app's tests of Node's clients) where no npm is on PATH: npm's own release
# from the npm registry, checked against the integrity the registry
# publishes for it (pinned here), in .local/npm/VERSION, for root and any
# user alike (no root needed). Debian's npm package pulled in 368 more
# packages (node-* and eslint) for Debian's nodejs' 10: about half of what
# apt-get unpacked on a fresh machine; npm's release is one 3 MB download.
# 10.9.9 is the last npm for Debian 12's Node 18 (engines: ^18.17.0 ||
# >=20.5.0; npm 11 wants Node 20.17 or later).
NPM_VERSION=10.9.9
NPM_INTEGRITY=sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg==
NPM_DIR="$ROOT/.local/npm/$NPM_VERSION"

# needs_npm: true when npm or npx is not on PATH and the pinned npm is not
# unpacked yet.
needs_npm() {
  { command -v npm && command -v npx; } >/dev/null 2>&1 && return 1
  [ ! -x "$NPM_DIR/bin/npm" ]
}

# fetch_npm [VERSION INTEGRITY DIR] downloads npm-VERSION.tgz from the npm
# registry ($NPM_REGISTRY, default registry.npmjs.org), checks it against
# INTEGRITY (sha512-BASE64, as the registry's metadata gives it) before
# unpacking anything, and unpacks it into DIR as a prefix of its own
# (lib/node_modules/npm, with bin/npm and bin/npx linking to its
# commands). DIR appears whole or not at all; one already there is kept.
fetch_npm() {
  local version="${1:-$NPM_VERSION}" integrity="${2:-$NPM_INTEGRITY}" dir="${3:-$NPM_DIR}"
  [ -x "$dir/bin/npm" ] && return 0
  local url="${NPM_REGISTRY:-https://registry.npmjs.org}/npm/-/npm-$version.tgz" tmp want="" have
  mkdir -p "${dir%/*}"
  tmp="$(mktemp -d "$dir.XXXXXX")"
  chmod 755 "$tmp" # mktemp's 700 would keep it from other users (CI's, root fetching)
  if ! curl -fsSL --retry 3 -o "$tmp/npm.tgz" "$url"; then
    rm -rf "$tmp"; die "could not download npm $version from $url"
  fi
  if [[ "$integrity" == sha512-?* ]]; then
    want="$({ printf %s "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n'; } 2>/dev/null || true)"
  fi
  have="$(sha512sum "$tmp/npm.tgz")"
  if [ -z "$want" ] || [ "$want" != "${have%% *}" ]; then
    rm -rf "$tmp"; die "npm-$version.tgz from $url is not the release pinned in scripts/lib.sh (its sha512 differs): not unpacked"
  fi
  mkdir -p "$tmp/lib/node_modules/npm" "$tmp/bin"
  tar -xzf "$tmp/npm.tgz" -C "$tmp/lib/node_modules/npm" --strip-components=1 --no-same-owner ||
    { rm -rf "$tmp"; die "could not unpack npm-$version.tgz"; }
  rm "$tmp/npm.tgz"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$tmp/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$tmp/bin/npx"
  # A run beside this one may have put it there first: keep that one.
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  log "npm $version from the npm registry (its pinned sha512 checked) in ${dir#"$ROOT"/}"
}

# use_npm puts the pinned npm first on PATH, fetching it when needed,
# where no npm (and npx) is on PATH already.
use_npm() {
  { command -v npm && command -v npx; } >/dev/null 2>&1 && return 0
  fetch_npm
  export PATH="$NPM_DIR/bin:$PATH"
}

# ensure_go finds Go and checks it is at least the version go.mod names.
ensure_go() {
  if ! command -v go >/dev/null 2>&1; then
    [ -x /usr/local/go/bin/go ] || die "Go $(go_wanted) or later is needed: https://go.dev/doc/install"
    export PATH="/usr/local/go/bin:$PATH"
  fi
  local want have
  want="$(go_wanted)"
  # Outside the module, so that go reports itself rather than a toolchain
  # it would switch to for go.mod.
  have="$(cd / && GOTOOLCHAIN=local go version | awk '{print $3}')"
  have="${have#go}"
  version_at_least "$have" "$want" && return 0
  if version_at_least "$have" 1.21 && [ "$(cd / && go env GOTOOLCHAIN)" != local ]; then
    log "Go $have is older than go.mod's $want: go fetches Go $want itself (GOTOOLCHAIN)"
    return 0
  fi
  die "Go $want or later is needed, this is Go $have: https://go.dev/doc/install"
}

go_wanted() { awk '$1 == "go" { print $2; exit }' "$ROOT/go.mod"; }

# version_at_least HAVE WANT: true when version HAVE >= WANT (1.26 < 1.26.0).
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

mariadbd_bin() {
  command -v mariadbd 2>/dev/null || command -v mysqld 2>/dev/null ||
    { [ -x /usr/sbin/mariadbd ] && echo /usr/sbin/mariadbd; } ||
    { [ -x /usr/sbin/mysqld ] && echo /usr/sbin/mysqld; } || die "mariadbd not found"
}

# free_port prints a port on 127.0.0.1 that nothing listened on a moment ago.
free_port() {
  local port low high
  # Below the kernel's ephemeral range: a port in it may be the local end of
  # an outgoing connection at the moment the service binds it, which nothing
  # listening shows.
  read -r low high </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
  [ "$low" -gt 21000 ] || low=32768
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % (low - 20000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return 0; }
  done
  die "found no free port"
}

# live_pid FILE NAMES prints the pid in FILE when that process is alive (not
# a zombie) and its command name matches the regular expression NAMES, so
# that a stale pid file never gets another program killed.
live_pid() {
  local pid stat
  [ -f "$1" ] || return 1
  # read, not $(cat): no process to start for each check (a loaded machine
  # makes that slow), and not $(<...), whose failure set -e does not forgive.
  read -r pid 2>/dev/null <"$1" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  read -r stat 2>/dev/null <"/proc/$pid/stat" || return 1
  [[ "$stat" =~ ^[0-9]+\ \((.*)\)\ ([A-Za-z]) ]] || return 1
  [ "${BASH_REMATCH[2]}" != Z ] && [[ "${BASH_REMATCH[1]}" =~ ^($2)$ ]] || return 1
  echo "$pid"
}

# stop_pidfiles FILE:NAMES ... sends SIGTERM to all those processes at once
# and SIGKILL to any still there after 4 s, so that stopping several servers
# takes as long as the slowest, and never more than about 4 s. The 4 s are
# read off the clock: counted in rounds of checks, a loaded machine made
# them 5.
stop_pidfiles() {
  local spec pid pids=() left deadline
  for spec in "$@"; do
    pid="$(live_pid "${spec%%:*}" "${spec#*:}")" || continue
    kill -TERM "$pid" 2>/dev/null && pids+=("$spec")
  done
  [ "${#pids[@]}" -eq 0 ] && return 0
  deadline=$((${EPOCHREALTIME//[!0-9]/} + 4000000)) # microseconds
  while :; do
    left=()
    for spec in "${pids[@]}"; do live_pid "${spec%%:*}" "${spec#*:}" >/dev/null && left+=("$spec"); done
    [ "${#left[@]}" -eq 0 ] && return 0
    [ "${EPOCHREALTIME//[!0-9]/}" -lt "$deadline" ] || break
    sleep 0.1
  done
  for spec in "${left[@]}"; do
    pid="$(live_pid "${spec%%:*}" "${spec#*:}")" || continue
    log "${spec%%:*}: pid $pid did not stop within 4 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# start_mariadb DIR PORT [OPTION...]: a private MariaDB with its data in DIR,
# listening on 127.0.0.1:PORT, with a user counters/counters that may create
# databases; OPTIONs go to mariadbd.
# Reuses an instance that is already running from DIR. Its administrator is
# the OS user who created it, by socket authentication (no password to
# keep), so it works for root and for anyone else alike.
start_mariadb() {
  local dir="$1" port="$2" bin me user=() opts=("${@:3}")
  bin="$(mariadbd_bin)"
  me="$(id -un)"
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && user=(--user=root)
  if live_pid "$dir/mariadb.pid" 'mariadbd|mysqld' >/dev/null; then
    log "MariaDB already running from $dir"
    return 0
  fi
  if [ ! -d "$dir/data/mysql" ]; then
    log "initialising MariaDB data dir $dir/data"
    local ok=""
    # --force: without it the bootstrap refuses a machine whose host name
    # and "localhost" do not resolve (a debootstrapped Debian has no
    # /etc/hosts); the accounts here name addresses, never host names, and
    # the server runs with --skip-name-resolve.
    for _ in 1 2 3; do # the bootstrap has been seen to fail now and then on a busy machine
      rm -rf "$dir/data"
      if mariadb-install-db --no-defaults "${user[@]}" --datadir="$dir/data" --force \
        --auth-root-authentication-method=socket --auth-root-socket-user="$me" \
        --skip-test-db >"$dir/install.log" 2>&1; then ok=1; break; fi
    done
    [ -n "$ok" ] || { cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
  fi
  log "starting MariaDB on 127.0.0.1:$port"
  : >"$dir/mariadb.err"
  setsid -f "$bin" --no-defaults "${user[@]}" --datadir="$dir/data" --socket="$dir/mariadb.sock" \
    --pid-file="$dir/mariadb.pid" --port="$port" --bind-address=127.0.0.1 \
    --skip-name-resolve --max-connections=500 --innodb-buffer-pool-size=256M \
    --log-error="$dir/mariadb.err" "${opts[@]}" </dev/null >/dev/null 2>&1
  local i admin=(mariadb --no-defaults --socket="$dir/mariadb.sock" -u"$me")
  for i in $(seq 1 240); do
    "${admin[@]}" -e 'SELECT 1' >/dev/null 2>&1 && break
    if [ "$i" -eq 240 ] || grep -q 'Aborting' "$dir/mariadb.err"; then
      tail -20 "$dir/mariadb.err" >&2; die "MariaDB did not start (log: $dir/mariadb.err)"
    fi
    sleep 0.25
  done
  "${admin[@]}" <<'SQL'
CREATE USER IF NOT EXISTS 'counters'@'127.0.0.1' IDENTIFIED BY 'counters';
CREATE USER IF NOT EXISTS 'counters'@'localhost' IDENTIFIED BY 'counters';
GRANT ALL PRIVILEGES ON *.* TO 'counters'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'counters'@'localhost';
CREATE DATABASE IF NOT EXISTS counters;
SQL
}

stop_mariadb() { stop_pidfiles "$1/mariadb.pid:mariadbd|mysqld"; }

# reset_database HOST PORT USER PASSWORD DATABASE: drops DATABASE and
# creates it empty; the service makes its tables again when it next starts.
# Nothing else on the server is touched.
reset_database() {
  local host="$1" port="$2" user="$3" password="$4" db="$5"
  case "$db" in ''|*[!A-Za-z0-9_]*) die "reset_database: a database name of letters, digits and _ only, not '$db'" ;; esac
  MYSQL_PWD="$password" mariadb --no-defaults --protocol=tcp -h "$host" -P "$port" -u "$user" \
    -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`" || die "could not empty database $db on $host:$port"
}

# start_redis DIR PORT: a private Redis on 127.0.0.1:PORT without persistence
# (it only caches).
start_redis() {
  local dir="$1" port="$2"
  mkdir -p "$dir"
  if live_pid "$dir/redis.pid" redis-server >/dev/null; then
    log "Redis already running from $dir"
    return 0
  fi
  log "starting Redis on 127.0.0.1:$port"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save '' --appendonly no >/dev/null
  for i in $(seq 1 40); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    [ "$i" -eq 40 ] && { tail -5 "$dir/redis.log" >&2; die "Redis did not start (log: $dir/redis.log)"; }
    sleep 0.1
  done
}

stop_redis() { stop_pidfiles "$1/redis.pid:redis-server"; }

# reset_redis HOST PORT: empties the Redis on HOST:PORT, every database of
# it: only for a Redis of the project's own, which holds nothing else.
reset_redis() {
  [ "$(redis-cli -h "$1" -p "$2" FLUSHALL 2>&1)" = OK ] || die "could not empty the Redis on $1:$2"
}

# progress MSG CMD... runs CMD and, while it runs, says every 15 s that it
# still does, so that a long quiet phase (the first build) does not look hung.
progress() {
  local msg="$1" pid start="$SECONDS" next=15
  shift
  "$@" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ $((SECONDS - start)) -ge "$next" ]; then
      log "  $msg: ${next} s so far"; next=$((next + 15))
    fi
    sleep 0.2
  done
  wait "$pid"
}
