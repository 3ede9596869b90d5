//! Text shown in error messages.

/// Keeps error messages short when the offending text is long: at most 40 characters, then
/// `…`. Shared with the scanning of expressions in requests (`tessera-detokenize`).
pub fn truncate(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(MAX).collect::<String>())
    }
}
