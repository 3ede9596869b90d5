#!/usr/bin/env python3
"""Load benchmark of the proxy gateway beside the peers of ../shared/bench-peers, in paired rounds.

Run through bench/gateway.sh (which builds the release binaries first). Every load is the same
wrk invocation as bench-peers/run.sh (one thread, BENCH_CONNS connections, the payment-like
body). For every load it reports requests per second, p50 and p99, and **CPU per request**:
the CPU time the serving processes used during the load (from /proc), over the requests served.

- Tessera: the gateway process and its process tree (its sandboxes); for PostgreSQL targets,
  also every `postgres` process of the machine (the server works for the gateway).
- nginx peers: the nginx instance's processes minus the upstream's own share, which is the
  `direct` target's CPU per request in the same round (nginx serves both).
- node: its process (its upstream is nginx, not counted, as for Tessera).
- The realistic scenario's nginx+njs: its whole instance, which includes the slow destination.

Figures are medians over paired rounds (each round loads every target of the suite back to
back); ratios are taken per round, then their median. CPU ratios are peer CPU over Tessera CPU
(above 1: Tessera uses less).

Suites (BENCH_ONLY, comma-separated; default `main,audit,realistic`):

- `main`: the peers, plain forwarding, two cached tokens and the full path (both peer
  transforms) on the defaults (sandbox processes, audit `sync`) and tuned (inline, audit
  `off`), cold tokens on both backends.
- `audit`: each default on its own and together: two cached tokens inline with the trail `off`,
  `async`, `sync`; the full path inline and in processes, each `off`, `async`, `sync`; with
  events per commit from /metrics, and the trail's stored bytes per event at the end.
- `realistic`: a destination that answers after BENCH_SLOW_MS (20) ms, BENCH_SLOW_CONNS (256)
  connections, BENCH_SLOW_ROUNDS (2) rounds of BENCH_SLOW_SECONDS (8) s: nginx+njs, and the
  defaults and inline/`off` gateways on SQLite and PostgreSQL, two cached tokens and the full
  path.

Environment: BENCH_ROUNDS (3), BENCH_ROUND_SECONDS (5), BENCH_CONNS (32), BENCH_PG (1; 0 skips
PostgreSQL), TESSERA_BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres: a database
is created there for the run and dropped after), BENCH_POOL (400 tokens for the cold loads),
BENCH_PROCESS_FLAGS (extra flags of the process-isolation gateways), BENCH_GATEWAY_FLAGS (extra
flags of every gateway), BENCH_HOLD=1 (set up, print the keys, wait: for profiling), BENCH_OUT
(also write the summary tables, markdown, to this file).
"""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.environ.get("BENCH_PEERS", os.path.join(ROOT, "..", "shared", "bench-peers"))
BIN = os.environ.get("BENCH_BIN", os.path.join(ROOT, "target", "release"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SECONDS = int(os.environ.get("BENCH_ROUND_SECONDS", "5"))
CONNS = int(os.environ.get("BENCH_CONNS", "32"))
PG = os.environ.get("BENCH_PG", "1") == "1"
POOL = int(os.environ.get("BENCH_POOL", "400"))
SLOW_MS = int(os.environ.get("BENCH_SLOW_MS", "20"))
SLOW_CONNS = int(os.environ.get("BENCH_SLOW_CONNS", "256"))
SLOW_SECONDS = int(os.environ.get("BENCH_SLOW_SECONDS", "8"))
SLOW_ROUNDS = int(os.environ.get("BENCH_SLOW_ROUNDS", "2"))
SUITES = [s for s in os.environ.get("BENCH_ONLY", "main,audit,realistic").split(",") if s]
PG_ADMIN = os.environ.get("TESSERA_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
HZ = os.sysconf("SC_CLK_TCK")
POST = os.path.join(PEERS, "post.lua")
COLD = os.path.join(ROOT, "bench", "cold.lua")
FAST = "http://127.0.0.1:18081/"
SLOW = "http://127.0.0.1:18185/"

children = []
cleanups = []
summary = []


def say(*args):
    print(*args, flush=True)


def out(line=""):
    """A line of the summary (printed, and written to BENCH_OUT)."""
    summary.append(line)
    say(line)


def spawn(args, **kw):
    p = subprocess.Popen(args, **kw)
    children.append(p)
    return p


def cleanup():
    for p in children:
        if p.poll() is None:
            p.terminate()
    for p in children:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
    for f in reversed(cleanups):
        try:
            f()
        except Exception as e:  # noqa: BLE001 - cleanup goes on
            say(f"cleanup: {e}")


def healthy(port):
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.1)
    sys.exit(f"port {port} did not come up")


# ---- CPU time from /proc -------------------------------------------------------------------

def proc_table():
    """pid -> (ppid, comm, own ticks, waited-for children's ticks)."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2:].split()
        # fields[0] is the state: utime, stime, cutime, cstime are fields 14-17 of stat(5).
        ppid = int(fields[1])
        own = int(fields[11]) + int(fields[12])
        waited = int(fields[13]) + int(fields[14])
        table[int(name)] = (ppid, comm, own, waited)
    return table


def tree_ticks(table, root):
    """Ticks of `root`, its waited-for children and every live descendant."""
    if root not in table:
        return 0
    kids = {}
    for pid, (ppid, _, _, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    total = table[root][3]
    stack = [root]
    while stack:
        pid = stack.pop()
        total += table[pid][2]
        stack.extend(kids.get(pid, []))
    return total


def comm_ticks(table, comm):
    return sum(own + waited for (_, c, own, waited) in table.values() if c == comm)


class Cpu:
    """Where a target's CPU is counted: process trees by root pid, and whole commands."""

    def __init__(self, roots=(), comms=()):
        self.roots, self.comms = list(roots), list(comms)

    def ticks(self, table):
        return sum(tree_ticks(table, r) for r in self.roots) + sum(comm_ticks(table, c) for c in self.comms)


# ---- loads ---------------------------------------------------------------------------------

def duration_ms(text):
    m = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    if not m:
        return float("nan")
    value, unit = float(m.group(1)), m.group(2)
    return value * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def metrics(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except Exception:  # noqa: BLE001 - no metrics: no figure
        return {}
    values = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.rsplit(" ", 1)
        try:
            values[name] = float(value)
        except ValueError:
            pass
    return values


class Target:
    def __init__(self, name, url, script=POST, env=None, cpu=None, minus=None, port=None):
        self.name, self.url, self.script = name, url, script
        self.env = env or {}
        self.cpu = cpu or Cpu()
        # The name of a target whose CPU per request (same round) is subtracted: the upstream's
        # share of a peer that serves its own upstream.
        self.minus = minus
        # A gateway port whose /metrics report the audit writer's commits.
        self.port = port


def load(t, seconds, conns):
    before_t = proc_table()
    before_m = metrics(t.port) if t.port else {}
    started = time.monotonic()
    env = dict(os.environ, **t.env)
    res = subprocess.run(["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency", "-s", t.script, t.url],
                         capture_output=True, text=True, env=env)
    after_t = proc_table()
    elapsed = time.monotonic() - started
    text = res.stdout + res.stderr
    m = re.search(r"(\d+) requests in", text)
    requests = int(m.group(1)) if m else 0
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)) if "Requests/sec" in text else 0.0
    lat = {p: duration_ms(v) for p, v in re.findall(r"^\s+(50|99)%\s+(\S+)", text, re.M)}
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    ticks = t.cpu.ticks(after_t) - t.cpu.ticks(before_t)
    r = {
        "rps": rps,
        "p50": lat.get("50", float("nan")),
        "p99": lat.get("99", float("nan")),
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "cpu": ticks * 1e6 / HZ / requests if requests else float("nan"),
        "requests": requests,
        "elapsed": elapsed,
    }
    if t.port:
        after_m = metrics(t.port)
        d = lambda k: after_m.get(k, 0) - before_m.get(k, 0)  # noqa: E731
        events, batches = d("tessera_audit_events_committed_total"), d("tessera_audit_batches_committed_total")
        r["epc"] = events / batches if batches else float("nan")
        windows = d("tessera_audit_windows_total")
        r["window_us"] = d("tessera_audit_window_seconds_total") * 1e6 / windows if windows else float("nan")
    return r


def rounds(targets, n, seconds, conns, label):
    """Loads every target once per round; returns name -> list of results (one per round)."""
    results = {t.name: [] for t in targets}
    for i in range(1, n + 1):
        say(f"{label} round {i}/{n}:")
        this = {}
        for t in targets:
            r = load(t, seconds, conns)
            this[t.name] = r
            if t.minus and t.minus in this:
                r["cpu"] -= this[t.minus]["cpu"]
            results[t.name].append(r)
            extra = f" events/commit {r['epc']:.1f}" if "epc" in r else ""
            bad = f" NON-2xx {r['non2xx']}" if r["non2xx"] else ""
            say(f"  {t.name:<28} {r['rps']:>9.0f} req/s  p50 {r['p50']:7.2f} ms  p99 {r['p99']:7.2f} ms"
                f"  CPU {r['cpu']:7.1f} µs/req{extra}{bad}")
    return results


def med(results, name, key):
    values = [r[key] for r in results.get(name, []) if r[key] == r[key]]
    return statistics.median(values) if values else float("nan")


def per_round(results, a, b, f):
    """The median over rounds of f(result of a, result of b)."""
    values = [f(x, y) for x, y in zip(results.get(a, []), results.get(b, []))]
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def cpu_ratio(results, peer, ours):
    return per_round(results, peer, ours, lambda p, o: p["cpu"] / o["cpu"] if o["cpu"] else float("nan"))


def rps_ratio(results, ours, peer):
    return per_round(results, ours, peer, lambda o, p: o["rps"] / p["rps"] if p["rps"] else float("nan"))


def cpu_diff(results, a, b):
    return per_round(results, a, b, lambda x, y: x["cpu"] - y["cpu"])


def table(results, names):
    out("| target | req/s | p50 ms | p99 ms | CPU µs / request | events / commit |")
    out("|---|---|---|---|---|---|")
    for n in names:
        if n not in results:
            continue
        epc = med(results, n, "epc") if results[n] and "epc" in results[n][0] else float("nan")
        out(f"| {n} | {med(results, n, 'rps'):.0f} | {med(results, n, 'p50'):.2f} | {med(results, n, 'p99'):.2f} "
            f"| {med(results, n, 'cpu'):.1f} | {'' if epc != epc else f'{epc:.1f}'} |")


# ---- set-up --------------------------------------------------------------------------------

class Gateways:
    """Gateway processes, started on first use."""

    def __init__(self, work, dbs):
        self.work, self.dbs, self.running, self.next_port = work, dbs, {}, 18201

    def get(self, db, *flags):
        key = (db,) + flags
        if key not in self.running:
            port = self.next_port
            self.next_port += 1
            args = [os.path.join(BIN, "proxy-gateway"), "--listen", f"127.0.0.1:{port}", "--database-url",
                    self.dbs[db], "--allow-private-destinations", "--data-dir", self.work, *flags]
            args += os.environ.get("BENCH_GATEWAY_FLAGS", "").split()
            if "process" in flags:
                args += os.environ.get("BENCH_PROCESS_FLAGS", "").split()
            p = spawn(args)
            healthy(port)
            self.running[key] = (port, p.pid)
        return self.running[key]


def tenant(db_url, port, work, extra):
    admin = json.loads(subprocess.run(
        [os.path.join(BIN, "api"), "tenants", "create", "--name", "bench", "--database-url", db_url, "--data-dir", work],
        check=True, capture_output=True, text=True).stdout)["api_key"]
    setup = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "setup.py"), f"http://127.0.0.1:{port}", admin,
                            PEERS, str(POOL), *extra], check=True, capture_output=True, text=True)
    return json.loads(setup.stdout)


def api(db_url, port, work):
    log = open(os.path.join(work, f"api-{port}.log"), "w")
    spawn([os.path.join(BIN, "api"), "serve", "--no-bootstrap", "--no-gateway", "--no-console", "--listen",
           f"127.0.0.1:{port}", "--database-url", db_url, "--data-dir", work, "--allow-private-destinations"],
          stdout=log, stderr=log)
    healthy(port)


def nginx(conf_template, rundir, **subst):
    os.makedirs(rundir, exist_ok=True)
    text = open(conf_template).read()
    for k, v in subst.items():
        text = text.replace(k, v)
    conf = os.path.join(rundir, "nginx.conf")
    open(conf, "w").write(text)
    subprocess.run(["nginx", "-c", conf], check=True)
    pid = int(open(os.path.join(rundir, "nginx.pid")).read())
    cleanups.append(lambda: os.kill(pid, signal.SIGTERM))
    return pid


def body(tokens):
    return json.dumps({"card": {"number": "{{%s}}" % tokens[0], "cvc": "{{%s}}" % tokens[1]},
                       "amount": 1000, "currency": "usd"}, separators=(",", ":"))


def stored_bytes(db_url, work):
    """The audit trail's stored bytes per event: (rows' payload, table with its index pages)."""
    if db_url.startswith("sqlite://"):
        import sqlite3
        c = sqlite3.connect(db_url[len("sqlite://"):])
        events = c.execute("select coalesce(sum(last_seq - first_seq + 1), 0) from audit_blocks").fetchone()[0]
        payload = c.execute("select coalesce(sum(length(events) + length(hashes) + length(prev_hash) + length(tenant_id) + 40), 0)"
                            " from audit_blocks").fetchone()[0]
        pages = c.execute("select coalesce(sum(pgsize), 0) from dbstat where name in"
                          " (select name from sqlite_master where tbl_name = 'audit_blocks')").fetchone()[0]
        return events, payload, pages
    q = ("select coalesce(sum(last_seq - first_seq + 1), 0), coalesce(sum(length(events) + length(hashes)"
         " + length(prev_hash) + length(tenant_id) + 40), 0), pg_total_relation_size('audit_blocks') from audit_blocks")
    row = subprocess.run(["psql", "-Atq", db_url, "-c", q], check=True, capture_output=True, text=True).stdout.strip()
    return tuple(int(x) for x in row.split("|"))


def main():
    for tool in ("nginx", "wrk", "node"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is required: apt-get install -y nginx libnginx-mod-http-js wrk")
    work = tempfile.mkdtemp(prefix="tessera-bench-gw.")
    cleanups.append(lambda: shutil.rmtree(work, ignore_errors=True))
    os.environ.setdefault("TESSERA_MASTER_KEY", __import__("base64").b64encode(os.urandom(32)).decode())
    os.environ.setdefault("RUST_LOG", "warn")
    dbs = {"sqlite": f"sqlite://{work}/bench.db"}
    use_pg = PG and ("realistic" in SUITES or "main" in SUITES or "audit" in SUITES)
    if use_pg:
        name = f"tessera_bench_{os.getpid()}"
        subprocess.run(["psql", "-q", PG_ADMIN, "-c", f"CREATE DATABASE {name}"], check=True)
        cleanups.append(lambda: subprocess.run(["psql", "-q", PG_ADMIN, "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                                               capture_output=True))
        dbs["postgres"] = PG_ADMIN.rsplit("/", 1)[0] + "/" + name

    # Peers: the same configuration run.sh uses, and the realistic scenario's own instance.
    nginx_pid = nginx(os.path.join(PEERS, "nginx.conf"), "/tmp/tessera-bench", BENCHDIR=PEERS)
    node = spawn(["node", os.path.join(PEERS, "node_peer.js")])
    slow_pid = None
    if "realistic" in SUITES:
        slow_pid = nginx(os.path.join(ROOT, "bench", "realistic", "nginx.conf"), os.path.join(work, "slow-nginx"),
                         RUNDIR=os.path.join(work, "slow-nginx"), PEERSDIR=PEERS,
                         BENCHDIR=os.path.join(ROOT, "bench", "realistic"), DELAY_MS=str(SLOW_MS))

    setups = {}
    for i, (db, url) in enumerate(dbs.items()):
        api(url, 18290 + i, work)
        setups[db] = tenant(url, 18290 + i, work, [f"slow={SLOW}"])
    gw = Gateways(work, dbs)
    time.sleep(0.5)

    def gateway_target(name, db, flags, key, tokens="hot", script=None, slow=False):
        s = setups[db]
        port, pid = gw.get(db, *flags)
        proxy = s[key + ("-slow" if slow else "")]
        env = {"BENCH_PROXY_KEY": proxy}
        if key != "plain":
            env["BENCH_API_KEY"] = s["app_key"]
        if tokens == "hot":
            env["BENCH_BODY"] = body(s["tokens"])
        else:
            env["BENCH_TOKENS"] = ",".join(s["tokens"])
        cpu = Cpu([pid], ["postgres"] if db == "postgres" else [])
        audited = "off" not in flags
        return Target(name, f"http://127.0.0.1:{port}/proxy/charges", COLD if tokens == "cold" else (script or POST),
                      env, cpu, port=port if audited else None)

    DEFAULTS = ()  # process isolation and audit `sync` are the binaries' defaults
    INLINE_OFF = ("--transform-isolation", "inline", "--audit-durability", "off")
    peers = [
        Target("direct", "http://127.0.0.1:18081/", cpu=Cpu([nginx_pid])),
        Target("nginx-proxy", "http://127.0.0.1:18082/", cpu=Cpu([nginx_pid]), minus="direct"),
        Target("nginx-njs", "http://127.0.0.1:18083/charges", cpu=Cpu([nginx_pid]), minus="direct"),
        Target("node", "http://127.0.0.1:18084/charges", cpu=Cpu([node.pid])),
    ]

    if os.environ.get("BENCH_HOLD"):
        for db, s in setups.items():
            say(f"{db}: {json.dumps({k: v for k, v in s.items() if k != 'tokens'})}")
            say(f"{db} body: {body(s['tokens'])}")
            say(f"{db} defaults gateway: {gw.get(db)}  inline/off: {gw.get(db, *INLINE_OFF)}")
        say(f"e.g. BENCH_PROXY_KEY=... BENCH_API_KEY=... BENCH_BODY=... wrk -t1 -c{CONNS} -d8s -s {POST} http://127.0.0.1:PORT/proxy/charges")
        signal.pause()

    say(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {os.cpu_count()} cores; suites {','.join(SUITES)}")
    if "main" in SUITES:
        targets = peers + [
            gateway_target("plain, defaults", "sqlite", DEFAULTS, "plain"),
            gateway_target("detok, defaults", "sqlite", DEFAULTS, "detok"),
            gateway_target("detok, inline off", "sqlite", INLINE_OFF, "detok"),
            gateway_target("full, defaults", "sqlite", DEFAULTS, "xform"),
            gateway_target("full, inline off", "sqlite", INLINE_OFF, "xform"),
            gateway_target("full, process off", "sqlite", ("--audit-durability", "off"), "xform"),
            gateway_target("cold sqlite, defaults", "sqlite", ("--token-cache-ttl", "0"), "detok", tokens="cold"),
        ]
        if "postgres" in dbs:
            targets.append(gateway_target("cold postgres, defaults", "postgres", ("--token-cache-ttl", "0"), "detok",
                                          tokens="cold"))
        res = rounds(targets, ROUNDS, SECONDS, CONNS, "main")
        out()
        out(f"## main: {CONNS} connections, medians of {ROUNDS} paired rounds of {SECONDS} s")
        out()
        table(res, [t.name for t in targets])
        out()
        out("| Tessera target | peer | CPU ratio (peer / Tessera) | req/s ratio (Tessera / peer) |")
        out("|---|---|---|---|")
        for ours, peer in [("plain, defaults", "nginx-proxy"), ("detok, defaults", "nginx-njs"),
                           ("detok, inline off", "nginx-njs"), ("full, defaults", "nginx-njs"),
                           ("full, defaults", "node"), ("full, inline off", "nginx-njs"),
                           ("full, inline off", "node"), ("cold sqlite, defaults", "nginx-njs"),
                           ("cold postgres, defaults", "nginx-njs")]:
            if ours in res:
                out(f"| {ours} | {peer} | {cpu_ratio(res, peer, ours):.2f} | {rps_ratio(res, ours, peer):.2f} |")

    if "audit" in SUITES:
        targets = [peers[0], peers[2]]
        for mode in ("off", "async", "sync"):
            targets.append(gateway_target(f"detok inline {mode}", "sqlite",
                                          ("--transform-isolation", "inline", "--audit-durability", mode), "detok"))
        for iso in ("inline", "process"):
            for mode in ("off", "async", "sync"):
                targets.append(gateway_target(f"full {iso} {mode}", "sqlite",
                                              ("--transform-isolation", iso, "--audit-durability", mode), "xform"))
        res = rounds(targets, ROUNDS, SECONDS, CONNS, "audit")
        out()
        out(f"## audit: each default alone and together, SQLite, {CONNS} connections, medians of {ROUNDS} paired rounds")
        out()
        table(res, [t.name for t in targets])
        out()
        out("| figure | CPU µs / request (median of per-round differences) | req/s ratio |")
        out("|---|---|---|")
        for work_, iso in (("detok", "inline"), ("full", "inline"), ("full", "process")):
            base = f"{work_} {iso} off" if work_ == "full" else f"{work_} inline off"
            for mode in ("async", "sync"):
                name = f"{work_} {iso} {mode}" if work_ == "full" else f"{work_} inline {mode}"
                if work_ == "detok" and iso != "inline":
                    continue
                out(f"| {name} over off | {cpu_diff(res, name, base):+.1f} | {rps_ratio(res, name, base):.2f} |")
        for mode in ("off", "async", "sync"):
            out(f"| full process over inline, {mode} | {cpu_diff(res, f'full process {mode}', f'full inline {mode}'):+.1f} "
                f"| {rps_ratio(res, f'full process {mode}', f'full inline {mode}'):.2f} |")
        events, payload, pages = stored_bytes(dbs["sqlite"], work)
        if events:
            out()
            out(f"Audit trail on SQLite after the suites so far: {events} events, {payload / events:.0f} bytes per event in "
                f"the rows, {pages / events:.0f} bytes per event in the table's and its index's pages.")

    if "realistic" in SUITES:
        targets = [Target("nginx-njs (destination included)", "http://127.0.0.1:18183/charges", cpu=Cpu([slow_pid]))]
        for db in dbs:
            for label, flags in (("inline off", INLINE_OFF), ("defaults", DEFAULTS)):
                for work_, key in (("detok", "detok"), ("full", "xform")):
                    targets.append(gateway_target(f"{db} {label}, {work_}", db, flags, key, slow=True))
        res = rounds(targets, SLOW_ROUNDS, SLOW_SECONDS, SLOW_CONNS, "realistic")
        out()
        out(f"## realistic destination ({SLOW_MS} ms), {SLOW_CONNS} connections, medians of {SLOW_ROUNDS} rounds of {SLOW_SECONDS} s")
        out()
        table(res, [t.name for t in targets])
        out()
        out("| figure | value |")
        out("|---|---|")
        njs = targets[0].name
        for db in dbs:
            out(f"| {db}: defaults p99 minus nginx+njs p99, detok | "
                f"{per_round(res, f'{db} defaults, detok', njs, lambda a, b: a['p99'] - b['p99']):+.2f} ms |")
            for work_ in ("detok", "full"):
                out(f"| {db}: defaults {work_} req/s over inline off | "
                    f"{rps_ratio(res, f'{db} defaults, {work_}', f'{db} inline off, {work_}'):.2f} |")
                out(f"| {db}: defaults {work_} CPU over inline off | "
                    f"{cpu_diff(res, f'{db} defaults, {work_}', f'{db} inline off, {work_}'):+.1f} µs |")

    if "realistic" in SUITES or "audit" in SUITES:
        out()
        for db, url in dbs.items():
            events, payload, pages = stored_bytes(url, work)
            if events:
                out(f"Audit trail on {db} after the run: {events} events, {payload / events:.0f} bytes per event in the "
                    f"rows, {pages / events:.0f} bytes per event in the table's pages (with its index).")

    if os.environ.get("BENCH_OUT"):
        with open(os.environ["BENCH_OUT"], "w") as f:
            f.write("\n".join(summary) + "\n")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        main()
    finally:
        cleanup()
