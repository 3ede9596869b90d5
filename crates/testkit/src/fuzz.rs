//! Time-budgeted fuzzing with proptest strategies: each target runs for `FUZZ_SECONDS`
//! (2 by default, so it fits in the test suite; `just fuzz` gives each ten minutes), a freshly
//! seeded runner per round so a long run keeps exploring.

use std::time::{Duration, Instant};

use proptest::{
    strategy::Strategy,
    test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner},
};

/// The time each fuzz target may run: `FUZZ_SECONDS`, default 2.
pub fn budget() -> Duration {
    Duration::from_secs(
        std::env::var("FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2),
    )
}

/// Runs `test` on `strategy` until the budget is spent, 256 cases per round; panics with the
/// minimised failing case. Prints how many cases ran.
pub fn fuzz<S: Strategy>(
    name: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    fuzz_in_rounds_of(256, name, strategy, test);
}

/// [`fuzz`] with `cases` per round: the budget is checked between rounds, so slow cases (a
/// request each) want small rounds to stay near it.
pub fn fuzz_in_rounds_of<S: Strategy>(
    cases_per_round: u32,
    name: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let deadline = Instant::now() + budget();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let (mut round, mut cases) = (0u64, 0u64);
    while Instant::now() < deadline {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&round.to_le_bytes());
        seed[8..24].copy_from_slice(&started.to_le_bytes());
        round += 1;
        let config = Config {
            cases: cases_per_round,
            failure_persistence: None,
            ..Config::default()
        };
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
            .run(&strategy, &test)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        cases += u64::from(cases_per_round);
    }
    eprintln!("{name}: {cases} cases");
}
