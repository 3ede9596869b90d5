//! The prefixed names of a deployment (`--header-prefix`, docs/api.md "Header prefix"):
//! `<PREFIX>-API-KEY`, `<PREFIX>-PROXY-KEY`, `<PREFIX>-PROXY-URL`, `<PREFIX>-IDEMPOTENCY-KEY`,
//! `<PREFIX>-TRACE-ID`, `<PREFIX>-PROXY-DESTINATION-STATUS`, the query parameter
//! `<prefix>-proxy-key` and the transform client `req.<prefix>`.
//!
//! Clients written for a hosted vault send that vault's prefix (Basis Theory's SDKs send
//! `BT-*`); one flag lets them talk to Tessera unchanged. A deployment reads exactly one
//! spelling: with `--header-prefix BT`, `SVC-API-KEY` is not a key. Two names for one credential
//! would leave open which of two different values authorizes a request. `SVC-*` headers are
//! still never forwarded to a destination, whatever the prefix, so a client that was not
//! switched cannot leak its key through a proxy.

use http::HeaderName;

/// The default prefix.
pub const DEFAULT_PREFIX: &str = "SVC";

/// Prefixes refused because `<PREFIX>-*` would capture a family of standard headers (every
/// header with the prefix is kept from destinations) or a field of the transform's `req`.
const RESERVED: [&str; 34] = [
    "X",
    "CONTENT",
    "PROXY",
    "SEC",
    "ACCEPT",
    "ACCESS",
    "IF",
    "CACHE",
    "TRANSFER",
    "KEEP",
    "MAX",
    "SET",
    "USER",
    "UPGRADE",
    "LAST",
    "RETRY",
    "WWW",
    "STRICT",
    "CROSS",
    "ORIGIN",
    "REFERRER",
    "PERMISSIONS",
    "ALT",
    "EARLY",
    "CLEAR",
    "SERVICE",
    "IDEMPOTENCY",
    "REPR",
    "WANT",
    "CF",
    "ARGS",
    "CONFIGURATION",
    "CONSTRUCTOR",
    "PROTOTYPE",
];

/// Why a prefix is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// Not 2–16 ASCII letters and digits.
    #[error("the header prefix must be 2 to 16 ASCII letters and digits, not `{0}`")]
    Shape(String),
    /// A reserved name ([`RESERVED`]).
    #[error(
        "the header prefix `{0}` is reserved: `{0}-*` names standard headers or a transform's `req` field"
    )]
    Reserved(String),
}

/// The prefixed names of one deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderNames {
    /// The prefix, upper case (`SVC`).
    prefix: String,
    /// `<prefix>-`, lower case: what every prefixed header name starts with.
    dashed: String,
    /// `<PREFIX>-API-KEY`.
    pub api_key: HeaderName,
    /// `<PREFIX>-PROXY-KEY`.
    pub proxy_key: HeaderName,
    /// `<PREFIX>-PROXY-URL`: the destination of an ephemeral proxy.
    pub proxy_url: HeaderName,
    /// `<PREFIX>-IDEMPOTENCY-KEY`: an alias of `Idempotency-Key`.
    pub idempotency_key: HeaderName,
    /// `<PREFIX>-TRACE-ID`: read like `X-Request-Id` when that is absent.
    pub trace_id: HeaderName,
    /// `<PREFIX>-PROXY-DESTINATION-STATUS`: the destination's status on a proxy answer.
    pub destination_status: HeaderName,
    /// `<PREFIX>-PROXY-WARNING`: on a proxy answer whose request held `{{` where expressions
    /// are not looked for.
    pub proxy_warning: HeaderName,
    /// The query parameter `<prefix>-proxy-key`.
    pub proxy_key_query: String,
}

impl Default for HeaderNames {
    fn default() -> Self {
        Self::build(DEFAULT_PREFIX)
    }
}

impl HeaderNames {
    /// The names for `prefix` (case-insensitive), or why it cannot be used.
    pub fn new(prefix: &str) -> Result<Self, PrefixError> {
        if !(2..=16).contains(&prefix.len()) || !prefix.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(PrefixError::Shape(prefix.to_string()));
        }
        let upper = prefix.to_ascii_uppercase();
        if RESERVED.contains(&upper.as_str()) {
            return Err(PrefixError::Reserved(upper));
        }
        Ok(Self::build(&upper))
    }

    /// Builds the names of a prefix already checked to be 2–16 letters and digits.
    fn build(upper: &str) -> Self {
        let dashed = format!("{}-", upper.to_ascii_lowercase());
        let name = |suffix: &str| {
            HeaderName::from_bytes(format!("{dashed}{suffix}").as_bytes())
                .unwrap_or_else(|_| HeaderName::from_static("x-invalid"))
        };
        Self {
            prefix: upper.to_string(),
            api_key: name("api-key"),
            proxy_key: name("proxy-key"),
            proxy_url: name("proxy-url"),
            idempotency_key: name("idempotency-key"),
            trace_id: name("trace-id"),
            destination_status: name("proxy-destination-status"),
            proxy_warning: name("proxy-warning"),
            proxy_key_query: format!("{dashed}proxy-key"),
            dashed,
        }
    }

    /// The prefix, upper case.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether the default prefix is in use.
    pub fn is_default(&self) -> bool {
        self.prefix == DEFAULT_PREFIX
    }

    /// The transform client's extra name (`req.bt` for `BT`); `None` with the default prefix,
    /// whose client is `req.svc` (always present).
    pub fn client_alias(&self) -> Option<String> {
        (!self.is_default()).then(|| self.prefix.to_ascii_lowercase())
    }

    /// Whether a (lower-case) header name is one of Tessera's own, with this prefix or the
    /// default one: such headers never reach a destination.
    pub fn is_own(&self, lower_name: &str) -> bool {
        lower_name.starts_with(&self.dashed) || lower_name.starts_with("svc-")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_names_are_the_svc_ones() {
        let names = HeaderNames::default();
        assert_eq!(names.api_key.as_str(), "svc-api-key");
        assert_eq!(names.proxy_key.as_str(), "svc-proxy-key");
        assert_eq!(names.proxy_url.as_str(), "svc-proxy-url");
        assert_eq!(names.idempotency_key.as_str(), "svc-idempotency-key");
        assert_eq!(names.trace_id.as_str(), "svc-trace-id");
        assert_eq!(
            names.destination_status.as_str(),
            "svc-proxy-destination-status"
        );
        assert_eq!(names.proxy_key_query, "svc-proxy-key");
        assert_eq!(names.client_alias(), None);
        assert_eq!(HeaderNames::new("svc"), Ok(names));
    }

    #[test]
    fn a_chosen_prefix_renames_everything() {
        let names = HeaderNames::new("bt").expect("valid");
        assert_eq!(names.prefix(), "BT");
        assert_eq!(names.api_key.as_str(), "bt-api-key");
        assert_eq!(names.idempotency_key.as_str(), "bt-idempotency-key");
        assert_eq!(names.trace_id.as_str(), "bt-trace-id");
        assert_eq!(
            names.destination_status.as_str(),
            "bt-proxy-destination-status"
        );
        assert_eq!(names.proxy_key_query, "bt-proxy-key");
        assert_eq!(names.client_alias().as_deref(), Some("bt"));
        assert!(names.is_own("bt-anything") && names.is_own("svc-api-key"));
        assert!(!names.is_own("btx-api-key") && !names.is_own("authorization"));
    }

    #[test]
    fn shapes_and_reserved_names_are_refused() {
        for bad in ["", "B", "B-T", "bt_x", "é1", "ABCDEFGHIJKLMNOPQ", "b t"] {
            assert!(
                matches!(HeaderNames::new(bad), Err(PrefixError::Shape(_))),
                "{bad:?}"
            );
        }
        for reserved in [
            "content",
            "PROXY",
            "Sec",
            "accept",
            "access",
            "if",
            "ARGS",
            "configuration",
        ] {
            assert!(
                matches!(HeaderNames::new(reserved), Err(PrefixError::Reserved(_))),
                "{reserved:?}"
            );
        }
        assert!(HeaderNames::new("X").is_err());
        assert!(HeaderNames::new("VGS2").is_ok());
        assert!(HeaderNames::new("x").is_err());
    }
}
