#!/usr/bin/env bash
# Load benchmark of the proxy gateway beside the peers in ../shared/bench-peers (nginx upstream,
# nginx reverse proxy, nginx+njs, Node.js), all loaded the same way in one run so that the
# figures are read as ratios (these machines are shared and noisy).
#
#   bench/gateway.sh            (or `just bench-gateway`)
#
# Needs: nginx, libnginx-mod-http-js, wrk (`apt-get install -y nginx libnginx-mod-http-js wrk`)
# and node. Transforms are loaded on two gateways: inline, and in sandbox processes.
# Environment: BENCH_SECONDS (8), BENCH_CONNS (32), BENCH_ROUNDS (5 paired rounds of
# BENCH_ROUND_SECONDS, 5), TESSERA_BENCH_DATABASE_URL
# (default: a fresh SQLite file; a postgres:// URL benchmarks PostgreSQL instead).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
peers=${BENCH_PEERS:-$root/../shared/bench-peers}
[ -d "$peers" ] || { echo "bench peers not found at $peers (set BENCH_PEERS)"; exit 1; }
for tool in nginx wrk node; do
  command -v $tool >/dev/null || { echo "$tool is required: apt-get install -y nginx libnginx-mod-http-js wrk"; exit 1; }
done
D=${BENCH_SECONDS:-8}; C=${BENCH_CONNS:-32}
work=$(mktemp -d /tmp/tessera-bench-gw.XXXXXX)
export TESSERA_MASTER_KEY=${TESSERA_MASTER_KEY:-$(head -c 32 /dev/urandom | base64)}
export RUST_LOG=${RUST_LOG:-warn}
db=${TESSERA_BENCH_DATABASE_URL:-sqlite://$work/bench.db}
api_port=18090; gw_port=18095; gwp_port=18096

echo "building release binaries…" >&2
(cd "$root" && cargo build --release --quiet --bin api --bin proxy-gateway)
bin=$root/target/release

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f /tmp/tessera-bench/nginx.pid ] && kill "$(cat /tmp/tessera-bench/nginx.pid)" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Peers: the same configuration run.sh uses.
mkdir -p /tmp/tessera-bench
sed "s#BENCHDIR#$peers#" "$peers/nginx.conf" > /tmp/tessera-bench/nginx.conf
nginx -c /tmp/tessera-bench/nginx.conf
node "$peers/node_peer.js" & pids+=($!)

# Tessera: a tenant, an application, two tokens, and proxies to the nginx upstream.
admin=$("$bin/api" tenants create --name bench --database-url "$db" | python3 -c 'import sys,json;print(json.load(sys.stdin)["api_key"])')
"$bin/api" serve --no-bootstrap --no-gateway --listen 127.0.0.1:$api_port --database-url "$db" \
  --allow-private-destinations & pids+=($!)
# Two gateways: transforms inline (the one every target but *-process loads) and in sandbox
# processes; only one is loaded at a time.
"$bin/proxy-gateway" --listen 127.0.0.1:$gwp_port --database-url "$db" --allow-private-destinations \
  --data-dir "$work" --transform-isolation process & pids+=($!)
"$bin/proxy-gateway" --listen 127.0.0.1:$gw_port --database-url "$db" --allow-private-destinations \
  --data-dir "$work" --transform-isolation inline & pids+=($!)
for _ in $(seq 1 100); do curl -sf 127.0.0.1:$api_port/healthz >/dev/null && curl -sf 127.0.0.1:$gw_port/healthz >/dev/null && curl -sf 127.0.0.1:$gwp_port/healthz >/dev/null && break; sleep 0.1; done

api() { curl -sS --fail-with-body -X "$1" "127.0.0.1:$api_port$2" -H "SVC-API-KEY: $3" -H 'Content-Type: application/json' ${4:+-d "$4"}; }
field() { python3 -c "import sys,json;print(json.load(sys.stdin)[\"$1\"])"; }
app_key=$(api POST /applications "$admin" '{"name":"bench","type":"private","permissions":["token:create","token:use"]}' | field key)
tok1=$(api POST /tokens "$app_key" '{"type":"token","data":"4242424242424242"}' | field id)
tok2=$(api POST /tokens "$app_key" '{"type":"token","data":"123"}' | field id)
plain=$(api POST /proxies "$admin" '{"name":"plain","destination_url":"http://127.0.0.1:18081/","require_auth":false}' | field key)
detok=$(api POST /proxies "$admin" '{"name":"detok","destination_url":"http://127.0.0.1:18081/"}' | field key)
# The peers' transforms, verbatim, with the configuration they read.
transforms=$(python3 - "$peers" <<'PY'
import json, sys
d = sys.argv[1]
print(json.dumps({"name": "transforms", "destination_url": "http://127.0.0.1:18081/",
  "configuration": {"MERCHANT_ID": "m_123", "API_SECRET": "sk_test_abc"},
  "request_transform": {"code": open(d + "/transform_request.js").read()},
  "response_transform": {"code": open(d + "/transform_response.js").read()}}))
PY
)
xform=$(api POST /proxies "$admin" "$transforms" | field key)
body="{\"card\":{\"number\":\"{{$tok1}}\",\"cvc\":\"{{$tok2}}\"},\"amount\":1000,\"currency\":\"usd\"}"

# Sanity: each target answers 2xx for the benchmark request.
for port in $gw_port $gwp_port; do
  for k in "$detok" "$xform"; do
    curl -sf -XPOST -H 'content-type: application/json' -H "SVC-PROXY-KEY: $k" -H "SVC-API-KEY: $app_key" \
      -d "$body" 127.0.0.1:$port/proxy/charges >/dev/null || { echo "gateway sanity request failed"; exit 1; }
  done
done
curl -s -XPOST -H 'content-type: application/json' -H "SVC-PROXY-KEY: $xform" -H "SVC-API-KEY: $app_key" -d "$body" 127.0.0.1:$gw_port/proxy/charges; echo
sleep 1

# BENCH_HOLD=1: set everything up, print how to load the gateway, and wait (for profiling).
if [ -n "${BENCH_HOLD:-}" ]; then
  echo "gateway pid ${pids[-1]} on :$gw_port (process isolation: pid ${pids[-2]} on :$gwp_port); plain key $plain; detok key $detok; xform key $xform; app key $app_key"
  echo "body $body"
  echo "e.g. BENCH_PROXY_KEY=$plain wrk -t1 -c$C -d${D}s -s $peers/post.lua http://127.0.0.1:$gw_port/proxy/charges"
  sleep infinity
fi

load() { # name url [env…]: the same wrk invocation as bench-peers/run.sh
  local name=$1 url=$2; shift 2
  local out; out=$(env "$@" wrk -t1 -c"$C" -d"${D}s" --latency -s "$peers/post.lua" "$url" 2>&1)
  local rps p50 p99 non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out"); p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  printf '%-22s rps=%-10s p50=%-9s p99=%-9s non2xx=%s\n' "$name" "$rps" "$p50" "$p99" "${non2xx:-0}"
}
echo "# $(date -u +%FT%TZ) $(nproc) cores, ${D}s x ${C} connections per target, database ${db%%:*}"
load direct               http://127.0.0.1:18081/
load nginx-proxy          http://127.0.0.1:18082/
load nginx-njs            http://127.0.0.1:18083/charges
load node                 http://127.0.0.1:18084/charges
load tessera-plain        "http://127.0.0.1:$gw_port/proxy/charges" BENCH_PROXY_KEY="$plain"
load tessera-detok-2      "http://127.0.0.1:$gw_port/proxy/charges" BENCH_PROXY_KEY="$detok" BENCH_API_KEY="$app_key" BENCH_BODY="$body"
load tessera-detok-2-xform "http://127.0.0.1:$gw_port/proxy/charges" BENCH_PROXY_KEY="$xform" BENCH_API_KEY="$app_key" BENCH_BODY="$body"
load tessera-xform-process "http://127.0.0.1:$gwp_port/proxy/charges" BENCH_PROXY_KEY="$xform" BENCH_API_KEY="$app_key" BENCH_BODY="$body"
# Paired rounds: the machine drifts between loads, so each round loads a peer and the gateway
# back to back and takes their ratio; the median over BENCH_ROUNDS rounds (default 5, 5 s each;
# 0 skips) is the figure to quote against the targets.
rounds=${BENCH_ROUNDS:-5}
[[ "$rounds" =~ ^[0-9]+$ ]] || { echo "BENCH_ROUNDS must be a whole number"; exit 1; }
if [ "$rounds" -gt 0 ]; then
  rps() { env "${@:2}" wrk -t1 -c"$C" -d"${BENCH_ROUND_SECONDS:-5}s" -s "$peers/post.lua" "$1" 2>&1 | awk '/Requests\/sec/ {print $2}'; }
  median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
  : >"$work/plain" ; : >"$work/detok"; : >"$work/xnjs"; : >"$work/xnode"; : >"$work/pnjs"
  ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (b + 0 == 0) print "nan"; else printf "%.3f", a / b }'; }
  tessera=(BENCH_API_KEY="$app_key" BENCH_BODY="$body")
  for r in $(seq 1 "$rounds"); do
    np=$(rps http://127.0.0.1:18082/)
    tp=$(rps "http://127.0.0.1:$gw_port/proxy/charges" BENCH_PROXY_KEY="$plain")
    nj=$(rps http://127.0.0.1:18083/charges)
    td=$(rps "http://127.0.0.1:$gw_port/proxy/charges" BENCH_PROXY_KEY="$detok" "${tessera[@]}")
    ti=$(rps "http://127.0.0.1:$gw_port/proxy/charges" BENCH_PROXY_KEY="$xform" "${tessera[@]}")
    nd=$(rps http://127.0.0.1:18084/charges)
    tx=$(rps "http://127.0.0.1:$gwp_port/proxy/charges" BENCH_PROXY_KEY="$xform" "${tessera[@]}")
    p=$(ratio "$tp" "$np"); d=$(ratio "$td" "$nj"); xi=$(ratio "$ti" "$nj"); xn=$(ratio "$ti" "$nd"); xp=$(ratio "$tx" "$nj")
    echo "$p" >>"$work/plain"; echo "$d" >>"$work/detok"; echo "$xi" >>"$work/xnjs"; echo "$xn" >>"$work/xnode"; echo "$xp" >>"$work/pnjs"
    printf 'round %d: plain/nginx-proxy %s (%s/%s)  detok-2/nginx-njs %s (%s/%s)\n' "$r" "$p" "$tp" "$np" "$d" "$td" "$nj"
    printf '         xform-inline/nginx-njs %s (%s)  xform-inline/node %s (%s)  xform-process/nginx-njs %s (%s)\n' \
      "$xi" "$ti" "$xn" "$nd" "$xp" "$tx"
  done
  printf 'median of %d paired rounds: plain/nginx-proxy %s  detok-2/nginx-njs %s\n' "$rounds" \
    "$(median <"$work/plain")" "$(median <"$work/detok")"
  printf '  detok-2 + both transforms: inline/nginx-njs %s  inline/node %s  process/nginx-njs %s\n' \
    "$(median <"$work/xnjs")" "$(median <"$work/xnode")" "$(median <"$work/pnjs")"
fi
# The same with every cache off (each request authenticates and reads both tokens from storage).
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
"$bin/proxy-gateway" --listen 127.0.0.1:$gw_port --database-url "$db" --allow-private-destinations \
  --data-dir "$work" --cache-ttl 0 & pids+=($!)
for _ in $(seq 1 100); do curl -sf 127.0.0.1:$gw_port/healthz >/dev/null && break; sleep 0.1; done
load tessera-detok-2-nocache "http://127.0.0.1:$gw_port/proxy/charges" BENCH_PROXY_KEY="$detok" BENCH_API_KEY="$app_key" BENCH_BODY="$body"
