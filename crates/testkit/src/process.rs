//! The workspace's binaries as real processes: a free port, a server started on it and waited
//! for, stopped by a signal or killed when the test ends, and a JSON call over real HTTP.
//!
//! Both binaries' tests (`bins/api`, `bins/proxy-gateway`) start servers the same way, so the
//! way lives here once: start with `--listen` on a free port, wait for `/healthz`, keep stdout
//! for what the process prints (the bootstrap line), and never leave a process behind.

use std::{
    io::{BufRead, BufReader, Read},
    net::TcpListener,
    process::{Child, ChildStdout, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

/// How long a server may take to answer `/healthz` after it is spawned.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a server may take to exit after a signal.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// A local port that was free a moment ago (the OS picks it; the listener is closed at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A server process started by a test: killed and reaped when dropped, so a failing test
/// leaves nothing running.
#[derive(Debug)]
pub struct Server {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Spawns `command` with `--listen 127.0.0.1:<free port>` appended, stdout piped and stderr
    /// discarded, and waits until `/healthz` answers; fails if the process exits first or does
    /// not answer within 30 s.
    pub fn start(command: Command) -> Self {
        Self::start_with_stderr(command, Stdio::null())
    }

    /// [`Server::start`], with the process's stderr (its log) sent to `stderr`.
    pub fn start_with_stderr(mut command: Command, stderr: impl Into<Stdio>) -> Self {
        let port = free_port();
        let mut child = command
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn server");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + START_TIMEOUT;
        while crate::http_client::send("GET", &format!("{base}/healthz"), &[], None).is_err() {
            assert!(
                Instant::now() < deadline,
                "{:?} did not start",
                command.get_program()
            );
            assert!(
                child.try_wait().expect("wait").is_none(),
                "{:?} exited early",
                command.get_program()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            base,
            stdout,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line the process printed on stdout (blocks until it is printed).
    pub fn first_line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read stdout");
        line
    }

    /// Everything the process still prints on stdout until it closes it (after it stopped).
    pub fn rest_of_stdout(&mut self) -> String {
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).expect("stdout");
        rest
    }

    /// SIGTERM, as an orchestrator sends it; waits for the exit (at most 20 s).
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal("-TERM")
    }

    /// SIGINT, as Ctrl-C sends it; waits for the exit (at most 20 s).
    pub fn interrupt(&mut self) -> ExitStatus {
        self.signal("-INT")
    }

    fn signal(&mut self, signal: &str) -> ExitStatus {
        let pid = self.pid().to_string();
        Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill");
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not stop on {signal}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `method url` with `headers` and an optional JSON body, over real HTTP: the status and the
/// body as JSON (`null` when it is not JSON). Fails only when there is no HTTP answer at all.
pub fn call(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let mut headers = headers.to_vec();
    let body = body.map(|b| {
        headers.push(("content-type", "application/json"));
        b.to_string().into_bytes()
    });
    let answer = crate::http_client::send(method, url, &headers, body)
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    (answer.status, answer.json())
}
