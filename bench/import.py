#!/usr/bin/env python3
"""Write-path benchmark of the management API: bulk imports and single creates, on both backends.

Run through bench/import.sh (which builds the release binaries first). For each backend (SQLite,
and PostgreSQL unless BENCH_PG=0) it starts `api` on the defaults (audit `sync`) and loads, with
wrk, in BENCH_ROUNDS rounds of BENCH_ROUND_SECONDS:

- `bulk`: `POST /tokenize` with an array of BENCH_BULK (100) cards, BENCH_BULK_CONNS (8) callers;
  reported as tokens per second and **CPU per token**;
- `create`: `POST /tokens`, one card, BENCH_CONNS (32) connections: req/s, p50/p99, CPU per
  token;
- `read`: `GET /tokens/{id}` of one token, BENCH_CONNS connections (for reference).

CPU is the `api` process's time from /proc over the tokens created (or reads served), plus, on
PostgreSQL, every `postgres` process of the machine (the server works for the API). Figures are
medians over rounds. Every card carries two metadata pairs, so each token also writes its
search rows; no card asks to deduplicate.

Environment: BENCH_ROUNDS (3), BENCH_ROUND_SECONDS (5), BENCH_BULK (100), BENCH_BULK_CONNS (8),
BENCH_CONNS (32), BENCH_PG (1), BENCH_ONLY (bulk,create,read), BENCH_API_FLAGS (extra flags of
`api serve`), TESSERA_BENCH_DATABASE_URL, BENCH_OUT (also write the summary, markdown, here).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gateway as g  # noqa: E402 - the shared helpers (processes, /proc, wrk parsing)

BULK = int(os.environ.get("BENCH_BULK", "100"))
BULK_CONNS = int(os.environ.get("BENCH_BULK_CONNS", "8"))
ONLY = [s for s in os.environ.get("BENCH_ONLY", "bulk,create,read").split(",") if s]
SCRIPT = os.path.join(g.ROOT, "bench", "import.lua")


def card(i):
    return {"type": "card",
            "data": {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030, "cvc": "123"},
            "metadata": {"customer": f"cus_{i}", "source": "import"}}


def start_api(db_url, port, work):
    log = open(os.path.join(work, f"api-{port}.log"), "w")
    p = g.spawn([os.path.join(g.BIN, "api"), "serve", "--no-bootstrap", "--no-gateway", "--no-console", "--listen",
                 f"127.0.0.1:{port}", "--database-url", db_url, "--data-dir", work,
                 *os.environ.get("BENCH_API_FLAGS", "").split()], stdout=log, stderr=log)
    g.healthy(port)
    return p.pid


def app_key(db_url, port, work):
    admin = json.loads(subprocess.run(
        [os.path.join(g.BIN, "api"), "tenants", "create", "--name", "import", "--database-url", db_url,
         "--data-dir", work], check=True, capture_output=True, text=True).stdout)["api_key"]
    return call(port, "POST", "/applications", admin, {
        "name": "importer", "type": "private", "permissions": ["token:create", "token:read"]})["key"]


def call(port, method, path, key, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"SVC-API-KEY": key, "Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=30).read())


def main():
    if not shutil.which("wrk"):
        sys.exit("wrk is required: apt-get install -y wrk")
    work = tempfile.mkdtemp(prefix="tessera-bench-import.")
    g.cleanups.append(lambda: shutil.rmtree(work, ignore_errors=True))
    os.environ.setdefault("TESSERA_MASTER_KEY", __import__("base64").b64encode(os.urandom(32)).decode())
    os.environ.setdefault("RUST_LOG", "warn")
    dbs = {"sqlite": f"sqlite://{work}/import.db"}
    if g.PG:
        name = f"tessera_bench_import_{os.getpid()}"
        subprocess.run(["psql", "-q", g.PG_ADMIN, "-c", f"CREATE DATABASE {name}"], check=True)
        g.cleanups.append(lambda name=name: subprocess.run(
            ["psql", "-q", g.PG_ADMIN, "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], capture_output=True))
        dbs["postgres"] = g.PG_ADMIN.rsplit("/", 1)[0] + "/" + name

    targets, per_token = [], {}
    for i, (db, url) in enumerate(dbs.items()):
        port = 18390 + i
        pid = start_api(url, port, work)
        key = app_key(url, port, work)
        cpu = g.Cpu([pid], ["postgres"] if db == "postgres" else [])
        base = f"http://127.0.0.1:{port}"
        env = {"BENCH_API_KEY": key}
        if "bulk" in ONLY:
            name = f"bulk {BULK}/call, {db}"
            targets.append((g.Target(name, base + "/tokenize", SCRIPT,
                                     dict(env, BENCH_BODY=json.dumps([card(j) for j in range(BULK)])), cpu),
                            BULK_CONNS))
            per_token[name] = BULK
        if "create" in ONLY:
            name = f"create 1/call, {db}"
            targets.append((g.Target(name, base + "/tokens", SCRIPT, dict(env, BENCH_BODY=json.dumps(card(0))), cpu),
                            g.CONNS))
            per_token[name] = 1
        if "read" in ONLY:
            token = call(port, "POST", "/tokens", key, card(0))["id"]
            name = f"read 1/call, {db}"
            targets.append((g.Target(name, f"{base}/tokens/{token}", SCRIPT, dict(env, BENCH_METHOD="GET"), cpu),
                            g.CONNS))
            per_token[name] = 1
    time.sleep(0.5)

    results = {t.name: [] for t, _ in targets}
    for r in range(1, g.ROUNDS + 1):
        g.say(f"round {r}/{g.ROUNDS}:")
        for t, conns in targets:
            res = g.load(t, g.SECONDS, conns)
            res["tps"] = res["rps"] * per_token[t.name]
            res["cpu"] /= per_token[t.name]
            results[t.name].append(res)
            bad = f" NON-2xx {res['non2xx']}" if res["non2xx"] else ""
            g.say(f"  {t.name:<24} {res['tps']:>9.0f} tokens/s  p50 {res['p50']:7.2f} ms  p99 {res['p99']:7.2f} ms"
                  f"  CPU {res['cpu']:7.1f} µs/token{bad}")

    g.out(f"{g.ROUNDS} rounds of {g.SECONDS} s; medians. Bulk: {BULK} cards a call, {BULK_CONNS} callers; "
          f"single creates and reads: {g.CONNS} connections. CPU per token (per read for reads), PostgreSQL's "
          "included on PostgreSQL.")
    g.out()
    g.out("| load | tokens/s | calls/s | p50 ms | p99 ms | CPU µs / token |")
    g.out("|---|---|---|---|---|---|")
    for t, _ in targets:
        n = t.name
        g.out(f"| {n} | {g.med(results, n, 'tps'):.0f} | {g.med(results, n, 'rps'):.0f} | {g.med(results, n, 'p50'):.2f}"
              f" | {g.med(results, n, 'p99'):.2f} | {g.med(results, n, 'cpu'):.1f} |")
    if os.environ.get("BENCH_OUT"):
        with open(os.environ["BENCH_OUT"], "w") as f:
            f.write("\n".join(g.summary) + "\n")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        main()
    finally:
        g.cleanup()
