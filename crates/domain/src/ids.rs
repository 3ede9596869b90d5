//! Typed identifiers. Each wraps a UUID v4 and prints in lowercase hyphenated form, but for
//! [`TokenId`], which may also be an id a caller chose (docs/api.md, "Token ids").

use std::{fmt, str::FromStr, sync::Arc};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A fresh random (v4) identifier.
            pub fn new() -> Self {
                Self(Uuid::new_v4())
            }

            /// Wraps an existing UUID.
            pub fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// The underlying UUID.
            pub fn as_uuid(&self) -> &Uuid {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.as_hyphenated(), f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0.as_hyphenated())
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;

            /// Parses a UUID in any of the forms the `uuid` crate accepts.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

id_type!(
    /// Identifies a tenant: the unit of isolation. Every stored row carries one.
    TenantId
);
id_type!(
    /// Identifies an application (an API key holder) within a tenant.
    ApplicationId
);
id_type!(
    /// Identifies one of an application's API keys within a tenant.
    ApplicationKeyId
);
id_type!(
    /// Identifies a pre-configured proxy within a tenant.
    ProxyId
);
id_type!(
    /// Identifies a webhook within a tenant.
    WebhookId
);

/// Most characters a token id may hold.
pub const MAX_TOKEN_ID_CHARS: usize = 400;
/// Fewest characters a token id may hold.
pub const MIN_TOKEN_ID_CHARS: usize = 3;
/// Characters a token id may never hold: they are reserved in URLs and in expressions.
pub const FORBIDDEN_ID_CHARS: &[char] = &[
    '#', '/', '\\', '+', '?', '[', ']', '|', '&', '=', '%', '<', '>', '{', '}', '^',
];
/// Prefixes a token id may not start with: they start the expression forms.
pub const RESERVED_ID_PREFIXES: &[&str] = &["token:", "config:", "token_intent:"];
/// Ids a token may not have: they name routes beside `/tokens/{id}` (`/tokens/search`,
/// `/console/tokens/new`), so a token holding one could not be reached by its id.
pub const RESERVED_IDS: &[&str] = &["search", "new"];

/// Whether `c` is an invisible formatting character (Unicode category Cf: soft hyphen,
/// zero-width and bidirectional controls, tags…): an id holding one would show as another
/// id in a console, a log or a terminal (docs/api.md, "Token ids").
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{0600}'..='\u{0605}' | '\u{061C}' | '\u{06DD}' | '\u{070F}'
        | '\u{0890}'..='\u{0891}' | '\u{08E2}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{110BD}' | '\u{110CD}'
        | '\u{13430}'..='\u{1343F}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0001}' | '\u{E0020}'..='\u{E007F}')
}

/// Identifies a token within a tenant: a UUID (generated, or chosen by the caller), or any
/// other id a caller chose, as another vault let it (3–400 characters, no whitespace, none of
/// [`FORBIDDEN_ID_CHARS`], not starting with one of [`RESERVED_ID_PREFIXES`]).
///
/// A UUID in its hyphenated form is one id in any letter case, printed in lower case, as
/// generated ids always were; every other id is exactly the text chosen (`1234_phone`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenId(TokenIdRepr);

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum TokenIdRepr {
    Uuid(Uuid),
    Chosen(Arc<str>),
}

/// Why a text is not a token id. The message names the rule, never the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenIdError {
    /// Fewer than [`MIN_TOKEN_ID_CHARS`] or more than [`MAX_TOKEN_ID_CHARS`] characters.
    #[error("must be 3 to 400 characters")]
    Length,
    /// Whitespace or a control character.
    #[error("must not hold whitespace or control characters")]
    Whitespace,
    /// An invisible formatting character (zero-width, bidirectional, soft hyphen…).
    #[error("must not hold invisible formatting characters (zero-width, bidirectional)")]
    Invisible,
    /// One of [`RESERVED_IDS`].
    #[error("must not be `search` or `new`: they name routes")]
    RouteName,
    /// One of [`FORBIDDEN_ID_CHARS`].
    #[error("must not hold any of # / \\ + ? [ ] | & = % < > {{ }} ^")]
    Forbidden,
    /// One of [`RESERVED_ID_PREFIXES`].
    #[error("must not start with `token:`, `config:` or `token_intent:`")]
    Reserved,
    /// The nil UUID.
    #[error("must not be the nil UUID")]
    Nil,
}

impl TokenId {
    /// A fresh random (v4) identifier.
    pub fn new() -> Self {
        Self(TokenIdRepr::Uuid(Uuid::new_v4()))
    }

    /// Wraps an existing UUID.
    pub fn from_uuid(uuid: Uuid) -> Self {
        Self(TokenIdRepr::Uuid(uuid))
    }

    /// The UUID, when the id is one.
    pub fn as_uuid(&self) -> Option<&Uuid> {
        match &self.0 {
            TokenIdRepr::Uuid(uuid) => Some(uuid),
            TokenIdRepr::Chosen(_) => None,
        }
    }

    /// The bytes that identify the id where it is bound into something (a cursor, a
    /// request's binding): the UUID's 16 bytes, or the chosen text's UTF-8.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            TokenIdRepr::Uuid(uuid) => uuid.as_bytes(),
            TokenIdRepr::Chosen(text) => text.as_bytes(),
        }
    }
}

impl Default for TokenId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            TokenIdRepr::Uuid(uuid) => fmt::Display::fmt(&uuid.as_hyphenated(), f),
            TokenIdRepr::Chosen(text) => f.write_str(text),
        }
    }
}

impl fmt::Debug for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenId({self})")
    }
}

impl FromStr for TokenId {
    type Err = TokenIdError;

    /// A hyphenated UUID (any letter case), or any other text that follows the id rules.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() == 36 {
            if let Ok(uuid) = Uuid::try_parse(s) {
                return if uuid.is_nil() {
                    Err(TokenIdError::Nil)
                } else {
                    Ok(Self(TokenIdRepr::Uuid(uuid)))
                };
            }
        }
        let count = s.chars().count();
        if !(MIN_TOKEN_ID_CHARS..=MAX_TOKEN_ID_CHARS).contains(&count) {
            return Err(TokenIdError::Length);
        }
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(TokenIdError::Whitespace);
        }
        if s.chars().any(is_format) {
            return Err(TokenIdError::Invisible);
        }
        if RESERVED_IDS.contains(&s) {
            return Err(TokenIdError::RouteName);
        }
        if s.contains(FORBIDDEN_ID_CHARS) {
            return Err(TokenIdError::Forbidden);
        }
        if RESERVED_ID_PREFIXES.iter().any(|p| s.starts_with(p)) {
            return Err(TokenIdError::Reserved);
        }
        Ok(Self(TokenIdRepr::Chosen(Arc::from(s))))
    }
}

impl Serialize for TokenId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            TokenIdRepr::Uuid(uuid) => uuid.serialize(serializer),
            TokenIdRepr::Chosen(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for TokenId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for TokenId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::String)
            .min_length(Some(MIN_TOKEN_ID_CHARS))
            .max_length(Some(MAX_TOKEN_ID_CHARS))
            .description(Some(
                "A token id: a UUID, or the id a caller chose (3–400 characters, no \
                 whitespace or invisible formatting characters, none of \
                 # / \\ + ? [ ] | & = % < > { } ^, not `search` or `new`).",
            ))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for TokenId {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_lowercase_hyphenated_and_round_trip() {
        let id: TokenId = "6F9619FF-8B86-4011-B42D-00C04FC964FF"
            .parse()
            .expect("parse");
        assert_eq!(id.to_string(), "6f9619ff-8b86-4011-b42d-00c04fc964ff");
        assert_eq!(id.to_string().parse::<TokenId>().expect("round trip"), id);
        assert!("not a uuid".parse::<TokenId>().is_err());
    }

    #[test]
    fn chosen_token_ids_follow_the_rules() {
        for ok in [
            "1234_phone",
            "abc",
            "9273610263384242",
            "k7dn59wb@gmail.com",
            "caf\u{e9}-1",
            "Search",
            "news",
        ] {
            let id: TokenId = ok.parse().expect(ok);
            assert_eq!(id.to_string(), ok);
            assert!(id.as_uuid().is_none());
        }
        let long = "x".repeat(400);
        assert!(long.parse::<TokenId>().is_ok());
        for (bad, why) in [
            ("ab", TokenIdError::Length),
            (&*"x".repeat(401), TokenIdError::Length),
            ("a b c", TokenIdError::Whitespace),
            ("abc\tdef", TokenIdError::Whitespace),
            ("a/bc", TokenIdError::Forbidden),
            ("a%2Fb", TokenIdError::Forbidden),
            ("{{data}}", TokenIdError::Forbidden),
            ("token:abc", TokenIdError::Reserved),
            ("config:abc", TokenIdError::Reserved),
            ("token_intent:abc", TokenIdError::Reserved),
            ("00000000-0000-0000-0000-000000000000", TokenIdError::Nil),
            ("search", TokenIdError::RouteName),
            ("new", TokenIdError::RouteName),
            ("abc\u{200B}", TokenIdError::Invisible),
            ("\u{202E}cba", TokenIdError::Invisible),
            ("ab\u{00AD}c", TokenIdError::Invisible),
            ("abc\u{FEFF}", TokenIdError::Invisible),
            ("abc\u{E0041}", TokenIdError::Invisible),
        ] {
            assert_eq!(bad.parse::<TokenId>(), Err(why), "{bad}");
        }
        for c in FORBIDDEN_ID_CHARS {
            assert!(format!("ab{c}").parse::<TokenId>().is_err(), "{c}");
        }
        // A UUID-shaped id is the UUID whatever its case; other spellings are ids of their own.
        let upper: TokenId = "6F9619FF-8B86-4011-B42D-00C04FC964FF"
            .parse()
            .expect("uuid");
        assert!(upper.as_uuid().is_some());
        let simple: TokenId = "6f9619ff8b864011b42d00c04fc964ff".parse().expect("text");
        assert!(simple.as_uuid().is_none());
        assert_ne!(simple, upper);
        // As JSON: a string, both ways.
        let json = serde_json::to_string(&upper).expect("json");
        assert_eq!(json, "\"6f9619ff-8b86-4011-b42d-00c04fc964ff\"");
        let back: TokenId = serde_json::from_str("\"1234_phone\"").expect("text");
        assert_eq!(back.to_string(), "1234_phone");
        assert!(
            serde_json::from_str::<TokenId>("1234").is_err(),
            "a number is no id"
        );
    }

    #[test]
    fn new_ids_are_v4() {
        assert_eq!(TenantId::new().as_uuid().get_version_num(), 4);
    }
}
