//! Runs `examples/embed.rs` as a test so the embedding story cannot rot.

// The example is written for an embedding program (its `pub fn run`), not for this test binary.
#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/embed.rs"]
mod embed;

#[tokio::test]
async fn the_embed_example_stores_and_reads_back_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = embed::run(&dir.path().join("vault.db"))
        .await
        .expect("example runs");
    assert_eq!(
        data,
        serde_json::json!({"number": "4242424242424242", "cvc": "123"})
    );
}
