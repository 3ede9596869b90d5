//! Why an expression or a template failed. Messages never include data values.

use crate::filter::flow::Unapplicable;

/// Text that does not follow the grammar, at a byte offset of the text parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {message}")]
pub struct SyntaxError {
    /// Byte offset of the problem in the text parsed.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl SyntaxError {
    /// A problem at `offset`.
    pub(crate) fn at(offset: usize, message: impl Into<String>) -> Self {
        Self {
            offset,
            message: message.into(),
        }
    }

    /// The same problem, `by` bytes further into an enclosing text.
    pub fn shifted(self, by: usize) -> Self {
        Self {
            offset: self.offset + by,
            ..self
        }
    }
}

/// Why a template could not be read or rendered. Every variant is the caller's own doing (a
/// 400 naming the field that held the template).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template does not follow the grammar.
    #[error("invalid template {0}")]
    Syntax(#[from] SyntaxError),
    /// A filter did not apply to the data.
    #[error("{0}")]
    Unapplicable(#[from] Unapplicable),
    /// The rendering could grow past [`crate::template::MAX_RENDERED`] bytes.
    #[error("the template could render more than {max} bytes")]
    TooLarge {
        /// The limit.
        max: u64,
    },
}
