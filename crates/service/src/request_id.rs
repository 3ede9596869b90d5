//! `X-Request-Id` (docs/api.md, "Conventions"): echoed when the caller sent a usable one, else generated.
//! Basis Theory's SDKs send their correlation id as `<prefix>-TRACE-ID` instead: without a usable
//! `X-Request-Id`, a usable trace id is the request id (docs/migrating.md).

/// The header name.
pub const HEADER: &str = "x-request-id";

/// The caller's id if it is 1–200 visible ASCII characters; otherwise a fresh one.
pub fn choose(presented: Option<&str>) -> String {
    presented
        .filter(|v| usable(v))
        .map_or_else(new_id, str::to_string)
}

/// The request id of a request carrying `request_id` (`X-Request-Id`) and `trace_id`
/// (`<PREFIX>-TRACE-ID`, [`crate::header_names::HeaderNames::trace_id`]): the first of them that is usable (see [`choose`]), else a fresh one.
pub fn choose_either(request_id: Option<&str>, trace_id: Option<&str>) -> String {
    match request_id.filter(|v| usable(v)) {
        Some(id) => id.to_string(),
        None => choose(trace_id),
    }
}

/// 1–200 visible ASCII characters.
fn usable(id: &str) -> bool {
    !id.is_empty() && id.len() <= 200 && id.bytes().all(|b| b.is_ascii_graphic())
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

    #[test]
    fn a_trace_id_stands_in_for_a_missing_or_unusable_request_id() {
        assert_eq!(choose_either(Some("req-1"), Some("trace-1")), "req-1");
        assert_eq!(choose_either(None, Some("trace-1")), "trace-1");
        assert_eq!(choose_either(Some("has space"), Some("trace-1")), "trace-1");
        assert_eq!(choose_either(None, Some("bad trace")).len(), 36);
        assert_eq!(choose_either(None, None).len(), 36);
    }
}
