//! Nothing to link: the benchmarks are under `benches/` (`cargo bench -p
//! tessera-storage-benches --bench <name>`; see docs/performance.md). They live in a crate of
//! their own so that `tessera-storage` never depends on `tessera-testkit`, which is built on it.
