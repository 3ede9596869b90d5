//! Where a token's pages are. A token id may be one its creator chose (docs/api.md, "Token
//! ids"), holding characters a URL path cannot carry as they are (`é`, `"`, `'`): it is
//! percent-encoded in every link and redirect, and decoded again when the route is matched.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use tessera_domain::TokenId;

/// What stays as it is in a path segment: letters, digits and `- . _ ~`.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `/console/tokens/{id}`.
pub(crate) fn token(id: &TokenId) -> String {
    resource("tokens", id)
}

/// `/console/tokens?deleted={id}`: the list, saying the token was deleted.
pub(crate) fn token_deleted(id: &TokenId) -> String {
    format!(
        "/console/tokens?deleted={}",
        utf8_percent_encode(&id.to_string(), SEGMENT)
    )
}

/// `/console/{section}/{id}`.
pub(crate) fn resource(section: &str, id: &impl std::fmt::Display) -> String {
    format!(
        "/console/{section}/{}",
        utf8_percent_encode(&id.to_string(), SEGMENT)
    )
}

/// `/console/tokens/{id}/{action}`.
pub(crate) fn token_action(id: &TokenId, action: &str) -> String {
    format!("{}/{action}", token(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chosen_ids_are_encoded_in_paths() {
        let id: TokenId = "k7dn59wb@gmail.com".parse().expect("id");
        assert_eq!(token(&id), "/console/tokens/k7dn59wb%40gmail.com");
        let id: TokenId = "caf\u{e9}\"1".parse().expect("id");
        assert_eq!(
            token_action(&id, "edit"),
            "/console/tokens/caf%C3%A9%221/edit"
        );
        let id: TokenId = "a;b'c\"&".trim_end_matches('&').parse().expect("id");
        assert_eq!(token_deleted(&id), "/console/tokens?deleted=a%3Bb%27c%22");
        let uuid = TokenId::new();
        assert_eq!(token(&uuid), format!("/console/tokens/{uuid}"));
    }
}
