//! The compile check of proxies' transform code (docs/api.md, "Proxies"): code that does not compile is
//! refused when a proxy is created or updated — a 400 naming the field, with the engine's
//! message and line — rather than failing every later invocation.
//!
//! The engine lives outside the domain (`tessera-transform-runtime`); the vault sees it only
//! through [`TransformCheck`], so that the management API, the console and any program
//! embedding the vault check transforms the same way, in the same order, without depending on
//! the engine themselves.

use crate::{
    proxy::{ProxyInput, MAX_TRANSFORM_CHARS},
    validation::ValidationErrors,
};

/// Compiles a transform's code without running it.
pub trait TransformCheck: Send + Sync {
    /// `Err` with the engine's message (and line) when `code` does not compile.
    fn check(&self, code: &str) -> Result<(), String>;
}

/// Checks both of `input`'s transforms with `check`, naming the failing fields. Code above
/// [`MAX_TRANSFORM_CHARS`] is not compiled: validation reports its length.
pub(crate) fn check_transforms(
    check: &dyn TransformCheck,
    input: &ProxyInput,
) -> Result<(), ValidationErrors> {
    let mut errors = ValidationErrors::new();
    for (field, transform) in [
        ("request_transform.code", &input.request_transform),
        ("response_transform.code", &input.response_transform),
    ] {
        let Some(t) = transform else { continue };
        if t.code.expose().chars().count() > MAX_TRANSFORM_CHARS {
            continue;
        }
        if let Err(message) = check.check(t.code.expose()) {
            errors.add(field, format!("does not compile: {message}"));
        }
    }
    errors.into_result()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{proxy::TransformInput, Secret};

    /// Refuses code containing `(` unclosed, as an engine would.
    struct Parens;

    impl TransformCheck for Parens {
        fn check(&self, code: &str) -> Result<(), String> {
            if code.matches('(').count() == code.matches(')').count() {
                Ok(())
            } else {
                Err("unexpected end of input at line 1".into())
            }
        }
    }

    fn input(request: Option<&str>, response: Option<&str>) -> ProxyInput {
        let transform = |code: &str| TransformInput {
            code: Secret::new(code.to_string()),
            kind: None,
        };
        ProxyInput {
            name: "p".into(),
            destination_url: "https://x.example".into(),
            request_transform: request.map(transform),
            response_transform: response.map(transform),
            application: None,
            configuration: None,
            require_auth: None,
            key_supplied: None,
        }
    }

    #[test]
    fn each_failing_transform_is_named_with_the_engines_message() {
        let errors =
            check_transforms(&Parens, &input(Some("f("), Some("g("))).expect_err("both fail");
        for field in ["request_transform.code", "response_transform.code"] {
            assert_eq!(
                errors.fields()[field],
                ["does not compile: unexpected end of input at line 1"],
                "{field}"
            );
        }
        assert!(check_transforms(&Parens, &input(Some("f()"), None)).is_ok());
        assert!(check_transforms(&Parens, &input(None, None)).is_ok());
    }

    #[test]
    fn code_over_the_length_limit_is_left_to_validation() {
        let long = "(".repeat(MAX_TRANSFORM_CHARS + 1);
        assert!(check_transforms(&Parens, &input(Some(&long), None)).is_ok());
    }
}
