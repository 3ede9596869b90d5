#!/usr/bin/env bash
# `api import` beside bulk `/tokenize` from 8 callers, on PostgreSQL; see
# bench/import_command.py for the loads and the environment.
#
#   bench/import-command.sh            (or `just bench-import-command`)
#
# Needs python3, psql and a PostgreSQL server. Never run it while something else builds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
echo "building release binaries…" >&2
(cd "$root" && cargo build --release --quiet --bin api)
exec python3 "$root/bench/import_command.py" "$@"
