//! Locking a sandbox process down (Linux): it gives up root and every capability, dies with its parent, may not fork, dump core or grow past a bounded address space,
//! and a seccomp filter (no new privileges) refuses every system call but the few its loop
//! needs — reading, and writing only its own descriptors (never the gateway's log on standard
//! error), memory management, futexes, clocks, random bytes, signals to itself only, and exit.
//! Opening files, creating sockets, connecting, executing programs, signalling the gateway or
//! any other process: `EPERM`.

/// Address space a sandbox process may map: far above one runtime's heap limit, far below what
/// would hurt the machine.
#[cfg(target_os = "linux")]
const ADDRESS_SPACE: u64 = 4 * 1024 * 1024 * 1024;

/// The user and group a sandbox started as root switches to (`nobody` / `nogroup`).
pub(crate) const UNPRIVILEGED: (u32, u32) = (65534, 65534);

/// Why the lock-down failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SandboxError(String);

fn fail(what: &str, e: &dyn std::fmt::Display) -> SandboxError {
    SandboxError(format!("{what}: {e}"))
}

/// Locks this process down. `own` are the only descriptors it may write (its channel to the
/// gateway); `user` the uid and gid it switches to when started as root. Must run while the
/// process has a single thread (credentials are per thread at the system-call level).
#[cfg(target_os = "linux")]
pub(crate) fn enter(own: &[i32], user: (u32, u32)) -> Result<(), SandboxError> {
    use rustix::process::{setrlimit, Resource, Rlimit};

    drop_privileges(user)?;
    // After the credentials changed: a change of credentials clears the parent-death signal.
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| fail("parent death signal", &e))?;
    for (resource, limit) in [
        (Resource::Nproc, 0),
        (Resource::Core, 0),
        (Resource::As, ADDRESS_SPACE),
    ] {
        setrlimit(
            resource,
            Rlimit {
                current: Some(limit),
                maximum: Some(limit),
            },
        )
        .map_err(|e| fail("rlimit", &e))?;
    }
    seccomp(own)
}

/// Started as root: drops every capability from the bounding set, the supplementary groups,
/// and switches to `user` (which clears the permitted, effective and ambient sets). In any case
/// then clears what capabilities remain (inheritable, ambient: a non-root gateway may hold some)
/// and checks that none is left.
#[cfg(target_os = "linux")]
fn drop_privileges((uid, gid): (u32, u32)) -> Result<(), SandboxError> {
    use rustix::{
        process::{getgid, getuid, Gid, Uid},
        thread::{self, CapabilitySet, CapabilitySets},
    };

    let root = getuid().is_root() || rustix::process::geteuid().is_root();
    if root {
        if uid == 0 || gid == 0 {
            return Err(SandboxError("a sandbox never runs as root".into()));
        }
        for cap in CapabilitySet::all().iter() {
            // Capabilities this kernel does not know are refused with EINVAL: nothing to drop.
            match thread::remove_capability_from_bounding_set(cap) {
                Ok(()) | Err(rustix::io::Errno::INVAL) => {}
                Err(e) => return Err(fail("capability bounding set", &e)),
            }
        }
        thread::set_thread_groups(&[]).map_err(|e| fail("groups", &e))?;
        // Safety of the ids: plain numbers; `from_raw` only wraps them.
        let (gid, uid) = (Gid::from_raw(gid), Uid::from_raw(uid));
        thread::set_thread_res_gid(gid, gid, gid).map_err(|e| fail("setresgid", &e))?;
        thread::set_thread_res_uid(uid, uid, uid).map_err(|e| fail("setresuid", &e))?;
        if getuid().is_root() || getgid().is_root() || rustix::process::geteuid().is_root() {
            return Err(SandboxError("still root after switching user".into()));
        }
    }
    match thread::clear_ambient_capability_set() {
        Ok(()) | Err(rustix::io::Errno::INVAL) => {}
        Err(e) => return Err(fail("ambient capabilities", &e)),
    }
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    thread::set_capabilities(None, none).map_err(|e| fail("capabilities", &e))?;
    let left = thread::capabilities(None).map_err(|e| fail("capabilities", &e))?;
    if !(left.effective.is_empty() && left.permitted.is_empty() && left.inheritable.is_empty()) {
        return Err(SandboxError("capabilities remain".into()));
    }
    Ok(())
}

/// The seccomp filter: [`ALLOWED`] as they are, writes on `own` descriptors only, signals to
/// this process only.
#[cfg(target_os = "linux")]
fn seccomp(own: &[i32]) -> Result<(), SandboxError> {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    let arch = match std::env::consts::ARCH {
        "x86_64" => TargetArch::x86_64,
        "aarch64" => TargetArch::aarch64,
        other => return Err(SandboxError(format!("no seccomp filter for {other}"))),
    };
    // One rule per allowed value of argument `arg`: rules of a system call are alternatives.
    let only = |arg: u8, values: &[u64]| -> Result<Vec<SeccompRule>, SandboxError> {
        values
            .iter()
            .map(|v| {
                let condition =
                    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *v)
                        .map_err(|e| fail("seccomp condition", &e))?;
                SeccompRule::new(vec![condition]).map_err(|e| fail("seccomp rule", &e))
            })
            .collect()
    };
    let own: Vec<u64> = own
        .iter()
        .filter_map(|fd| u64::try_from(*fd).ok())
        .collect();
    let me = u64::from(
        rustix::process::getpid()
            .as_raw_nonzero()
            .get()
            .unsigned_abs(),
    );
    let mut allowed: BTreeMap<i64, Vec<SeccompRule>> =
        ALLOWED.iter().map(|nr| (*nr, Vec::new())).collect();
    for nr in WRITES {
        allowed.insert(*nr, only(0, &own)?);
    }
    // tgkill(tgid, tid, sig): this process's own threads (abort raises SIGABRT on itself).
    allowed.insert(libc::SYS_tgkill, only(0, &[me])?);
    let filter = SeccompFilter::new(
        allowed,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )
    .map_err(|e| fail("seccomp filter", &e))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| fail("seccomp program", &e))?;
    seccompiler::apply_filter(&program).map_err(|e| fail("seccomp", &e))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn enter(_own: &[i32], _user: (u32, u32)) -> Result<(), SandboxError> {
    Err(SandboxError(
        "process isolation of transforms needs Linux (seccomp)".into(),
    ))
}

/// System calls that write to a descriptor: allowed on the sandbox's own descriptors only.
#[cfg(target_os = "linux")]
const WRITES: &[i64] = &[
    libc::SYS_write,
    libc::SYS_writev,
    libc::SYS_sendto,
    libc::SYS_sendmsg,
];

/// The system calls a sandbox process may make, whatever their arguments.
#[cfg(target_os = "linux")]
const ALLOWED: &[i64] = &[
    libc::SYS_read,
    libc::SYS_readv,
    libc::SYS_recvfrom,
    libc::SYS_recvmsg,
    libc::SYS_close,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_brk,
    libc::SYS_futex,
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_gettimeofday,
    libc::SYS_nanosleep,
    libc::SYS_clock_nanosleep,
    libc::SYS_sched_yield,
    libc::SYS_getrandom,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigaction,
    libc::SYS_sigaltstack,
    libc::SYS_exit,
    libc::SYS_exit_group,
];
