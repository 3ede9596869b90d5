# Conveniences; each recipe is one plain cargo command, so `just` is optional.
set shell := ["bash", "-euo", "pipefail", "-c"]

pg_url := env_var_or_default("TESSERA_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")

# Start the API on embedded SQLite (./data).
run:
    cargo run --release --bin api

# Run every test (SQLite; PostgreSQL too when TESSERA_TEST_DATABASE_URL is set).
test:
    cargo test --workspace

# Run every test on both backends against a local PostgreSQL.
test-pg:
    TESSERA_TEST_DATABASE_URL={{pg_url}} cargo test --workspace

# Formatting and lints, as CI checks them.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings

# Criterion micro-benchmarks (crypto, permission evaluation).
bench:
    cargo bench -p tessera-domain

# What CI runs.
ci:
    CI=true bash .ci/run

# Load benchmark of the gateway beside nginx, nginx+njs and node (needs nginx, njs, wrk).
bench-gateway:
    bash bench/gateway.sh

# Write-path benchmark: bulk /tokenize, single creates and reads on SQLite and PostgreSQL (needs wrk).
bench-import:
    bash bench/import.sh

# `api import` of a 50,000-card export beside bulk /tokenize from 8 callers, on PostgreSQL.
bench-import-command:
    bash bench/import-command.sh

# Schemathesis (pinned, from PyPI) against a live api on a temporary SQLite database: every
# operation of the OpenAPI document, zero failures allowed. CI runs it too.
fuzz-api examples="40":
    FUZZ_API_EXAMPLES={{examples}} bash scripts/fuzz-api.sh

# Regenerate docs/openapi.json from the code (a test fails while it is stale).
openapi:
    cargo run --quiet --bin api -- openapi > docs/openapi.json

# Property-based fuzz targets, FUZZ_SECONDS each (default 600): expression parser, JSON/form
# substitution, container parsing, request decoding of every endpoint.
fuzz seconds="600":
    FUZZ_SECONDS={{seconds}} cargo test -p tessera-detokenize -p tessera-domain -p tessera-http --test it fuzz -- --nocapture
