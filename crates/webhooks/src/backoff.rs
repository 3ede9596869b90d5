//! Retries (docs/webhooks.md, "Retries and disabling"): after the n-th failure in a row the
//! next attempt waits 2^(n-1) seconds, capped at 60 s in the first hour of failure and at
//! 10 minutes after, with jitter (a delay drawn between half and all of it); a webhook failing
//! without a break for [`Policy::disable_after`] is disabled.

use std::time::Duration;

/// The longest wait in the first hour of failure.
pub const EARLY_CAP: Duration = Duration::from_secs(60);
/// The longest wait after the first hour.
pub const LATE_CAP: Duration = Duration::from_secs(600);
/// How long the early cap applies.
pub const EARLY_SPAN: Duration = Duration::from_secs(3600);

/// When to retry and when to give up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Continuous failure after which the webhook is disabled.
    pub disable_after: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            disable_after: Duration::from_secs(12 * 3600),
        }
    }
}

impl Policy {
    /// The wait before the next attempt after `attempts` failures in a row, failing for
    /// `failing_for`, without jitter.
    pub fn delay(&self, attempts: u32, failing_for: Duration) -> Duration {
        let cap = if failing_for < EARLY_SPAN {
            EARLY_CAP
        } else {
            LATE_CAP
        };
        let exp = attempts.saturating_sub(1).min(20);
        Duration::from_secs(1u64 << exp).min(cap)
    }

    /// [`Policy::delay`] with jitter: uniformly between half of it and all of it.
    pub fn jittered(&self, attempts: u32, failing_for: Duration) -> Duration {
        let full = self.delay(attempts, failing_for).as_millis() as u64;
        let half = full / 2;
        let spread = full - half + 1;
        let draw = (uuid::Uuid::new_v4().as_u128() % u128::from(spread)) as u64;
        Duration::from_millis(half + draw)
    }

    /// Whether a webhook failing for `failing_for` is to be disabled.
    pub fn gives_up(&self, failing_for: Duration) -> bool {
        failing_for >= self.disable_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_to_a_minute_early_then_to_ten_minutes() {
        let p = Policy::default();
        let early = Duration::from_secs(10);
        let waits: Vec<u64> = (1..=8).map(|n| p.delay(n, early).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(p.delay(30, Duration::from_secs(2 * 3600)), LATE_CAP);
        for n in 1..12 {
            let j = p.jittered(n, early);
            let d = p.delay(n, early);
            assert!(j <= d && j >= d / 2, "{j:?} outside [{:?}, {d:?}]", d / 2);
        }
    }

    #[test]
    fn gives_up_only_after_hours_of_continuous_failure() {
        let p = Policy::default();
        assert!(!p.gives_up(Duration::from_secs(3600)));
        assert!(p.gives_up(Duration::from_secs(12 * 3600)));
    }
}
