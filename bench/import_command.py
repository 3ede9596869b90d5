#!/usr/bin/env python3
"""`api import` beside bulk `/tokenize` from 8 callers, on PostgreSQL (docs/performance.md).

Run through bench/import-command.sh (which builds the release binaries first). It writes an
export of BENCH_IMPORT_ROWS (50,000) cards in the shape of Basis Theory's token object (each
with its own id, a distinct Luhn-valid number, two metadata pairs, and the fields Tessera does
not keep: `created_at`, `fingerprint`), then, in each of BENCH_ROUNDS (3) paired rounds, on a
fresh database each:

- `tokenize`: the best a hand-written loop does: 8 callers (threads, keep-alive connections)
  send the same rows, 100 to a `POST /tokenize`, prepared in advance, as fast as answers come;
- `import`: `api import FILE --concurrency 8 --batch-size 100` against the same server build.

Reported per load: tokens/s (rows over wall time), CPU µs per token (the `api` server, every
`postgres` process, and for `import` the command itself, from /proc), and the ratio of
import's rate to tokenize's, per round and as the median of the rounds. Both loads store every
row (checked after each: 50,000 tokens in the tenant). Never run it while something builds.

Environment: BENCH_ROUNDS (3), BENCH_IMPORT_ROWS (50000), TESSERA_BENCH_DATABASE_URL,
BENCH_OUT (also write the summary, markdown, here).
"""

import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gateway as g  # noqa: E402 - the shared helpers (processes, /proc)

ROWS = int(os.environ.get("BENCH_IMPORT_ROWS", "50000"))
CALLERS = 8
BATCH = 100
PORT = 18395


def luhn_card(rng):
    """A random 16-digit Visa-like number passing the Luhn check."""
    digits = [4] + [rng.randrange(10) for _ in range(14)]
    total = 0
    for i, d in enumerate(reversed(digits)):
        d = d * 2 if i % 2 == 0 else d
        total += d - 9 if d > 9 else d
    return "".join(map(str, digits)) + str((10 - total % 10) % 10)


def export(path):
    """Writes ROWS export lines; returns the create requests they become (what a loop sends)."""
    rng = random.Random(7)
    requests = []
    with open(path, "w") as f:
        for i in range(ROWS):
            row = {"id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "type": "card",
                   "data": {"number": luhn_card(rng), "expiration_month": 12, "expiration_year": 2030},
                   "metadata": {"customer": f"cus_{i}", "source": "import"}, "containers": ["/pci/high/"]}
            requests.append(dict(row))
            row.update({"created_at": "2025-01-02T03:04:05Z", "fingerprint": "f" * 64, "tenant_id": str(uuid.uuid4())})
            f.write(json.dumps(row) + "\n")
    return requests


def fresh_server(work, n):
    """A new database and `api` on it; returns (pid, key, db_url)."""
    name = f"tessera_bench_import_cmd_{os.getpid()}_{n}"
    subprocess.run(["psql", "-q", g.PG_ADMIN, "-c", f"CREATE DATABASE {name}"], check=True)
    g.cleanups.append(lambda name=name: subprocess.run(
        ["psql", "-q", g.PG_ADMIN, "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], capture_output=True))
    url = g.PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    log = open(os.path.join(work, f"api-{n}.log"), "w")
    p = g.spawn([os.path.join(g.BIN, "api"), "serve", "--no-bootstrap", "--no-gateway", "--no-console", "--listen",
                 f"127.0.0.1:{PORT}", "--database-url", url, "--data-dir", work], stdout=log, stderr=log)
    g.healthy(PORT)
    admin = json.loads(subprocess.run(
        [os.path.join(g.BIN, "api"), "tenants", "create", "--name", "import", "--database-url", url,
         "--data-dir", work], check=True, capture_output=True, text=True).stdout)["api_key"]
    key = post(admin, "/applications", json.dumps({
        "name": "importer", "type": "private", "permissions": ["token:create", "token:read"]}))["key"]
    return p, key, url


def post(key, path, body):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    c.request("POST", path, body=body, headers={"SVC-API-KEY": key, "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"POST {path}: {r.status} {data[:300]!r}")
    return json.loads(data)


def total_tokens(key):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    c.request("GET", "/tokens?size=1", headers={"SVC-API-KEY": key})
    return json.loads(c.getresponse().read())["pagination"]["total_items"]


def tokenize(key, bodies):
    """8 callers send `bodies` through `POST /tokenize`; returns the wall time."""
    queue = list(reversed(bodies))
    lock = threading.Lock()
    failures = []

    def caller():
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
        while True:
            with lock:
                if not queue:
                    return
                body = queue.pop()
            c.request("POST", "/tokenize", body=body, headers={"SVC-API-KEY": key, "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 201:
                failures.append(r.status)

    threads = [threading.Thread(target=caller) for _ in range(CALLERS)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        sys.exit(f"tokenize: {len(failures)} calls failed ({failures[:5]})")
    return time.monotonic() - start


def run_import(key, path):
    """`api import`; returns (wall time, the command's CPU ticks)."""
    start = time.monotonic()
    before = os.times()
    done = subprocess.run([os.path.join(g.BIN, "api"), "import", path, "--url", f"http://127.0.0.1:{PORT}",
                           "--concurrency", str(CALLERS), "--batch-size", str(BATCH)],
                          env=dict(os.environ, TESSERA_API_KEY=key), capture_output=True, text=True)
    wall = time.monotonic() - start
    after = os.times()
    if done.returncode != 0:
        sys.exit(f"api import failed: {done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    if summary["stored"] != ROWS:
        sys.exit(f"api import stored {summary['stored']} of {ROWS}")
    cpu_s = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu_s


def measure(work, n, load):
    """One load on a fresh server: (tokens/s, CPU µs per token)."""
    p, key, _ = fresh_server(work, n)
    cpu = g.Cpu([p.pid], ["postgres"])
    t0 = cpu.ticks(g.proc_table())
    wall, own_cpu = load(key)
    spent = (cpu.ticks(g.proc_table()) - t0) / g.HZ + own_cpu
    stored = total_tokens(key)
    if stored != ROWS:
        sys.exit(f"{stored} tokens stored, {ROWS} expected")
    p.terminate()
    p.wait(timeout=30)
    return ROWS / wall, spent / ROWS * 1e6


def main():
    if not g.PG:
        sys.exit("this benchmark runs on PostgreSQL (BENCH_PG=1)")
    work = tempfile.mkdtemp(prefix="tessera-bench-import-cmd.")
    g.cleanups.append(lambda: shutil.rmtree(work, ignore_errors=True))
    os.environ.setdefault("TESSERA_MASTER_KEY", __import__("base64").b64encode(os.urandom(32)).decode())
    os.environ.setdefault("RUST_LOG", "warn")
    path = os.path.join(work, "export.jsonl")
    requests = export(path)
    bodies = [json.dumps(requests[i:i + BATCH]).encode() for i in range(0, ROWS, BATCH)]
    loads = {
        "tokenize": lambda key: (tokenize(key, bodies), 0.0),
        "import": lambda key: run_import(key, path),
    }
    results = {name: [] for name in loads}
    n = 0
    for r in range(1, g.ROUNDS + 1):
        order = list(loads) if r % 2 else list(reversed(loads))
        for name in order:
            n += 1
            tps, cpu = measure(work, n, loads[name])
            results[name].append((tps, cpu))
            g.say(f"round {r}: {name:<9} {tps:8.0f} tokens/s  CPU {cpu:6.1f} µs/token")
    ratios = [i[0] / t[0] for i, t in zip(results["import"], results["tokenize"])]
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    g.out(f"{ROWS:,} cards, {g.ROUNDS} paired rounds on fresh PostgreSQL databases; medians. "
          f"{CALLERS} callers, {BATCH} rows a call.")
    g.out()
    g.out("| load | tokens/s | CPU µs / token |")
    g.out("|---|---|---|")
    for name, rs in results.items():
        g.out(f"| {name} | {med([x[0] for x in rs]):.0f} | {med([x[1] for x in rs]):.1f} |")
    g.out()
    g.out(f"import / tokenize, per round: {', '.join(f'{x:.2f}' for x in ratios)}; median {med(ratios):.2f}")
    if os.environ.get("BENCH_OUT"):
        with open(os.environ["BENCH_OUT"], "w") as f:
            f.write("\n".join(g.summary) + "\n")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        main()
    finally:
        g.cleanup()
