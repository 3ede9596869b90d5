#!/usr/bin/env bash
# Schemathesis against a live `api` (embedded SQLite in a temporary directory), driven by the
# OpenAPI document the api serves at /openapi.json. Every operation is exercised, including proxy
# invocation; the run fails on any failed check.
#
# Fixtures made with the admin key before the run (a private application, a parent token with a
# child, a proxy that forwards to the api's own /healthz) are given to schemathesis as path
# parameters so that the generated requests reach the handlers' logic instead of stopping at 404.
#
# Env: API_BIN (a binary to use as it is; by default `cargo build --bin api` runs first and
# target/debug/api is used), FUZZ_API_EXAMPLES (examples per
# operation, default 40), FUZZ_API_SEED (default 20261122; any integer).
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
examples="${FUZZ_API_EXAMPLES:-40}"
seed="${FUZZ_API_SEED:-20261122}"
venv=target/schemathesis-venv
api_bin="${API_BIN:-}"

for tool in python3 curl; do
  command -v "$tool" >/dev/null || { apt-get update -qq && apt-get install -y -qq python3 curl >/dev/null; }
done
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  rm -rf "$venv"
  python3 -m venv "$venv" || {
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && python3 -m venv "$venv"
  }
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
if [ -z "$api_bin" ]; then
  # A no-op when up to date; never fuzz a stale binary.
  cargo build --locked --bin api
  api_bin=target/debug/api
fi

work=$(mktemp -d)
api_pid=
cleanup() {
  [ -n "$api_pid" ] && { kill "$api_pid" 2>/dev/null || true; wait "$api_pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
"$api_bin" serve --listen "127.0.0.1:$port" --no-console --data-dir "$work" \
  --database-url "sqlite://$work/tessera.db" --allow-private-destinations \
  >"$work/api.log" 2>&1 &
api_pid=$!
for _ in $(seq 1 100); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "$base/healthz" >/dev/null || { cat "$work/api.log"; exit 1; }
admin_key=$(cat "$work/admin-key")

# call METHOD PATH [BODY] -> response body; fails on a non-2xx answer.
call() {
  curl -fsS -X "$1" "$base$2" -H "SVC-API-KEY: $admin_key" \
    -H 'Content-Type: application/json' ${3:+--data "$3"}
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }

# Two sets of fixtures: DELETE operations get their own, so that deleting them does not starve
# the other operations of data. An operation takes the first [[operations]] entry that matches,
# so the DELETE entries come first.
config="$work/schemathesis.toml"
: >"$config"
for set in del keep; do
  app_id=$(call POST /applications \
    '{"name":"fuzz","type":"private","permissions":["token:create","token:read","token:use"]}' | field id)
  parent_id=$(call POST /tokens '{"type":"token","data":{"n":1},"metadata":{"k":"v"}}' | field id)
  child_id=$(call POST "/tokens/$parent_id/children" '{"type":"token","data":"child"}' | field id)
  proxy=$(call POST /proxies \
    "{\"name\":\"fuzz\",\"destination_url\":\"$base/healthz\",\"require_auth\":false}")
  proxy_id=$(echo "$proxy" | field id)
  method=''
  [ "$set" = del ] && method='include-method = "DELETE"'
  [ "$set" = keep ] && proxy_key=$(echo "$proxy" | field key)
  for entry in \
    "^/applications/|\"path.id\" = \"$app_id\"" \
    "^/tokens/[{]id[}]\$|\"path.id\" = \"$child_id\"" \
    "^/tokens/[{]parent_id[}]|\"path.parent_id\" = \"$parent_id\", \"path.child_id\" = \"$child_id\"" \
    "^/proxies/|\"path.id\" = \"$proxy_id\""; do
    printf '[[operations]]\n%s\ninclude-path-regex = "%s"\nparameters = { %s }\n\n' \
      "$method" "${entry%%|*}" "${entry#*|}" >>"$config"
  done
done

"$venv/bin/schemathesis" --config-file "$work/schemathesis.toml" run "$base/openapi.json" \
  --header "SVC-API-KEY: $admin_key" --header "SVC-PROXY-KEY: $proxy_key" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --max-examples "$examples" --seed "$seed" --workers 2 --no-color \
  --report junit --report-dir target/schemathesis-report || {
  status=$?
  echo "--- api log (last 100 lines)"
  tail -n 100 "$work/api.log"
  exit "$status"
}
