//! The sandbox process: it locks itself down (see `lockdown.rs`), then runs the jobs its
//! parent queues in its ring, one at a time and in order, with the same runtime code as inline
//! execution. It never sees a key, a database or the network: only programs, invocation inputs,
//! and the answers the parent gives to its `req.svc` calls. Frames of later jobs that arrive
//! while a job waits for its answers are kept for after it.

use std::{
    cell::{Cell, RefCell},
    collections::{HashMap, VecDeque},
    io::Write,
    os::{
        fd::{AsRawFd, FromRawFd, OwnedFd},
        unix::net::UnixStream,
    },
    rc::Rc,
    time::{Duration, Instant},
};

use super::{
    child_channel::ChildChannel,
    lockdown,
    protocol::{FromChild, ToChild},
    shm,
};
use crate::{
    message::{HostError, TransformError},
    natives::{LogSink, Tags},
    program::Program,
    runtime::{Job, JsRuntime, Limits, Step},
};

/// The argument that names the uid and gid (`UID:GID`) a sandbox started as root switches to
/// (default 65534:65534).
pub(crate) const USER_ARG: &str = "--sandbox-user";

/// `USER_ARG`'s value, or the default.
fn user(args: &[String]) -> (u32, u32) {
    args.iter()
        .position(|a| a == USER_ARG)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.split_once(':'))
        .and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)))
        .unwrap_or(lockdown::UNPRIVILEGED)
}

/// `main` of a sandbox process (a Tessera binary started with
/// [`crate::SANDBOX_ARG`]): never returns. With `--probe PATH`, it locks itself down
/// (standard output being its own descriptor) and reports, as one JSON line there, what opening
/// `PATH`, a socket, writing to another descriptor and signalling its parent gave (for tests of
/// the lock-down).
pub fn sandbox_main() -> ! {
    let args: Vec<String> = std::env::args().collect();
    let user = user(&args);
    if let Some(i) = args.iter().position(|a| a == "--probe") {
        let path = args.get(i + 1).cloned().unwrap_or_default();
        std::process::exit(probe(&path, user));
    }
    // Safety: the parent gives this process its end of a fresh socket pair as standard input
    // (the doorbell) and the memfd of the shared rings as standard output; nothing else in
    // this process uses descriptors 0 and 1.
    let bell = unsafe { UnixStream::from_raw_fd(0) };
    let memfd = unsafe { OwnedFd::from_raw_fd(1) };
    let Ok(region) = shm::Region::map(&memfd) else {
        std::process::exit(71)
    };
    // The mapping stays; the descriptor is not needed any more.
    drop(memfd);
    let own = [bell.as_raw_fd()];
    if let Err(e) = lockdown::enter(&own, user) {
        let _ = writeln!(
            std::io::stderr(),
            "transform sandbox: cannot lock down: {e}"
        );
        std::process::exit(70);
    }
    let misbehave = cfg!(debug_assertions) && args.iter().any(|a| a == MISBEHAVE_ARG);
    serve(
        Rc::new(RefCell::new(ChildChannel::new(region, bell))),
        misbehave,
    );
    std::process::exit(0)
}

fn probe(path: &str, user: (u32, u32)) -> i32 {
    // Made before the lock-down, like a descriptor the process might have inherited.
    let pipe = rustix::pipe::pipe().ok();
    if let Err(e) = lockdown::enter(&[1], user) {
        println!("{{\"error\":{:?}}}", e.to_string());
        return 70;
    }
    let open = match std::fs::File::open(path) {
        Ok(_) => "opened".to_string(),
        Err(e) => e.to_string(),
    };
    let socket = match std::net::TcpListener::bind("127.0.0.1:0") {
        Ok(_) => "bound".to_string(),
        Err(e) => e.to_string(),
    };
    let env: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
    let errno = |r: isize| {
        if r < 0 {
            std::io::Error::last_os_error().to_string()
        } else {
            "done".to_string()
        }
    };
    // Safety (all four): plain system calls on integers and a static buffer.
    let stderr = errno(unsafe { libc::write(2, b"forged log line\n".as_ptr().cast(), 16) });
    let other_fd = match &pipe {
        Some((_, w)) => errno(unsafe { libc::write(w.as_raw_fd(), b"x".as_ptr().cast(), 1) }),
        None => "no pipe".to_string(),
    };
    let parent = unsafe { libc::getppid() };
    let kill = errno(unsafe { libc::kill(parent, 0) } as isize);
    let tgkill = errno(unsafe { libc::syscall(libc::SYS_tgkill, parent, parent, 0) } as isize);
    let me = std::process::id() as i32;
    let own_tgkill = errno(unsafe { libc::syscall(libc::SYS_tgkill, me, me, 0) } as isize);
    println!(
        "{{\"open\":{open:?},\"socket\":{socket:?},\"env\":{env:?},\"write_stderr\":{stderr:?},\"write_other_fd\":{other_fd:?},\"kill_parent\":{kill:?},\"tgkill_parent\":{tgkill:?},\"tgkill_self\":{own_tgkill:?}}}"
    );
    0
}

/// Test hook (debug builds only): with this argument, a job whose scope names a misbehaviour
/// acts it out — `misbehave:garbage` (a malformed frame), `misbehave:scribble` (a corrupt
/// ring), `misbehave:silent` (never answers), `misbehave:exit` (dies mid-job).
pub(crate) const MISBEHAVE_ARG: &str = "--test-misbehave";

/// Acts out the misbehaviour `scope` names (see [`MISBEHAVE_ARG`]); `false` for other scopes.
fn misbehave(scope: &str, channel: &RefCell<ChildChannel>) -> bool {
    match scope {
        "misbehave:garbage" => {
            let _ = channel
                .borrow_mut()
                .write_all(&[0, 0, 0, 6, 0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa]);
            true
        }
        #[cfg(debug_assertions)]
        "misbehave:scribble" => {
            channel.borrow_mut().scribble();
            true
        }
        "misbehave:silent" => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        "misbehave:exit" => std::process::exit(9),
        _ => false,
    }
}

/// The answers to a job's `req.svc` calls, by call id.
type Answers = Vec<(u64, Result<String, HostError>)>;

/// The frames the sandbox reads: from its ring, and those of later jobs that arrived while a
/// job waited for its answers, kept for after it.
struct Frames {
    channel: Rc<RefCell<ChildChannel>>,
    later: VecDeque<ToChild>,
}

impl Frames {
    fn next(&mut self) -> Option<ToChild> {
        match self.later.pop_front() {
            Some(frame) => Some(frame),
            None => self.channel.borrow_mut().read_frame(),
        }
    }

    /// The answers to job `id`'s calls, and whether its context must be discarded; `None`
    /// when the parent is gone or broke the protocol.
    fn answers(&mut self, id: u64) -> Option<(Answers, bool)> {
        loop {
            let frame = self.channel.borrow_mut().read_frame()?;
            match frame {
                ToChild::Answers {
                    job,
                    answers,
                    tainted,
                } if job == id => return Some((answers, tainted)),
                frame @ (ToChild::Load { .. } | ToChild::Run { .. }) => self.later.push_back(frame),
                _ => return None,
            }
        }
    }
}

/// The limits and the prelude, from the first frame (`None`: not an `Init`).
fn init(frames: &mut Frames) -> Option<(Limits, Program)> {
    let Some(ToChild::Init {
        memory,
        retained,
        stack,
        max_contexts,
        client_alias,
        prelude_hash,
        prelude,
    }) = frames.next()
    else {
        return None;
    };
    let limits = Limits {
        memory,
        retained,
        stack,
        max_contexts,
        client_alias,
    };
    Some((limits, Program::from_parts(prelude_hash, prelude)))
}

fn serve(channel: Rc<RefCell<ChildChannel>>, misbehaving: bool) {
    let mut frames = Frames {
        channel: channel.clone(),
        later: VecDeque::new(),
    };
    let Some((limits, prelude)) = init(&mut frames) else {
        return;
    };
    // Log lines name the job that wrote them: the parent tags them with its proxy.
    let current = Rc::new(Cell::new(0u64));
    let (log_channel, log_job) = (channel.clone(), current.clone());
    let log: LogSink = Rc::new(move |_: &Tags, line: &str| {
        log_channel.borrow_mut().write_frame(&FromChild::Log {
            job: log_job.get(),
            line: line.to_string(),
        });
    });
    let Ok(mut rt) = JsRuntime::new(limits.clone(), log.clone()) else {
        return;
    };
    let mut programs: HashMap<[u8; 32], Program> = HashMap::new();
    while let Some(frame) = frames.next() {
        match frame {
            ToChild::Load { hash, bytecode } => {
                programs.insert(hash, Program::from_parts(hash, bytecode));
            }
            ToChild::Run {
                job,
                program,
                scope,
                tags,
                input,
                svc,
                time_limit_ms,
            } => {
                if misbehaving && misbehave(&scope, &channel) {
                    continue;
                }
                current.set(job);
                let result = match programs.get(&program) {
                    None => Some(Err(TransformError::Engine("program not loaded".into()))),
                    Some(program) => {
                        let job_input = Job {
                            program,
                            prelude: &prelude,
                            scope: &scope,
                            tags,
                            input: *input,
                            svc,
                            deadline: Instant::now() + Duration::from_millis(time_limit_ms),
                        };
                        run(&rt, job_input, job, &mut frames)
                    }
                };
                let Some(result) = result else { return };
                if !channel
                    .borrow_mut()
                    .write_frame(&FromChild::Done { job, result })
                {
                    return;
                }
                if rt.is_broken() {
                    match JsRuntime::new(limits.clone(), log.clone()) {
                        Ok(fresh) => rt = fresh,
                        Err(_) => return,
                    }
                }
            }
            ToChild::Init { .. } | ToChild::Answers { .. } => return,
        }
    }
}

/// Drives one job; `None` when the parent is gone.
fn run(
    rt: &Rc<JsRuntime>,
    job: Job<'_>,
    id: u64,
    frames: &mut Frames,
) -> Option<Result<crate::message::Outcome, TransformError>> {
    let (mut invocation, mut step) = match rt.start(job) {
        Ok(started) => started,
        Err(e) => return Some(Err(e)),
    };
    loop {
        match step {
            Step::Done(result) => return Some(result),
            Step::Waiting(calls) if calls.is_empty() => {
                return Some(Err(TransformError::Engine(
                    "an invocation waits on nothing".into(),
                )))
            }
            Step::Waiting(calls) => {
                if !frames
                    .channel
                    .borrow_mut()
                    .write_frame(&FromChild::Calls { job: id, calls })
                {
                    return None;
                }
                let (answers, tainted) = frames.answers(id)?;
                if tainted {
                    invocation.taint();
                }
                step = invocation.resume(answers);
            }
        }
    }
}
