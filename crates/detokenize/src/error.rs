//! Why detokenization failed. Messages never include token values.

/// A failure to parse or substitute; every variant is the caller's fault (a 400, or a 413 for
/// [`DetokenizeError::TooLarge`]). None depends on a token's content.
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
    /// More distinct tokens than allowed.
    #[error("the request references {found} distinct tokens; at most {max} are allowed")]
    TooManyTokens {
        /// Distinct tokens referenced.
        found: usize,
        /// The limit.
        max: usize,
    },
    /// Rendering could produce more than the allowed bytes (decided from the sizes of the
    /// tokens and the shape of the expressions, never from token content).
    #[error(
        "the request could expand to {bound} bytes after detokenization; at most {max} are allowed"
    )]
    TooLarge {
        /// Upper bound of the rendered request.
        bound: u64,
        /// The limit.
        max: u64,
    },
}

fn location_suffix(location: &str) -> String {
    if location.is_empty() {
        String::new()
    } else {
        format!(" in {location}")
    }
}
