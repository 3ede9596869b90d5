//! Whether the machine has a core to spare, for the sandboxes' decision to spin.
//!
//! A sandbox that spins while it waits for its next job saves the wake-up when the job comes
//! soon, but on a machine with no idle core it only takes time from the process it waits for
//! (the serving thread, the database, another sandbox). So it spins only while this says a
//! core is idle: a thread of the gateway reads the kernel's idle time (`/proc/stat`) every
//! [`PERIOD`] and calls a core idle when at least one core's worth went unused in the last
//! period. Where that cannot be read, nothing spins.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Once,
    },
    time::Duration,
};

/// How often the idle time is read.
const PERIOD: Duration = Duration::from_millis(100);

static IDLE_CORE: AtomicBool = AtomicBool::new(false);
static START: Once = Once::new();

/// Whether a core was idle in the last period (starts the probe on first use).
pub(super) fn core_to_spare() -> bool {
    START.call_once(|| {
        let started = std::thread::Builder::new()
            .name("idle-probe".into())
            .spawn(probe);
        if let Err(e) = started {
            tracing::warn!(error = %e, "cannot start the idle-core probe: sandboxes will not spin");
        }
    });
    IDLE_CORE.load(Ordering::Relaxed)
}

fn probe() {
    let mut last = read();
    loop {
        std::thread::sleep(PERIOD);
        let now = read();
        let spare = match (last, now) {
            (Some((idle0, total0)), Some((idle1, total1))) if total1 > total0 => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
                let idle = (idle1.saturating_sub(idle0)) as f64 / (total1 - total0) as f64;
                idle * cores >= 1.0
            }
            _ => false,
        };
        IDLE_CORE.store(spare, Ordering::Relaxed);
        last = now;
    }
}

/// The machine's idle and total time so far (`/proc/stat`, in ticks), where it can be read.
fn read() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse(&stat)
}

fn parse(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal …: idle and iowait are unused time.
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some((idle, fields.iter().take(8).sum()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_time_is_read_from_the_cpu_line() {
        let stat = "cpu  100 5 50 800 20 1 2 3 0 0\ncpu0 50 2 25 400 10 0 1 1 0 0\n";
        assert_eq!(parse(stat), Some((820, 981)));
        assert_eq!(parse("intr 1 2 3\n"), None);
    }
}
