//! Locking a sandbox process down (Linux): it dies with its parent, may not fork, dump core or
//! grow past a bounded address space, and a seccomp filter (no new privileges) refuses every
//! system call but the few its loop needs — reading and writing the socket it already has,
//! memory management, futexes, clocks, random bytes, signals and exit. Opening files, creating
//! sockets, connecting, executing programs: `EPERM`.

/// Address space a sandbox process may map: far above one runtime's heap limit, far below what
/// would hurt the machine.
#[cfg(target_os = "linux")]
const ADDRESS_SPACE: u64 = 4 * 1024 * 1024 * 1024;

/// Why the lock-down failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SandboxError(String);

#[cfg(target_os = "linux")]
pub(crate) fn enter() -> Result<(), SandboxError> {
    use std::collections::BTreeMap;

    use rustix::process::{setrlimit, Resource, Rlimit};
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule, TargetArch};

    let fail = |what: &str, e: &dyn std::fmt::Display| SandboxError(format!("{what}: {e}"));
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
    let arch = match std::env::consts::ARCH {
        "x86_64" => TargetArch::x86_64,
        "aarch64" => TargetArch::aarch64,
        other => return Err(SandboxError(format!("no seccomp filter for {other}"))),
    };
    let allowed: BTreeMap<i64, Vec<SeccompRule>> =
        ALLOWED.iter().map(|nr| (*nr, Vec::new())).collect();
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
pub(crate) fn enter() -> Result<(), SandboxError> {
    Err(SandboxError(
        "process isolation of transforms needs Linux (seccomp)".into(),
    ))
}

/// The system calls a sandbox process may make.
#[cfg(target_os = "linux")]
const ALLOWED: &[i64] = &[
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_recvfrom,
    libc::SYS_sendto,
    libc::SYS_recvmsg,
    libc::SYS_sendmsg,
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
    libc::SYS_tgkill,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigaction,
    libc::SYS_sigaltstack,
    libc::SYS_exit,
    libc::SYS_exit_group,
];
