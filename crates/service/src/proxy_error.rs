//! The kinds of proxy failure and every fact that follows from one: the status, the metric
//! label, the log level and what the OpenAPI document says of it.
//!
//! Kept here rather than in the gateway so that the management API's OpenAPI document (built
//! by `tessera-http`, which must not depend on the gateway) lists the `/proxy` failures from
//! the same table the gateway answers with: adding a kind adds its documented status.

use http::StatusCode;

/// What went wrong, as far as the caller, the metrics and the log are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A malformed request: bad expression, unknown token, dot segments, unreadable body.
    BadRequest,
    /// No proxy key, an unknown one, or (on `require_auth` proxies) no valid API key of the
    /// proxy's tenant.
    Unauthenticated,
    /// The API key lacks `token:use` somewhere it is needed.
    Forbidden,
    /// The body, or what detokenization could expand it to, is above its limit.
    TooLarge,
    /// The body did not arrive within the body timeout.
    BodyTimeout,
    /// The proxy is over its rate limit.
    RateLimited,
    /// The proxy's transform recently ran past its time limit; calls wait out a back-off.
    Quarantined,
    /// The database is unavailable.
    Unavailable,
    /// A fault of the gateway itself.
    Internal,
    /// The SSRF guard refused the destination's address, or plain `http` is not allowed.
    Blocked,
    /// The destination could not be reached (connection or TLS failure), or answered with a
    /// status that is not a final HTTP status.
    Unreachable,
    /// The destination's response headers did not arrive in time.
    Timeout,
    /// A transform failed: it threw, ran out of time or memory, or returned something unusable.
    TransformFailed,
    /// A transform refused the request with one of the HTTP error classes (its status).
    TransformRefused(u16),
    /// A transform could not start: no sandbox slot came free within the queue timeout. Not
    /// the transform's fault: 503 with `Retry-After`, and the proxy is not quarantined.
    TransformBusy,
}

impl ErrorKind {
    /// Every kind whose status is fixed, in the order the metric and the document list them
    /// (a [`ErrorKind::TransformRefused`] status is the transform's choice).
    pub const FIXED: [ErrorKind; 14] = [
        ErrorKind::BadRequest,
        ErrorKind::Unauthenticated,
        ErrorKind::Forbidden,
        ErrorKind::TooLarge,
        ErrorKind::BodyTimeout,
        ErrorKind::RateLimited,
        ErrorKind::Quarantined,
        ErrorKind::Unavailable,
        ErrorKind::Internal,
        ErrorKind::Blocked,
        ErrorKind::Unreachable,
        ErrorKind::Timeout,
        ErrorKind::TransformFailed,
        ErrorKind::TransformBusy,
    ];

    /// The status answered.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
            ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
            ErrorKind::Forbidden => StatusCode::FORBIDDEN,
            ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorKind::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ErrorKind::Quarantined | ErrorKind::Unavailable | ErrorKind::TransformBusy => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ErrorKind::Internal | ErrorKind::TransformFailed => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Blocked | ErrorKind::Unreachable => StatusCode::BAD_GATEWAY,
            ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::TransformRefused(status) => {
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
        }
    }

    /// The `reason` label of `tessera_gateway_errors_total`.
    pub fn metric_label(self) -> &'static str {
        match self {
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::Unauthenticated => "unauthenticated",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::BodyTimeout => "body_timeout",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Quarantined => "quarantined",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Internal => "internal",
            ErrorKind::Blocked => "blocked",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::Timeout => "timeout",
            ErrorKind::TransformFailed
            | ErrorKind::TransformRefused(_)
            | ErrorKind::TransformBusy => "transform",
        }
    }

    /// Every label, each once, in the order of [`ErrorKind::FIXED`] (every kind's label is
    /// among them: a refused transform shares `transform`).
    pub fn labels() -> Vec<&'static str> {
        let mut labels: Vec<&'static str> = Vec::with_capacity(Self::FIXED.len());
        for kind in Self::FIXED {
            if !labels.contains(&kind.metric_label()) {
                labels.push(kind.metric_label());
            }
        }
        labels
    }

    /// How loudly the gateway logs it: its own faults and failing destinations as warnings or
    /// errors, the callers' mistakes not at all (they are counted).
    pub fn log_level(self) -> Option<tracing::Level> {
        match self {
            ErrorKind::Internal | ErrorKind::Unavailable => Some(tracing::Level::ERROR),
            ErrorKind::Unreachable
            | ErrorKind::Timeout
            | ErrorKind::TransformFailed
            | ErrorKind::TransformBusy
            | ErrorKind::Quarantined => Some(tracing::Level::WARN),
            _ => None,
        }
    }

    /// When a caller gets it, as the OpenAPI document tells them (one sentence or more).
    pub fn documented(self) -> &'static str {
        match self {
            ErrorKind::BadRequest => {
                "Bad expression (including a JSONPath calling `match` or `search`), unknown \
                 token, a dot segment in the path, or an unreadable body; or `SVC-PROXY-URL` \
                 with a proxy key, malformed, not an allowed destination, or with ephemeral \
                 proxies disabled."
            }
            ErrorKind::Unauthenticated => {
                "Missing or unknown proxy key; or `require_auth` and no valid `SVC-API-KEY` of \
                 the proxy's tenant."
            }
            ErrorKind::Forbidden => {
                "The key lacks `token:use` on a token's container; a token's destination \
                 binding does not allow the destination; or an ephemeral proxy was asked to \
                 detokenize an unbound token."
            }
            ErrorKind::TooLarge => {
                "The body is above `--max-body-bytes`, or detokenization could expand the \
                 request past `--max-rendered-bytes`."
            }
            ErrorKind::BodyTimeout => {
                "The body did not arrive within `--body-timeout` of the start of the request."
            }
            ErrorKind::RateLimited => {
                "The proxy is over the rate limit configured with `--rate-limit`; \
                 `Retry-After` says when to retry."
            }
            ErrorKind::Quarantined => {
                "The proxy is quarantined because its transform recently ran past its time \
                 limit (with `Retry-After`)."
            }
            ErrorKind::Unavailable => "The database is unavailable.",
            ErrorKind::Internal => "A fault of the gateway itself.",
            ErrorKind::Blocked => {
                "The destination's address was refused by the SSRF guard, or it is plain \
                 `http` where that is not allowed."
            }
            ErrorKind::Unreachable => {
                "Destination unreachable, TLS failure, or an answer whose status is not a \
                 final HTTP status (1xx, above 599)."
            }
            ErrorKind::Timeout => "The destination did not answer in time.",
            ErrorKind::TransformFailed => {
                "The transform failed: it threw, ran out of time or memory, or returned \
                 something unusable."
            }
            ErrorKind::TransformRefused(_) => {
                "The transform refused the request with one of its error classes, whose \
                 status it is."
            }
            ErrorKind::TransformBusy => {
                "No transform sandbox came free within the queue timeout (with \
                 `Retry-After`); the proxy is not quarantined."
            }
        }
    }

    /// The documented failures by status, ascending: each status with what its kinds say, in
    /// the order of [`ErrorKind::FIXED`].
    pub fn documented_statuses() -> Vec<(StatusCode, String)> {
        let mut statuses: Vec<StatusCode> = Self::FIXED.iter().map(|k| k.status()).collect();
        statuses.sort();
        statuses.dedup();
        statuses
            .into_iter()
            .map(|status| {
                let text = Self::FIXED
                    .iter()
                    .filter(|k| k.status() == status)
                    .map(|k| k.documented())
                    .collect::<Vec<_>>()
                    .join(" ");
                (status, text)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_listed_label() {
        let labels = ErrorKind::labels();
        for kind in ErrorKind::FIXED
            .into_iter()
            .chain([ErrorKind::TransformRefused(402)])
        {
            assert!(labels.contains(&kind.metric_label()), "{kind:?}");
        }
        assert_eq!(labels.len(), 13, "{labels:?}");
        assert_eq!(ErrorKind::TransformRefused(402).status().as_u16(), 402);
    }

    #[test]
    fn every_fixed_status_is_documented_once_with_all_its_kinds() {
        let documented = ErrorKind::documented_statuses();
        let codes: Vec<u16> = documented.iter().map(|(s, _)| s.as_u16()).collect();
        assert_eq!(codes, [400, 401, 403, 408, 413, 429, 500, 502, 503, 504]);
        let unavailable = &documented[8].1;
        for kind in [
            ErrorKind::Quarantined,
            ErrorKind::Unavailable,
            ErrorKind::TransformBusy,
        ] {
            assert!(unavailable.contains(kind.documented()), "{kind:?}");
        }
    }
}
