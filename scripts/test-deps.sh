#!/usr/bin/env bash
# What `make test` needs from Debian, installed only where missing: Chromium
# for the browser tests, redis-server and postgresql for the throwaway servers
# the test session starts (tests/servers.py), prometheus (promtool and the
# server) for the alert-rule tests (tests/deploy/), nginx for the test of
# deploy/nginx/ in front of a real Daphne over TLS, npm (with Node.js) for
# `make assets`, and python3-venv and build-essential for the virtualenv.
# Says what it found and what it installs; runs apt-get (update first) only
# when something is missing, through sudo when not root. `make demo` needs
# none of this but npm (its `make assets` says so when npm is missing).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"

# Each check looks for what the tests actually run, so a CHROMIUM_PATH or a
# server of one's own (TEST_REDIS_URL / TEST_DATABASE_URL) counts too.
check() {
  case "$1" in
    chromium) [ -x "$CHROMIUM" ] && echo present ;;
    redis-server)
      if [ -n "${TEST_REDIS_URL:-}" ]; then echo "not needed (TEST_REDIS_URL set)"
      elif command -v redis-server >/dev/null; then echo present; fi ;;
    postgresql)
      if [ -n "${TEST_DATABASE_URL:-}" ]; then echo "not needed (TEST_DATABASE_URL set)"
      elif compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then echo present; fi ;;
    python3-venv)
      { [ -x .venv/bin/python ] || "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; } \
        && echo present ;;
    build-essential) command -v cc >/dev/null && command -v make >/dev/null && echo present ;;
    prometheus) command -v promtool >/dev/null && command -v prometheus >/dev/null && echo present ;;
    npm) command -v npm >/dev/null && command -v node >/dev/null && echo present ;;
    nginx-light) { command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; } && echo present ;;
  esac
  return 0
}

missing=()
report=()
for package in chromium redis-server postgresql prometheus nginx-light npm python3-venv build-essential; do
  state="$(check "$package")"
  if [ -z "$state" ]; then
    missing+=("$package")
    state="installing"
  fi
  report+=("$package $state")
done
printf -v line '%s, ' "${report[@]}"
echo "test deps: ${line%, }"
[ "${#missing[@]}" -eq 0 ] && exit 0

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || {
    echo "test deps: ${missing[*]} missing, and installing needs root or sudo" >&2
    exit 1
  }
  SUDO=(sudo)
fi
command -v apt-get >/dev/null || {
  echo "test deps: ${missing[*]} missing, and there is no apt-get to install them" >&2
  exit 1
}

log="$(mktemp -t test-deps.XXXXXX.log)"
policy=""
cleanup() {
  [ -z "$policy" ] || "${SUDO[@]}" rm -f "$policy"
  rm -f "$log"
}
trap cleanup EXIT
# Installing redis-server or postgresql would start their packaged daemons;
# the tests start servers of their own, so a policy-rc.d (the standard way to
# tell Debian's maintainer scripts not to start services) stops that, unless
# the machine already has one.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
  "${SUDO[@]}" chmod 755 "$policy"
fi
if ! { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
  && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "test deps: apt-get could not install ${missing[*]} (output above)" >&2
  exit 1
fi
for package in "${missing[@]}"; do
  [ -n "$(check "$package")" ] || {
    echo "test deps: $package installed but still not found" >&2
    exit 1
  }
done
echo "test deps: installed ${missing[*]}"
