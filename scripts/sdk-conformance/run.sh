#!/usr/bin/env bash
# Basis Theory's official SDKs, unchanged, against a live
# `api --header-prefix BT --implicit-transform mask`, as docs/migrating.md says to run it.
#
# Installs the SDKs at the pinned versions (requirements-py3.txt, requirements-py18.txt,
# package.json + package-lock.json) from PyPI and npm into a cache directory, reused while the pins
# do not change; starts `api` on a temporary SQLite database and free ports, with a local echo
# server as proxy destination; then runs one script per SDK with the bootstrap admin key. Each
# script prints `ok   <sdk> <operation>` or `FAIL <sdk> <operation>: <why>` per operation.
# Exits non-zero if any operation failed (or a script did not finish).
#
# Usage: scripts/sdk-conformance/run.sh [script…]   (default: every script; e.g. node_sdk.mjs)
# Env: API_BIN (default target/debug/api, used as it is: build it first), TESSERA_SDK_CACHE
# (default ~/.cache/tessera-sdks), SDK_CONFORMANCE_TIMEOUT (seconds per script, default 300),
# SDK_CONFORMANCE_DEBUG=1 (stack traces on failures).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."

api_bin="${API_BIN:-target/debug/api}"
cache="${TESSERA_SDK_CACHE:-${HOME:-/tmp}/.cache/tessera-sdks}"
per_script_timeout="${SDK_CONFORMANCE_TIMEOUT:-300}"
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(python3_sdk.py python18_sdk.py node_sdk.mjs bt_js.mjs)

[ -x "$api_bin" ] || { echo "sdk-conformance: $api_bin is not an executable (set API_BIN or build it)"; exit 1; }

# --- tools: python3 with venv, node and npm, curl (installed like CI's other tools) -----------
missing=()
command -v python3 >/dev/null || missing+=(python3)
command -v curl >/dev/null || missing+=(curl)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if command -v python3 >/dev/null && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  missing+=(python3-venv)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "sdk-conformance: installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- the SDKs, cached -------------------------------------------------------------------------
mkdir -p "$cache"
stamp_of() { cat "$@" | sha256sum | cut -c1-64; }

python_sdk() { # NAME REQUIREMENTS
  local dir="$cache/$1" want
  want=$(stamp_of "$here/$2")
  if [ "$(cat "$dir/.tessera-stamp" 2>/dev/null)" != "$want" ] ||
    ! "$dir/bin/python" -c 'import basistheory' 2>/dev/null; then
    echo "sdk-conformance: installing $(tr '\n' ' ' <"$here/$2")into $dir"
    rm -rf "$dir"
    python3 -m venv "$dir" || {
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      python3 -m venv "$dir"
    }
    "$dir/bin/pip" install -q --disable-pip-version-check -r "$here/$2"
    echo "$want" >"$dir/.tessera-stamp"
  fi
}
python_sdk py3 requirements-py3.txt
python_sdk py18 requirements-py18.txt

node_dir="$cache/node"
want=$(stamp_of "$here/package.json" "$here/package-lock.json")
if [ "$(cat "$node_dir/.tessera-stamp" 2>/dev/null)" != "$want" ] ||
  [ ! -d "$node_dir/node_modules/@basis-theory/node-sdk" ] ||
  [ ! -d "$node_dir/node_modules/@basis-theory/basis-theory-js" ]; then
  echo "sdk-conformance: installing the Node SDKs into $node_dir"
  rm -rf "$node_dir"
  mkdir -p "$node_dir"
  cp "$here/package.json" "$here/package-lock.json" "$node_dir/"
  (cd "$node_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$want" >"$node_dir/.tessera-stamp"
fi

# --- a live api and an echo destination --------------------------------------------------------
work=$(mktemp -d)
api_pid=
echo_pid=
cleanup() {
  for pid in "$api_pid" "$echo_pid"; do
    [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  done
  rm -rf "$work"
}
trap cleanup EXIT

python3 "$here/echo_server.py" "$work/echo-port" &
echo_pid=$!
for _ in $(seq 1 100); do [ -s "$work/echo-port" ] && break; sleep 0.05; done
[ -s "$work/echo-port" ] || { echo "sdk-conformance: the echo server did not start"; exit 1; }
echo_url="http://127.0.0.1:$(cat "$work/echo-port")/echo"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
NO_COLOR=1 "$api_bin" serve --listen "127.0.0.1:$port" --no-console --data-dir "$work" \
  --database-url "sqlite://$work/tessera.db" --allow-private-destinations \
  --header-prefix BT --implicit-transform mask --sweep-interval 1 >"$work/api.log" 2>&1 &
api_pid=$!
for _ in $(seq 1 200); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  kill -0 "$api_pid" 2>/dev/null || break
  sleep 0.1
done
curl -fsS "$base/healthz" >/dev/null 2>&1 || {
  echo "sdk-conformance: the api did not start"; cat "$work/api.log"; exit 1
}
admin_key=$(cat "$work/admin-key")
# As a team moving from Basis Theory runs it (docs/migrating.md): under --implicit-transform
# mask the admin's own permissions show masks, so tokens are read and written by a private
# application whose rule on / reveals.
token_key=$(curl -fsS -X POST "$base/applications" -H "BT-API-KEY: $admin_key" \
  -H 'Content-Type: application/json' \
  -d '{"name":"sdk-conformance tokens","type":"private","rules":[{"priority":1,"container":"/","transform":"reveal","permissions":["token:create","token:read","token:search","token:update","token:delete","token:use"]}]}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
echo "sdk-conformance: api at $base (--header-prefix BT --implicit-transform mask), echo destination at $echo_url"

# --- the scripts ------------------------------------------------------------------------------
failed_scripts=()
: >"$work/results"
for script in "${scripts[@]}"; do
  case "$script" in
    python3_sdk.py) cmd=("$cache/py3/bin/python" "$here/$script") ;;
    python18_sdk.py) cmd=("$cache/py18/bin/python" "$here/$script") ;;
    *.mjs) cmd=(node "$here/$script") ;;
    *) echo "sdk-conformance: unknown script $script"; exit 2 ;;
  esac
  echo "--- $script"
  status=0
  TESSERA_URL="$base" TESSERA_KEY="$admin_key" TESSERA_TOKEN_KEY="$token_key" ECHO_URL="$echo_url" SDK_NODE_DIR="$node_dir" \
    timeout "$per_script_timeout" "${cmd[@]}" 2>&1 | tee -a "$work/results" || status=$?
  [ "$status" -eq 0 ] || failed_scripts+=("$script (exit $status)")
done

ok=$(grep -c '^ok ' "$work/results" || true)
failed=$(grep -c '^FAIL ' "$work/results" || true)
echo
echo "=== sdk-conformance: $ok ok, $failed failed"
if [ ${#failed_scripts[@]} -gt 0 ]; then
  grep '^FAIL ' "$work/results" || true
  echo "scripts that failed: ${failed_scripts[*]}"
  echo "--- api log (last 40 lines)"
  tail -n 40 "$work/api.log"
  exit 1
fi
