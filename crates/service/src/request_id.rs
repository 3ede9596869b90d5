//! `X-Request-Id` (SUPPLEMENT §1): echoed when the caller sent a usable one, else generated.

/// The header name.
pub const HEADER: &str = "x-request-id";

/// The caller's id if it is 1–200 visible ASCII characters; otherwise a fresh one.
pub fn choose(presented: Option<&str>) -> String {
    presented
        .filter(|v| !v.is_empty() && v.len() <= 200 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(new_id, str::to_string)
}

/// A fresh random UUID (v4) from the thread-local CSPRNG: unique and unguessable without a
/// system call per request.
pub fn new_id() -> String {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_usable_ids_and_replaces_others() {
        assert_eq!(choose(Some("req-1")), "req-1");
        for bad in [None, Some(""), Some("has space"), Some("é")] {
            let id = choose(bad);
            assert_eq!(id.len(), 36, "{bad:?}");
        }
        assert_ne!(new_id(), new_id());
        assert_eq!(choose(Some(&"x".repeat(201))).len(), 36);
    }
}
