#!/usr/bin/env bash
# Write-path benchmark of the management API (bulk `/tokenize`, single `POST /tokens`, point
# reads) on SQLite and PostgreSQL; see bench/import.py for the loads and the environment.
#
#   bench/import.sh            (or `just bench-import`)
#
# Needs wrk (`apt-get install -y wrk`), python3, and for PostgreSQL psql and a server
# (BENCH_PG=0 skips it). Never run it while something else builds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
echo "building release binaries…" >&2
(cd "$root" && cargo build --release --quiet --bin api --bin proxy-gateway)
exec python3 "$root/bench/import.py" "$@"
