#!/usr/bin/env bash
# Load benchmark of the proxy gateway beside the peers in ../shared/bench-peers (nginx upstream,
# nginx reverse proxy, nginx+njs, Node.js), all loaded the same way in paired rounds so that the
# figures are read as ratios (these machines are shared and noisy). Reports req/s, p50/p99 and
# CPU µs per request for every target; see bench/gateway.py for the suites and the environment.
#
#   bench/gateway.sh            (or `just bench-gateway`)
#
# Needs: nginx, libnginx-mod-http-js, wrk (`apt-get install -y nginx libnginx-mod-http-js wrk`),
# node and python3; for the PostgreSQL targets, psql and a PostgreSQL server (BENCH_PG=0 skips
# them). Never run it while something else builds: the figures would measure the compiler.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
echo "building release binaries…" >&2
(cd "$root" && cargo build --release --quiet --bin api --bin proxy-gateway)
exec python3 "$root/bench/gateway.py" "$@"
