//! Property-based fuzzing of container parsing: never panics; what parses is normalised,
//! re-parses to itself, and keeps its containment relations.
//! `FUZZ_SECONDS=600 cargo test -p tessera-domain --test it fuzz_container` runs ten minutes.

use proptest::prelude::*;
use tessera_domain::Container;
use tessera_testkit::fuzz::fuzz;

#[test]
fn container_parsing() {
    let input = prop_oneof![
        ".{0,40}",
        "(/[a-zA-Z0-9_\\-.é ]{0,6}){0,5}/?",
        "/[A-Za-z0-9_-]{1,8}(/[A-Za-z0-9_-]{1,8}){0,3}/"
    ];
    fuzz(
        "container parsing",
        (input, "/[a-z]{1,4}/"),
        |(raw, prefix)| {
            if let Ok(c) = Container::parse(&raw) {
                prop_assert_eq!(c.as_str(), raw.to_ascii_lowercase());
                prop_assert_eq!(Container::parse(c.as_str()).expect("reparses"), c.clone());
                prop_assert!(c.as_str().starts_with('/') && c.as_str().ends_with('/'));
                prop_assert!(Container::root().contains(&c));
                let p = Container::parse(&prefix).expect("prefix");
                prop_assert_eq!(p.contains(&c), c.as_str().starts_with(p.as_str()));
            }
            Ok(())
        },
    );
}
