//! Typed identifiers. Each wraps a UUID v4 and prints in lowercase hyphenated form.

use std::{fmt, str::FromStr};

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
    /// Identifies a token within a tenant.
    TokenId
);
id_type!(
    /// Identifies a pre-configured proxy within a tenant.
    ProxyId
);

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
        assert!("not-a-uuid".parse::<TokenId>().is_err());
    }

    #[test]
    fn new_ids_are_v4() {
        assert_eq!(TenantId::new().as_uuid().get_version_num(), 4);
    }
}
