#!/usr/bin/env bash
# Load benchmark of the proxy gateway beside the peers in ../shared/bench-peers (nginx upstream,
# nginx reverse proxy, nginx+njs, Node.js), all loaded the same way in one run so that the
# figures are read as ratios (these machines are shared and noisy).
#
#   bench/gateway.sh            (or `just bench-gateway`)
#
# Needs: nginx, libnginx-mod-http-js, wrk (`apt-get install -y nginx libnginx-mod-http-js wrk`)
# and node; for the cold PostgreSQL targets, psql and a PostgreSQL server.
#
# Hot targets (one SQLite database): plain forwarding, two cached tokens, both transforms on a
# gateway running them inline and on one running them in sandbox processes.
# Cold targets (BENCH_COLD=0 skips them): each request names two tokens drawn at random from a
# pool of BENCH_POOL (400), on gateways with every cache off (`--cache-ttl 0`) and with API keys
# cached but tokens not (`--token-cache-ttl 0`), on SQLite and on PostgreSQL
# (TESSERA_BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres: a database is
# created there for the run and dropped after; BENCH_PG=0 skips PostgreSQL).
#
# Audit trail (BENCH_AUDIT=0 skips it): gateways with `--audit-durability off`, `sync` and
# `async`, loaded back to back in paired rounds on cached detokenization (two tokens, caches
# on) and cold (random tokens from the pool, `--token-cache-ttl 0`), on SQLite and (with the
# cold PostgreSQL setup) PostgreSQL; the medians of sync/off and async/off are the figures.
# Every other gateway runs with the default (`sync`).
#
# Transforms (BENCH_ONLY=xform runs only these rounds): both peer transforms on gateways running
# them inline and in sandbox processes, each with the audit trail `sync` (the default) and
# `off`; per round nginx+njs, node and the four gateways back to back (issue 25's ratios).
#
# Environment: BENCH_SECONDS (8), BENCH_CONNS (32), BENCH_ROUNDS (5 paired rounds of
# BENCH_ROUND_SECONDS, 5), BENCH_HOLD=1 (set up, print the keys, wait: for profiling),
# BENCH_ONLY=audit (only the audit rounds), BENCH_ONLY=xform (only the transform rounds),
# BENCH_PROCESS_FLAGS (extra flags of the process-isolation gateways, e.g. --transform-processes 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
peers=${BENCH_PEERS:-$root/../shared/bench-peers}
[ -d "$peers" ] || { echo "bench peers not found at $peers (set BENCH_PEERS)"; exit 1; }
for tool in nginx wrk node; do
  command -v $tool >/dev/null || { echo "$tool is required: apt-get install -y nginx libnginx-mod-http-js wrk"; exit 1; }
done
D=${BENCH_SECONDS:-8}; C=${BENCH_CONNS:-32}; POOL=${BENCH_POOL:-400}
COLD=${BENCH_COLD:-1}; PG=${BENCH_PG:-1}; AUDIT=${BENCH_AUDIT:-1}; ONLY=${BENCH_ONLY:-}
[ "$ONLY" = audit ] && AUDIT=1
[ "$ONLY" = xform ] && { COLD=0; AUDIT=0; }
pg_admin=${TESSERA_BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
work=$(mktemp -d /tmp/tessera-bench-gw.XXXXXX)
export TESSERA_MASTER_KEY=${TESSERA_MASTER_KEY:-$(head -c 32 /dev/urandom | base64)}
export RUST_LOG=${RUST_LOG:-warn}
db=sqlite://$work/bench.db
pg_name=tessera_bench_$$
pg_db=${pg_admin%/*}/$pg_name
[ "$COLD" = 1 ] && [ "$PG" = 1 ] && ! command -v psql >/dev/null && { echo "psql is required for the PostgreSQL targets (BENCH_PG=0 skips them)"; exit 1; }

echo "building release binaries…" >&2
(cd "$root" && cargo build --release --quiet --bin api --bin proxy-gateway)
bin=$root/target/release

pids=()
pg_created=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -f /tmp/tessera-bench/nginx.pid ] && kill "$(cat /tmp/tessera-bench/nginx.pid)" 2>/dev/null || true
  [ -n "$pg_created" ] && psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $pg_name WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Peers: the same configuration run.sh uses.
mkdir -p /tmp/tessera-bench
sed "s#BENCHDIR#$peers#" "$peers/nginx.conf" > /tmp/tessera-bench/nginx.conf
nginx -c /tmp/tessera-bench/nginx.conf
node "$peers/node_peer.js" & pids+=($!)

healthy() { for _ in $(seq 1 200); do curl -sf "127.0.0.1:$1/healthz" >/dev/null && return 0; sleep 0.1; done; echo "port $1 did not come up"; exit 1; }
gateway() { # port database [flags…]: a proxy-gateway in the background
  local port=$1 url=$2; shift 2
  "$bin/proxy-gateway" --listen 127.0.0.1:$port --database-url "$url" --allow-private-destinations \
    --data-dir "$work" "$@" & pids+=($!)
  echo $! >"$work/pid-$port"
}
# CPU ticks (1/CLK_TCK s) used so far by the gateway on `port` and its process tree: its own
# user and system time, its waited-for children's, and its live children's (the sandboxes).
cpu_ticks() {
  local pid; pid=$(cat "$work/pid-$1")
  awk -v root="$pid" '
    { sub(/^.*\) /, ""); ppid = $2; t = $12 + $13 }
    FILENAME ~ "/" root "/stat$" { total += t + $14 + $15; next }
    ppid == root { total += t }
    END { print total + 0 }' /proc/[0-9]*/stat 2>/dev/null
}
# CPU µs per request: ticks used over `rps` requests a second for the round's length.
cpu_per_request() { # ticks-before ticks-after rps
  awk -v a="$1" -v b="$2" -v r="$3" -v s="${BENCH_ROUND_SECONDS:-5}" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (r + 0 == 0) print "-"; else printf "%.1f", (b - a) * 1e6 / hz / (r * s) }'
}
# An api on `port` serving `url` (in the background, its output in the work directory).
api() {
  local url=$1 port=$2
  "$bin/api" serve --no-bootstrap --no-gateway --no-console --listen 127.0.0.1:$port --database-url "$url" \
    --data-dir "$work" --allow-private-destinations >"$work/api-$port.log" 2>&1 & pids+=($!)
  healthy "$port"
}
# A tenant on `url` set up through the api on `port`; prints setup.py's JSON (keys, token pool).
tenant() {
  local url=$1 port=$2 admin
  admin=$("$bin/api" tenants create --name bench --database-url "$url" --data-dir "$work" | python3 -c 'import sys,json;print(json.load(sys.stdin)["api_key"])')
  python3 "$root/bench/setup.py" "http://127.0.0.1:$port" "$admin" "$peers" "$POOL"
}
get() { python3 -c "import sys,json;v=json.load(sys.stdin)[\"$1\"];print(','.join(v) if isinstance(v,list) else v)"; }

# SQLite: the hot targets' gateways (transforms inline, and in sandbox processes) and the cold ones.
api "$db" 18090
sq=$(tenant "$db" 18090)
app_key=$(get app_key <<<"$sq"); plain=$(get plain <<<"$sq"); detok=$(get detok <<<"$sq"); xform=$(get xform <<<"$sq")
sq_tokens=$(get tokens <<<"$sq")
tok1=${sq_tokens%%,*}; rest=${sq_tokens#*,}; tok2=${rest%%,*}
gw_port=18095; gwp_port=18096
gateway $gwp_port "$db" --transform-isolation process ${BENCH_PROCESS_FLAGS:-}; gwp_pid=${pids[-1]}
gateway $gw_port "$db" --transform-isolation inline; gw_pid=${pids[-1]}
healthy $gw_port; healthy $gwp_port
if [ "$ONLY" = xform ]; then
  gateway 18093 "$db" --transform-isolation inline --audit-durability off
  gateway 18094 "$db" --transform-isolation process --audit-durability off ${BENCH_PROCESS_FLAGS:-}
  healthy 18093; healthy 18094
  # BENCH_BASE_BIN: a proxy-gateway of another build, run the same way, for A/B rounds.
  if [ -n "${BENCH_BASE_BIN:-}" ]; then
    for spec in "18088 inline" "18089 process"; do
      set -- $spec
      "$BENCH_BASE_BIN" --listen 127.0.0.1:$1 --database-url "$db" --allow-private-destinations \
        --data-dir "$work" --transform-isolation $2 --audit-durability off & pids+=($!)
    done
    healthy 18088; healthy 18089
  fi
fi
if [ "$COLD" = 1 ]; then
  gateway 18097 "$db" --cache-ttl 0
  gateway 18098 "$db" --token-cache-ttl 0
  healthy 18097; healthy 18098
fi
if [ "$COLD" = 1 ] && [ "$PG" = 1 ]; then
  psql -q "$pg_admin" -c "CREATE DATABASE $pg_name" >/dev/null; pg_created=1
  api "$pg_db" 18091
  pg=$(tenant "$pg_db" 18091)
  pg_app_key=$(get app_key <<<"$pg"); pg_detok=$(get detok <<<"$pg"); pg_tokens=$(get tokens <<<"$pg")
  gateway 18099 "$pg_db" --cache-ttl 0
  gateway 18100 "$pg_db" --token-cache-ttl 0
  healthy 18099; healthy 18100
fi
# Audit: off / sync / async side by side, cached (18101–18103) and cold (18104–18106) on SQLite,
# and the same on PostgreSQL (18107–18112).
audit_modes=(off sync async)
audit_gateways() { # first-port database
  local port=$1 url=$2 m
  for m in "${audit_modes[@]}"; do gateway $port "$url" --transform-isolation inline --audit-durability $m; healthy $port; port=$((port + 1)); done
  for m in "${audit_modes[@]}"; do gateway $port "$url" --transform-isolation inline --audit-durability $m --token-cache-ttl 0; healthy $port; port=$((port + 1)); done
}
if [ "$AUDIT" = 1 ]; then
  audit_gateways 18101 "$db"
  [ -n "${pg_detok:-}" ] && audit_gateways 18107 "$pg_db"
fi
body="{\"card\":{\"number\":\"{{$tok1}}\",\"cvc\":\"{{$tok2}}\"},\"amount\":1000,\"currency\":\"usd\"}"
if [ -n "${pg_tokens:-}" ]; then
  pg_t1=${pg_tokens%%,*}; pg_rest=${pg_tokens#*,}; pg_t2=${pg_rest%%,*}
  pg_body="{\"card\":{\"number\":\"{{$pg_t1}}\",\"cvc\":\"{{$pg_t2}}\"},\"amount\":1000,\"currency\":\"usd\"}"
fi

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
  echo "gateway pid $gw_pid on :$gw_port (process isolation: pid $gwp_pid on :$gwp_port); plain key $plain; detok key $detok; xform key $xform; app key $app_key"
  echo "body $body"
  [ "$COLD" = 1 ] && echo "cold: SQLite :18097 (no cache) :18098 (keys cached); PostgreSQL :18099 / :18100; BENCH_TOKENS in $work/tokens-*"
  echo "$sq_tokens" > "$work/tokens-sqlite"; [ -n "${pg_tokens:-}" ] && echo "$pg_tokens" > "$work/tokens-pg"
  [ -n "${pg_app_key:-}" ] && echo "pg app key $pg_app_key; pg detok key $pg_detok"
  echo "e.g. BENCH_PROXY_KEY=$plain wrk -t1 -c$C -d${D}s -s $peers/post.lua http://127.0.0.1:$gw_port/proxy/charges"
  sleep infinity
fi

load() { # name url script [env…]: the same wrk invocation as bench-peers/run.sh
  local name=$1 url=$2 script=$3; shift 3
  local out; out=$(env "$@" wrk -t1 -c"$C" -d"${D}s" --latency -s "$script" "$url" 2>&1)
  local rps p50 p99 non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out"); p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  printf '%-26s rps=%-10s p50=%-9s p99=%-9s non2xx=%s\n' "$name" "$rps" "$p50" "$p99" "${non2xx:-0}"
}
post=$peers/post.lua; cold=$root/bench/cold.lua
tessera=(BENCH_API_KEY="$app_key" BENCH_BODY="$body")
sq_cold=(BENCH_PROXY_KEY="$detok" BENCH_API_KEY="$app_key" BENCH_TOKENS="$sq_tokens")
pg_cold=(BENCH_PROXY_KEY="${pg_detok:-}" BENCH_API_KEY="${pg_app_key:-}" BENCH_TOKENS="${pg_tokens:-}")
echo "# $(date -u +%FT%TZ) $(nproc) cores, ${D}s x ${C} connections per target; hot targets on SQLite"
if [ "$ONLY" = xform ]; then
  rounds=${BENCH_ROUNDS:-5}
  rps() { local url=$1 script=$2; shift 2; env "$@" wrk -t1 -c"$C" -d"${BENCH_ROUND_SECONDS:-5}s" -s "$script" "$url" 2>&1 | awk '/Requests\/sec/ {print $2}'; }
  median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
  ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (b + 0 == 0) print "nan"; else printf "%.3f", a / b }'; }
  x=(BENCH_PROXY_KEY="$xform" "${tessera[@]}")
  for r in $(seq 1 "$rounds"); do
    nj=$(rps http://127.0.0.1:18083/charges "$post")
    nd=$(rps http://127.0.0.1:18084/charges "$post")
    io=$(rps http://127.0.0.1:18093/proxy/charges "$post" "${x[@]}")
    po=$(rps http://127.0.0.1:18094/proxy/charges "$post" "${x[@]}")
    is=$(rps "http://127.0.0.1:$gw_port/proxy/charges" "$post" "${x[@]}")
    ps=$(rps "http://127.0.0.1:$gwp_port/proxy/charges" "$post" "${x[@]}")
    echo "$(ratio "$io" "$nj")" >>"$work/x-ionj"; echo "$(ratio "$io" "$nd")" >>"$work/x-iond"
    echo "$(ratio "$po" "$io")" >>"$work/x-poio"; echo "$(ratio "$ps" "$is")" >>"$work/x-psis"
    echo "$(ratio "$ps" "$nj")" >>"$work/x-psnj"
    printf 'round %d: nginx-njs %s node %s | audit off: inline %s process %s | sync: inline %s process (defaults) %s\n' \
      "$r" "$nj" "$nd" "$io" "$po" "$is" "$ps"
    if [ -n "${BENCH_BASE_BIN:-}" ]; then
      bi=$(rps http://127.0.0.1:18088/proxy/charges "$post" "${x[@]}")
      bp=$(rps http://127.0.0.1:18089/proxy/charges "$post" "${x[@]}")
      echo "$(ratio "$io" "$bi")" >>"$work/x-ab-i"; echo "$(ratio "$po" "$bp")" >>"$work/x-ab-p"
      printf '         base build, audit off: inline %s process %s (this build / base: inline %s process %s)\n' \
        "$bi" "$bp" "$(ratio "$io" "$bi")" "$(ratio "$po" "$bp")"
    fi
  done
  printf 'median of %d paired rounds: inline(audit off)/nginx-njs %s  inline(audit off)/node %s\n' "$rounds" "$(median <"$work/x-ionj")" "$(median <"$work/x-iond")"
  printf '  process/inline: audit off %s, audit sync %s   defaults (process, sync)/nginx-njs %s\n' "$(median <"$work/x-poio")" "$(median <"$work/x-psis")" "$(median <"$work/x-psnj")"
  [ -s "$work/x-ab-i" ] && printf '  this build / base build (audit off): inline %s process %s\n' "$(median <"$work/x-ab-i")" "$(median <"$work/x-ab-p")"
  exit 0
fi
if [ "$ONLY" != audit ]; then
load direct               http://127.0.0.1:18081/ "$post"
load nginx-proxy          http://127.0.0.1:18082/ "$post"
load nginx-njs            http://127.0.0.1:18083/charges "$post"
load node                 http://127.0.0.1:18084/charges "$post"
load tessera-plain        "http://127.0.0.1:$gw_port/proxy/charges" "$post" BENCH_PROXY_KEY="$plain"
load tessera-detok-2      "http://127.0.0.1:$gw_port/proxy/charges" "$post" BENCH_PROXY_KEY="$detok" "${tessera[@]}"
load tessera-detok-2-xform "http://127.0.0.1:$gw_port/proxy/charges" "$post" BENCH_PROXY_KEY="$xform" "${tessera[@]}"
load tessera-xform-process "http://127.0.0.1:$gwp_port/proxy/charges" "$post" BENCH_PROXY_KEY="$xform" "${tessera[@]}"
if [ "$COLD" = 1 ]; then
  load cold-sqlite          "http://127.0.0.1:18097/proxy/charges" "$cold" "${sq_cold[@]}"
  load cold-sqlite-keys     "http://127.0.0.1:18098/proxy/charges" "$cold" "${sq_cold[@]}"
  if [ "$PG" = 1 ]; then
    load cold-postgres        "http://127.0.0.1:18099/proxy/charges" "$cold" "${pg_cold[@]}"
    load cold-postgres-keys   "http://127.0.0.1:18100/proxy/charges" "$cold" "${pg_cold[@]}"
  fi
fi
fi

# Paired rounds: the machine drifts between loads, so each round loads a peer and the gateway
# back to back and takes their ratio; the median over BENCH_ROUNDS rounds (default 5, 5 s each;
# 0 skips) is the figure to quote against the targets.
rounds=${BENCH_ROUNDS:-5}
[[ "$rounds" =~ ^[0-9]+$ ]] || { echo "BENCH_ROUNDS must be a whole number"; exit 1; }
rps() { local url=$1 script=$2; shift 2; env "$@" wrk -t1 -c"$C" -d"${BENCH_ROUND_SECONDS:-5}s" -s "$script" "$url" 2>&1 | awk '/Requests\/sec/ {print $2}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (b + 0 == 0) print "nan"; else printf "%.3f", a / b }'; }
record() { echo "$2" >>"$work/ratio-$1"; }
quote() { [ -s "$work/ratio-$1" ] && median <"$work/ratio-$1" || echo "n/a"; }
if [ "$rounds" -gt 0 ] && [ "$ONLY" != audit ]; then
  for r in $(seq 1 "$rounds"); do
    np=$(rps http://127.0.0.1:18082/ "$post")
    tp=$(rps "http://127.0.0.1:$gw_port/proxy/charges" "$post" BENCH_PROXY_KEY="$plain")
    nj=$(rps http://127.0.0.1:18083/charges "$post")
    td=$(rps "http://127.0.0.1:$gw_port/proxy/charges" "$post" BENCH_PROXY_KEY="$detok" "${tessera[@]}")
    ti=$(rps "http://127.0.0.1:$gw_port/proxy/charges" "$post" BENCH_PROXY_KEY="$xform" "${tessera[@]}")
    nd=$(rps http://127.0.0.1:18084/charges "$post")
    tx=$(rps "http://127.0.0.1:$gwp_port/proxy/charges" "$post" BENCH_PROXY_KEY="$xform" "${tessera[@]}")
    record plain "$(ratio "$tp" "$np")"; record detok "$(ratio "$td" "$nj")"
    record xnjs "$(ratio "$ti" "$nj")"; record xnode "$(ratio "$ti" "$nd")"; record pnjs "$(ratio "$tx" "$nj")"
    printf 'round %d: plain/nginx-proxy %s (%s/%s)  detok-2/nginx-njs %s (%s/%s)\n' "$r" \
      "$(ratio "$tp" "$np")" "$tp" "$np" "$(ratio "$td" "$nj")" "$td" "$nj"
    printf '         xform-inline/nginx-njs %s (%s)  xform-inline/node %s (%s)  xform-process/nginx-njs %s (%s)\n' \
      "$(ratio "$ti" "$nj")" "$ti" "$(ratio "$ti" "$nd")" "$nd" "$(ratio "$tx" "$nj")" "$tx"
    if [ "$COLD" = 1 ]; then
      # nginx+njs again, right before the cold loads it is compared with.
      nj=$(rps http://127.0.0.1:18083/charges "$post")
      cs=$(rps "http://127.0.0.1:18097/proxy/charges" "$cold" "${sq_cold[@]}")
      ck=$(rps "http://127.0.0.1:18098/proxy/charges" "$cold" "${sq_cold[@]}")
      record csq "$(ratio "$cs" "$nj")"; record ckq "$(ratio "$ck" "$nj")"
      line=$(printf 'cold-sqlite %s (%s)  keys cached %s (%s)' "$(ratio "$cs" "$nj")" "$cs" "$(ratio "$ck" "$nj")" "$ck")
      if [ "$PG" = 1 ]; then
        cp=$(rps "http://127.0.0.1:18099/proxy/charges" "$cold" "${pg_cold[@]}")
        kp=$(rps "http://127.0.0.1:18100/proxy/charges" "$cold" "${pg_cold[@]}")
        record cpg "$(ratio "$cp" "$nj")"; record kpg "$(ratio "$kp" "$nj")"
        line="$line  $(printf 'cold-postgres %s (%s)  keys cached %s (%s)' "$(ratio "$cp" "$nj")" "$cp" "$(ratio "$kp" "$nj")" "$kp")"
      fi
      printf '         %s (each / nginx-njs %s)\n' "$line" "$nj"
    fi
  done
  printf 'median of %d paired rounds: plain/nginx-proxy %s  detok-2/nginx-njs %s\n' "$rounds" "$(quote plain)" "$(quote detok)"
  printf '  detok-2 + both transforms: inline/nginx-njs %s  inline/node %s  process/nginx-njs %s\n' \
    "$(quote xnjs)" "$(quote xnode)" "$(quote pnjs)"
  [ "$COLD" = 1 ] && printf '  cold tokens / nginx-njs: sqlite %s (keys cached %s)  postgres %s (keys cached %s)\n' \
    "$(quote csq)" "$(quote ckq)" "$(quote cpg)" "$(quote kpg)"
fi

# Audit rounds: per round and target, the gateway with the trail off, sync and async back to
# back; the ratios sync/off and async/off (issue 16: ≥ 0.8 sync, ≥ 0.95 async).
if [ "$AUDIT" = 1 ] && [ "$rounds" -gt 0 ]; then
  sq_hot=(BENCH_PROXY_KEY="$detok" "${tessera[@]}")
  pg_hot=(BENCH_PROXY_KEY="${pg_detok:-}" BENCH_API_KEY="${pg_app_key:-}" BENCH_BODY="${pg_body:-}")
  commits() { # port: "events batches" committed so far, from /metrics
    curl -s "http://127.0.0.1:$1/metrics" | awk '/^tessera_audit_events_committed_total/ {e=$2} /^tessera_audit_batches_committed_total/ {b=$2} END {printf "%d %d", e, b}'
  }
  per_commit() { # "events batches" before, after: events per commit in between
    awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " "); n = y[2] - x[2]; if (n > 0) printf "%.1f", (y[1] - x[1]) / n; else print "-"}'
  }
  measured() { # name port script env…: req/s, then CPU µs per request and events per commit
    local name=$1 port=$2 script=$3; shift 3
    local c0 t0 r
    c0=$(commits "$port"); t0=$(cpu_ticks "$port")
    r=$(rps "http://127.0.0.1:$port/proxy/charges" "$script" "$@")
    record "rps-$name" "$r"
    record "cpu-$name" "$(cpu_per_request "$t0" "$(cpu_ticks "$port")" "$r")"
    record "epc-$name" "$(per_commit "$c0" "$(commits "$port")")"
  }
  last() { tail -n1 "$work/ratio-$1"; }
  audit_round() { # label first-port script env…
    local label=$1 port=$2 script=$3; shift 3
    local m p=$port
    for m in off sync async; do measured "$label-$m" "$p" "$script" "$@"; p=$((p + 1)); done
    local off sync async
    off=$(last "rps-$label-off"); sync=$(last "rps-$label-sync"); async=$(last "rps-$label-async")
    record "audit-$label-sync" "$(ratio "$sync" "$off")"; record "audit-$label-async" "$(ratio "$async" "$off")"
    printf '  %-15s off %-9s (%s µs CPU)  sync %-9s (%s, %s µs CPU, %s events/commit)  async %-9s (%s, %s µs CPU, %s events/commit)\n' \
      "$label" "$off" "$(last "cpu-$label-off")" "$sync" "$(ratio "$sync" "$off")" "$(last "cpu-$label-sync")" "$(last "epc-$label-sync")" \
      "$async" "$(ratio "$async" "$off")" "$(last "cpu-$label-async")" "$(last "epc-$label-async")"
  }
  for r in $(seq 1 "$rounds"); do
    echo "audit round $r:"
    audit_round sqlite-cached 18101 "$post" "${sq_hot[@]}"
    audit_round sqlite-cold 18104 "$cold" "${sq_cold[@]}"
    if [ -n "${pg_detok:-}" ]; then
      audit_round postgres-cached 18107 "$post" "${pg_hot[@]}"
      audit_round postgres-cold 18110 "$cold" "${pg_cold[@]}"
    fi
  done
  printf 'audit, median of %d paired rounds (sync/off, async/off):\n' "$rounds"
  for label in sqlite-cached sqlite-cold postgres-cached postgres-cold; do
    if [ -s "$work/ratio-audit-$label-sync" ]; then
      printf '  %-15s CPU µs/request off %s sync %s async %s | req/s sync/off %s async/off %s | events/commit sync %s async %s\n' "$label" \
        "$(quote "cpu-$label-off")" "$(quote "cpu-$label-sync")" "$(quote "cpu-$label-async")" \
        "$(quote "audit-$label-sync")" "$(quote "audit-$label-async")" "$(quote "epc-$label-sync")" "$(quote "epc-$label-async")"
    fi
  done
fi
