//! Where a proxy may send: a destination URL's checks, and the deployment's policy on private
//! destinations. Host names are checked when the gateway connects (docs/architecture.md,
//! "SSRF guard").

use crate::{network, validation::char_len};

/// Longest destination URL, in characters.
pub const MAX_URL_CHARS: usize = 400;

/// Server-side rules for destinations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DestinationPolicy {
    /// Also allow `http` and IP literals in private, loopback and link-local ranges (tests,
    /// internal deployments). Off by default.
    pub allow_private_destinations: bool,
}

/// Checks a destination URL: absolute, `https` (or `http` when private destinations are
/// allowed), a host, no credentials or fragment, at most 400 characters, and no IP literal in an
/// internal range unless allowed. Host names are checked when the gateway connects.
pub fn check_destination(
    raw: &str,
    policy: DestinationPolicy,
) -> Result<url::Url, DestinationError> {
    if char_len(raw) > MAX_URL_CHARS {
        return Err(DestinationError::TooLong);
    }
    let url = url::Url::parse(raw).map_err(DestinationError::NotAbsolute)?;
    match url.scheme() {
        "https" => {}
        "http" if policy.allow_private_destinations => {}
        "http" => return Err(DestinationError::NotHttps),
        other => return Err(DestinationError::Scheme(other.to_string())),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(DestinationError::Credentials);
    }
    if url.fragment().is_some() {
        return Err(DestinationError::Fragment);
    }
    let internal = match url.host() {
        None => return Err(DestinationError::NoHost),
        Some(url::Host::Domain(_)) => false,
        Some(url::Host::Ipv4(ip)) => network::is_internal(ip.into()),
        Some(url::Host::Ipv6(ip)) => network::is_internal(ip.into()),
    };
    if internal && !policy.allow_private_destinations {
        return Err(DestinationError::Internal);
    }
    Ok(url)
}

/// Why a destination URL is refused ([`check_destination`]); its text completes
/// "`destination_url` …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    /// Longer than [`MAX_URL_CHARS`].
    #[error("must be at most {MAX_URL_CHARS} characters")]
    TooLong,
    /// Not an absolute URL.
    #[error("must be an absolute URL ({0})")]
    NotAbsolute(url::ParseError),
    /// `http` where private destinations are not allowed.
    #[error("must use https")]
    NotHttps,
    /// Neither `https` nor `http`.
    #[error("scheme `{0}` is not supported; use https")]
    Scheme(String),
    /// A user name or password in the URL.
    #[error(
        "must not carry credentials; put them in `configuration` and inject them with a transform"
    )]
    Credentials,
    /// A `#fragment`.
    #[error("must not have a fragment")]
    Fragment,
    /// No host.
    #[error("must name a host")]
    NoHost,
    /// An IP literal in an internal range, where private destinations are not allowed.
    #[error("points at a private, loopback, link-local or otherwise internal address")]
    Internal,
}
