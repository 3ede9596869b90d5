//! Why detokenization failed. Messages never include token values.

/// A failure to parse or substitute; every variant is the caller's fault (a 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetokenizeError {
    /// An expression does not follow the grammar.
    #[error("invalid detokenization expression at byte {offset}{}: {message}", location_suffix(.location))]
    Syntax {
        /// Byte offset within the string that holds the expression.
        offset: usize,
        /// Where that string is: `body`, a JSON pointer like `body/card/number`, or `header x-y`.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// A referenced token does not exist (or belongs to another tenant: the same answer).
    #[error("token {0} was not found")]
    UnknownToken(String),
    /// A filter could not be applied to the value it received.
    #[error("filter `{filter}` failed on token {token}: {message}")]
    Filter {
        /// The filter's name.
        filter: &'static str,
        /// The token id.
        token: String,
        /// What went wrong (never the value itself).
        message: String,
    },
    /// More distinct tokens than allowed.
    #[error("the request references {found} distinct tokens; at most {max} are allowed")]
    TooManyTokens {
        /// Distinct tokens referenced.
        found: usize,
        /// The limit.
        max: usize,
    },
    /// A header value would contain CR, LF or NUL after substitution.
    #[error("header `{0}` would contain a control character (CR, LF or NUL) after detokenization")]
    HeaderInjection(String),
}

fn location_suffix(location: &str) -> String {
    if location.is_empty() {
        String::new()
    } else {
        format!(" in {location}")
    }
}
