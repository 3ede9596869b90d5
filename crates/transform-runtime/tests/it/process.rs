//! Process isolation on its own: what a sandbox process holds and may do, and what happens when
//! it is killed, stuck in native code, or asked to serve another tenant.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use serde_json::Value;
use tessera_transform_runtime::{
    Args, Body, EngineConfig, HostError, HostOp, Input, Isolation, Outcome, SandboxCommand,
    TransformEngine, TransformError,
};

type NoHost = fn(HostOp, Value) -> std::future::Ready<Result<Value, HostError>>;

fn sandbox_program() -> PathBuf {
    env!("CARGO_BIN_EXE_tessera-transform-sandbox").into()
}

/// An engine whose sandbox processes carry `marker` on their command line (the sandbox ignores
/// arguments it does not know), so a test finds its own processes among those of tests
/// running beside it.
fn engine(marker: &str, time_limit: Duration) -> TransformEngine {
    TransformEngine::new(EngineConfig {
        isolation: Isolation::Process,
        sandbox: Some(SandboxCommand {
            program: sandbox_program(),
            args: vec![marker.into()],
        }),
        processes_per_thread: 1,
        time_limit,
        grace: Duration::from_millis(200),
        memory_limit: 16 * 1024 * 1024,
        ..EngineConfig::default()
    })
    .expect("engine")
}

/// An engine like [`engine`]'s, with `processes` per thread and the default limits.
fn engine_with(marker: &str, processes: usize) -> TransformEngine {
    TransformEngine::new(EngineConfig {
        isolation: Isolation::Process,
        sandbox: Some(SandboxCommand {
            program: sandbox_program(),
            args: vec![marker.into()],
        }),
        processes_per_thread: processes,
        ..EngineConfig::default()
    })
    .expect("engine")
}

fn input() -> Input {
    Input {
        args: Args {
            body: Body::Text("in".into()),
            headers: Vec::new(),
            method: None,
            path: None,
            query: None,
            status: None,
        },
        configuration: Vec::new(),
    }
}

async fn run(e: &TransformEngine, tenant: &str, code: &str) -> Result<Outcome, TransformError> {
    let program = e.compile(code).expect("compiles");
    e.run::<NoHost, _>(program, "proxy", (tenant, "proxy"), input(), None)
        .await
}

const ECHO: &str = "module.exports = async (req) => ({ body: req.args.body });";

fn echoed(out: Result<Outcome, TransformError>) -> bool {
    matches!(out, Ok(Outcome::Ok { body: Some(b), .. }) if b == "in")
}

/// Live (not zombie) children of this process whose command line contains `marker`.
fn children(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so split after its `)`.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r.trim().to_string()) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let marked = cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == marker.as_bytes());
        if ppid == me && marked && state != "Z" && state != "X" {
            found.push(pid);
        }
    }
    found
}

/// Waits (up to 5 s) until `check` holds.
async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}

/// `kill -9` of the sandbox during an invocation fails that invocation (an engine error, which
/// the gateway answers 500 `proxy_error`) and nothing else: the next one runs in a new process.
#[tokio::test]
async fn a_killed_sandbox_fails_only_its_invocation() {
    let marker = "--test-kill";
    let e = engine(marker, Duration::from_secs(10));
    assert!(echoed(run(&e, "tenant", ECHO).await));
    let [pid] = children(marker)[..] else {
        panic!("one sandbox: {:?}", children(marker))
    };
    let started = Instant::now();
    let spin = run(
        &e,
        "tenant",
        "module.exports = async () => { while (true) {} };",
    );
    let kill = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Safety: sending a signal to a process id has no memory effects here.
        let sent = unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        assert_eq!(sent, 0, "kill -9 {pid}");
    };
    let (out, ()) = tokio::join!(spin, kill);
    assert!(
        matches!(out, Err(TransformError::Engine(_))),
        "the killed invocation fails: {out:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it fails when the process dies, not at the time limit: {:?}",
        started.elapsed()
    );
    assert!(
        echoed(run(&e, "tenant", ECHO).await),
        "the next one succeeds"
    );
    let now = children(marker);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], pid, "in a new process");
}

/// A sandbox holds nothing of the gateway's environment (no `TESSERA_` variable, no database
/// URL: nothing at all), runs under a seccomp filter with no new privileges, and cannot open a
/// file (the master-key file, say) or a socket: the system calls are refused.
#[tokio::test]
async fn a_sandbox_holds_no_secrets_and_cannot_open_files_or_sockets() {
    let marker = "--test-environ";
    let e = engine(marker, Duration::from_secs(2));
    assert!(echoed(run(&e, "tenant", ECHO).await));
    let [pid] = children(marker)[..] else {
        panic!("one sandbox: {:?}", children(marker))
    };
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    assert!(
        environ.is_empty(),
        "empty environment, got {:?}",
        String::from_utf8_lossy(&environ)
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    assert!(
        status.contains("\nSeccomp:\t2\n"),
        "seccomp filter mode: {status}"
    );
    assert!(status.contains("\nNoNewPrivs:\t1\n"), "{status}");

    // The same lock-down, probed: a master-key file the process could read by its
    // permissions, and a socket.
    let dir = tempfile::tempdir().expect("tempdir");
    let key_file = dir.path().join("master.key");
    std::fs::write(&key_file, "secret-master-key").expect("key file");
    let probe = std::process::Command::new(sandbox_program())
        .arg("--probe")
        .arg(&key_file)
        .env("TESSERA_MASTER_KEY_FILE", &key_file)
        .output()
        .expect("probe runs");
    let report: Value = serde_json::from_slice(&probe.stdout).unwrap_or_else(|_| {
        panic!(
            "probe report: {} / {}",
            String::from_utf8_lossy(&probe.stdout),
            String::from_utf8_lossy(&probe.stderr)
        )
    });
    // Writes go only to the sandbox's own descriptors (not the gateway's
    // log on standard error, not another inherited descriptor), and no signal reaches another
    // process (its parent, the gateway, here).
    for what in [
        "open",
        "socket",
        "write_stderr",
        "write_other_fd",
        "kill_parent",
        "tgkill_parent",
    ] {
        let outcome = report[what].as_str().unwrap_or_default();
        assert!(
            outcome.contains("Operation not permitted"),
            "{what} must be refused with EPERM: {report}"
        );
    }
    assert_eq!(
        report["tgkill_self"], "done",
        "signals to itself (abort) still work"
    );
    assert!(
        !String::from_utf8_lossy(&probe.stderr).contains("forged"),
        "nothing reached standard error"
    );
}

/// A sandbox started by a root gateway runs as `nobody` (65534), with no
/// supplementary group and no capability in any set, the bounding set included; started by
/// another user it keeps that user and holds no capability either.
#[tokio::test]
async fn a_sandbox_runs_without_privileges() {
    let marker = "--test-privileges";
    let e = engine(marker, Duration::from_secs(2));
    assert!(echoed(run(&e, "tenant", ECHO).await));
    let [pid] = children(marker)[..] else {
        panic!("one sandbox: {:?}", children(marker))
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let field = |name: &str| -> String {
        status
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap_or_else(|| panic!("{name} in {status}"))
            .trim()
            .to_string()
    };
    // Safety: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    let uid = if me == 0 { 65534 } else { me };
    assert_eq!(
        field("Uid"),
        format!("{uid}\t{uid}\t{uid}\t{uid}"),
        "{status}"
    );
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(field(set), "0000000000000000", "{set}: {status}");
    }
    if me == 0 {
        assert_eq!(field("Gid"), "65534\t65534\t65534\t65534", "{status}");
        assert_eq!(field("Groups"), "", "{status}");
        assert_eq!(field("CapBnd"), "0000000000000000", "{status}");
    }
    assert!(echoed(run(&e, "tenant", ECHO).await), "and it still serves");
}

/// A transform stuck in native code the interrupt handler cannot reach (a long literal
/// regular expression) is stopped by killing its process once the time limit and the grace
/// have passed: it burns no CPU after that, and the next call runs.
#[tokio::test]
async fn a_transform_stuck_in_native_code_is_killed_after_the_grace() {
    let marker = "--test-native";
    let limit = Duration::from_millis(300);
    let e = engine(marker, limit);
    assert!(echoed(run(&e, "tenant", ECHO).await));
    let [pid] = children(marker)[..] else {
        panic!("one sandbox: {:?}", children(marker))
    };
    let started = Instant::now();
    let out = run(
        &e,
        "tenant",
        "module.exports = async () => ({ body: String('a'.repeat(2e6).search('a'.repeat(1e6) + 'b')) });",
    )
    .await;
    assert_eq!(out, Err(TransformError::TimedOut));
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "answered at the limit and grace: {took:?}"
    );
    assert!(
        eventually(|| !children(marker).contains(&pid)).await,
        "the process running it is gone"
    );
    assert!(echoed(run(&e, "tenant", ECHO).await));
}

/// A process serves one tenant: another tenant's job gets another process (the pool stops
/// the idle one when it is full), and back again.
#[tokio::test]
async fn a_sandbox_serves_one_tenant() {
    let marker = "--test-tenants";
    let e = engine(marker, Duration::from_secs(2));
    assert!(echoed(run(&e, "tenant-a", ECHO).await));
    let first = children(marker);
    assert!(echoed(run(&e, "tenant-a", ECHO).await));
    assert_eq!(
        children(marker),
        first,
        "the same tenant reuses its process"
    );
    assert!(echoed(run(&e, "tenant-b", ECHO).await));
    assert!(
        eventually(|| {
            let now = children(marker);
            now.len() == 1 && now != first
        })
        .await,
        "tenant b runs in a new process and a's is stopped: {:?} vs {first:?}",
        children(marker)
    );
    let second = children(marker);
    assert!(echoed(run(&e, "tenant-a", ECHO).await));
    assert!(
        eventually(|| {
            let now = children(marker);
            now.len() == 1 && now != first && now != second
        })
        .await
    );
}

/// a sandbox that dies mid-job, writes a malformed frame into its ring, scribbles
/// over the ring's counters, or never answers fails only the job it was running — an engine
/// error (the gateway's 500 `proxy_error`) or, for the one that never answers, the time limit
/// (500, and the proxy is quarantined) — is replaced, and another tenant's jobs on the same
/// thread are served meanwhile. (The misbehaviours are a test hook of debug builds, picked by
/// the job's scope.)
#[tokio::test]
async fn a_misbehaving_sandbox_costs_only_its_own_job() {
    let marker = "--test-misbehave";
    let e = TransformEngine::new(EngineConfig {
        isolation: Isolation::Process,
        sandbox: Some(SandboxCommand {
            program: sandbox_program(),
            args: vec![marker.into()],
        }),
        processes_per_thread: 2,
        time_limit: Duration::from_millis(500),
        grace: Duration::from_millis(200),
        ..EngineConfig::default()
    })
    .expect("engine");
    let program = e.compile(ECHO).expect("compiles");
    let job = |tenant: &'static str, scope: &'static str| {
        let (e, program) = (e.clone(), program.clone());
        async move {
            e.run::<NoHost, _>(program, scope, (tenant, "proxy"), input(), None)
                .await
        }
    };
    for (how, expected) in [
        ("misbehave:exit", "engine"),
        ("misbehave:garbage", "engine"),
        ("misbehave:scribble", "engine"),
        ("misbehave:silent", "time"),
    ] {
        assert!(echoed(job("evil", "warm").await), "{how}: evil starts fine");
        let bad = job("evil", how);
        let good = async {
            let mut served = 0;
            for _ in 0..5 {
                if echoed(job("good", "proxy").await) {
                    served += 1;
                }
            }
            served
        };
        let (bad, served) = tokio::join!(bad, good);
        match (expected, &bad) {
            ("engine", Err(TransformError::Engine(_)))
            | ("time", Err(TransformError::TimedOut)) => {}
            _ => panic!("{how}: {bad:?}"),
        }
        assert_eq!(served, 5, "{how}: the other tenant was served throughout");
        assert!(
            echoed(job("evil", "after").await),
            "{how}: the misbehaving process was replaced"
        );
    }
}

const SLOW: &str = "module.exports = async () => { const until = Date.now() + 150; while (Date.now() < until) {} return { body: 'in' }; };";
/// Stuck in native code the interrupt handler cannot reach: only killing its process stops it.
const STUCK: &str = "module.exports = async () => ({ body: String('a'.repeat(2e6).search('a'.repeat(1e6) + 'b')) });";

/// One tenant's concurrent jobs queue in an awake process instead of waking one process
/// each: eight at once on a thread allowed four processes use one or two, and all complete.
#[tokio::test]
async fn concurrent_jobs_stream_through_few_processes() {
    let marker = "--test-stream";
    let e = engine_with(marker, 4);
    let runs: Vec<_> = (0..8).map(|_| run(&e, "tenant", SLOW)).collect();
    let outs = futures_util::future::join_all(runs).await;
    assert!(outs.into_iter().all(echoed));
    let used = children(marker).len();
    assert!((1..=2).contains(&used), "{used} processes for 8 jobs");
}

/// A job queued behind a transform that runs past its limit is not lost with that process:
/// it runs in another, and its time limit counts from its own start, not from when it began
/// to wait (it waits 300 ms behind the stuck one, and takes 150 ms of a 300 ms limit itself).
#[tokio::test]
async fn a_job_queued_behind_a_stuck_one_runs_elsewhere_with_its_whole_limit() {
    let marker = "--test-requeue";
    let limit = Duration::from_millis(300);
    let e = engine(marker, limit);
    assert!(echoed(run(&e, "tenant", ECHO).await));
    let [first] = children(marker)[..] else {
        panic!("one sandbox: {:?}", children(marker))
    };
    let stuck = run(&e, "tenant", STUCK);
    let queued = async {
        // Queued behind the stuck job, in the same (only) process.
        tokio::task::yield_now().await;
        run(&e, "tenant", SLOW).await
    };
    let (stuck, queued) = tokio::join!(stuck, queued);
    assert_eq!(stuck, Err(TransformError::TimedOut));
    assert!(echoed(queued), "the queued job ran elsewhere, in time");
    assert!(
        eventually(|| !children(marker).contains(&first)).await,
        "the stuck process is gone"
    );
}

/// A caller that goes away while its job waits in the queue costs nobody else anything: the
/// job ahead of it completes; one that goes away while its job runs takes its process down
/// (the only way to stop it), and the job queued behind it runs elsewhere.
#[tokio::test]
async fn callers_that_go_away_cost_only_their_own_jobs() {
    let marker = "--test-cancel";
    let e = engine(marker, Duration::from_secs(2));
    assert!(echoed(run(&e, "tenant", ECHO).await));
    // Queued, then dropped: the job ahead completes.
    let ahead = run(&e, "tenant", SLOW);
    let dropped = async {
        tokio::task::yield_now().await;
        let _ = tokio::time::timeout(Duration::from_millis(20), run(&e, "tenant", SLOW)).await;
    };
    let (ahead, ()) = tokio::join!(ahead, dropped);
    assert!(echoed(ahead));
    // Running, then dropped: the job behind it runs elsewhere.
    let running = async {
        let _ = tokio::time::timeout(Duration::from_millis(50), run(&e, "tenant", STUCK)).await;
    };
    let behind = async {
        tokio::task::yield_now().await;
        run(&e, "tenant", SLOW).await
    };
    let ((), behind) = tokio::join!(running, behind);
    assert!(echoed(behind));
    assert!(echoed(run(&e, "tenant", ECHO).await));
}

/// Queues are per tenant: one tenant's slow jobs queued in its process never hold up another
/// tenant's job on the same thread, which gets a process of its own (the reserve).
#[tokio::test]
async fn another_tenant_is_never_queued_behind_a_tenants_jobs() {
    let marker = "--test-queues";
    let e = engine_with(marker, 2);
    assert!(echoed(run(&e, "tenant-a", ECHO).await));
    let slow: Vec<_> = (0..8).map(|_| run(&e, "tenant-a", SLOW)).collect();
    let other = async {
        tokio::task::yield_now().await;
        let started = Instant::now();
        let out = run(&e, "tenant-b", ECHO).await;
        (out, started.elapsed())
    };
    let (slow, (other, took)) = tokio::join!(futures_util::future::join_all(slow), other);
    assert!(slow.into_iter().all(echoed));
    assert!(echoed(other));
    // Eight 150 ms jobs take 1.2 s in one process; b's answer does not wait for them.
    assert!(took < Duration::from_millis(900), "b waited {took:?}");
}

/// A job too large for the ring (streamed through it) that waits for room behind a stuck job
/// is not stuck with it: when the stuck job's process is killed at its limit, the large job,
/// which never started, runs in another.
#[tokio::test]
async fn a_large_job_waiting_behind_a_stuck_one_runs_elsewhere() {
    let marker = "--test-large";
    let e = engine(marker, Duration::from_millis(300));
    assert!(echoed(run(&e, "tenant", ECHO).await));
    let stuck = run(&e, "tenant", STUCK);
    let large = async {
        tokio::task::yield_now().await;
        let program = e
            .compile("module.exports = async (req) => ({ body: String(req.args.body.length) });")
            .expect("compiles");
        let mut big = input();
        big.args.body = Body::Text("x".repeat(3 << 20));
        e.run::<NoHost, _>(program, "proxy", ("tenant", "proxy"), big, None)
            .await
    };
    let (stuck, large) = tokio::join!(stuck, large);
    assert_eq!(stuck, Err(TransformError::TimedOut));
    assert!(
        matches!(&large, Ok(Outcome::Ok { body: Some(b), .. }) if b == &(3 << 20).to_string()),
        "{large:?}"
    );
}

/// A transform whose caller went away while it waited in the queue never reaches its host:
/// its process is not left running it unwatched, and `req.svc` is never answered for it
/// (a cancelled request cannot create tokens after the fact).
#[tokio::test]
async fn an_abandoned_job_never_calls_its_host() {
    let marker = "--test-abandon";
    let e = engine(marker, Duration::from_secs(2));
    assert!(echoed(run(&e, "tenant", ECHO).await));
    let called = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let host = {
        let called = called.clone();
        move |_: HostOp, _: Value| {
            called.store(true, std::sync::atomic::Ordering::SeqCst);
            std::future::ready(Ok::<_, HostError>(serde_json::json!({"id": "t"})))
        }
    };
    let tokenizing = e
        .compile("module.exports = async (req) => { await req.svc.tokenize({ type: 'token', data: 'x' }); return { body: 'in' }; };")
        .expect("compiles");
    let ahead = run(&e, "tenant", SLOW);
    let abandoned = async {
        tokio::task::yield_now().await;
        let call = e.run(
            tokenizing,
            "proxy",
            ("tenant", "proxy"),
            input(),
            Some(host),
        );
        let _ = tokio::time::timeout(Duration::from_millis(20), call).await;
    };
    let (ahead, ()) = tokio::join!(ahead, abandoned);
    assert!(echoed(ahead));
    // Whatever runs next, the abandoned job's call is never answered by its host.
    assert!(echoed(run(&e, "tenant", ECHO).await));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!called.load(std::sync::atomic::Ordering::SeqCst));
}
