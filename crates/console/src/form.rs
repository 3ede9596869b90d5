//! Form bodies (`application/x-www-form-urlencoded`) and query strings, as ordered pairs: the
//! console's forms repeat names (permission checkboxes, type filters), which a struct-based
//! decoder would refuse.

use actix_web::{dev::Payload, http::StatusCode, web::BytesMut, HttpMessage, HttpRequest};
use futures_util::StreamExt;

/// Why a form body was refused: the status to answer and what to tell the person.
#[derive(Debug)]
pub(crate) struct FormRefused {
    /// The status to answer.
    pub(crate) status: StatusCode,
    /// What went wrong.
    pub(crate) message: String,
}

/// Decoded name/value pairs, in the order sent.
#[derive(Default)]
pub(crate) struct Form {
    pairs: Vec<(String, String)>,
}

// Forms carry token data and keys: never print them.
impl std::fmt::Debug for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Form")
            .field("fields", &self.pairs.len())
            .finish()
    }
}

impl Form {
    /// Pairs of a query string or form body.
    pub(crate) fn parse(raw: &[u8]) -> Self {
        Self {
            pairs: form_urlencoded::parse(raw)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        }
    }

    /// Reads a form body of at most `limit` bytes.
    pub(crate) async fn read(
        req: &HttpRequest,
        mut payload: Payload,
        limit: usize,
    ) -> Result<Self, FormRefused> {
        let is_form =
            req.mime_type().ok().flatten().is_some_and(|m| {
                m.type_() == "application" && m.subtype() == "x-www-form-urlencoded"
            });
        if !is_form {
            return Err(FormRefused {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                message: "console forms are sent as application/x-www-form-urlencoded".into(),
            });
        }
        let too_large = || FormRefused {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: format!("The form is larger than the limit of {limit} bytes."),
        };
        let mut buf = BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| FormRefused {
                status: StatusCode::BAD_REQUEST,
                message: format!("The form could not be read: {e}"),
            })?;
            if buf.len() + chunk.len() > limit {
                return Err(too_large());
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(Self::parse(&buf))
    }

    /// The first value of `name` (`""` when absent).
    pub(crate) fn get(&self, name: &str) -> &str {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// The first value of `name`, trimmed, when not blank.
    pub(crate) fn opt(&self, name: &str) -> Option<&str> {
        Some(self.get(name).trim()).filter(|v| !v.is_empty())
    }

    /// Every value of `name`, in order.
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Whether a checkbox named `name` was ticked.
    pub(crate) fn checked(&self, name: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == name)
    }

    /// The indexes `i` of fields named `prefix.i.…`, ascending and unique (rows of a
    /// repeating group such as rules or configuration entries).
    pub(crate) fn rows(&self, prefix: &str) -> Vec<usize> {
        let mut rows: Vec<usize> = self
            .pairs
            .iter()
            .filter_map(|(k, _)| {
                let rest = k.strip_prefix(prefix)?.strip_prefix('.')?;
                rest.split('.').next()?.parse().ok()
            })
            .collect();
        rows.sort_unstable();
        rows.dedup();
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_names_and_rows() {
        let f = Form::parse(
            b"permissions=token%3Aread&permissions=token%3Ause&rule.3.container=%2Fa%2F&rule.0.priority=1&rule.3.priority=2&x=+",
        );
        assert_eq!(f.all("permissions"), vec!["token:read", "token:use"]);
        assert_eq!(f.get("rule.3.container"), "/a/");
        assert_eq!(f.rows("rule"), vec![0, 3]);
        assert_eq!(f.opt("x"), None, "blank");
        assert_eq!(f.get("missing"), "");
        assert!(f.checked("x") && !f.checked("y"));
        assert!(!format!("{f:?}").contains("token"));
    }
}
