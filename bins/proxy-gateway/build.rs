//! Records the commit built from (see `../build_commit.rs`).

include!("../build_commit.rs");
