//! A transform sandbox process on its own (the Tessera binaries run the same code when started
//! with `__transform-sandbox`): for tests, and for operators who prefer a separate executable.

fn main() {
    tessera_transform_runtime::sandbox_main()
}
