//! Property-based fuzzing of container parsing: never panics; what parses is normalised,
//! re-parses to itself, and keeps its containment relations.
//! `FUZZ_SECONDS=600 cargo test -p tessera-domain --test fuzz_container` runs ten minutes.

use std::time::{Duration, Instant};

use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestRng, TestRunner},
};
use tessera_domain::Container;

fn budget() -> Duration {
    Duration::from_secs(
        std::env::var("FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2),
    )
}

#[test]
fn container_parsing() {
    let deadline = Instant::now() + budget();
    let input = prop_oneof![
        ".{0,40}",
        "(/[a-zA-Z0-9_\\-.é ]{0,6}){0,5}/?",
        "/[A-Za-z0-9_-]{1,8}(/[A-Za-z0-9_-]{1,8}){0,3}/"
    ];
    let mut cases = 0u64;
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut round = 0u64;
    while Instant::now() < deadline {
        // A fresh runner and seed each round: a runner stops after its configured successes.
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&round.to_le_bytes());
        seed[8..24].copy_from_slice(&started.to_le_bytes());
        round += 1;
        let config = Config {
            cases: 512,
            failure_persistence: None,
            ..Config::default()
        };
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
            .run(&(input.clone(), "/[a-z]{1,4}/"), |(raw, prefix)| {
                if let Ok(c) = Container::parse(&raw) {
                    prop_assert_eq!(c.as_str(), raw.to_ascii_lowercase());
                    prop_assert_eq!(Container::parse(c.as_str()).expect("reparses"), c.clone());
                    prop_assert!(c.as_str().starts_with('/') && c.as_str().ends_with('/'));
                    prop_assert!(Container::root().contains(&c));
                    let p = Container::parse(&prefix).expect("prefix");
                    prop_assert_eq!(p.contains(&c), c.as_str().starts_with(p.as_str()));
                }
                Ok(())
            })
            .expect("container parsing holds");
        cases += 512;
    }
    eprintln!("fuzzed {cases} container strings");
}
