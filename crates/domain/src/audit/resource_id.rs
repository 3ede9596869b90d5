//! What an audit event is about.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ids::{ApplicationId, ApplicationKeyId, ProxyId, TenantId, TokenId, TokenIdError};

/// The id of a token, application, key, proxy or tenant an event concerns: a UUID, but for a
/// token whose id its creator chose (docs/api.md, "Token ids"). It is written as the id's text,
/// so an event about a UUID encodes and hashes exactly as before ids could be chosen.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ResourceId(TokenId);

impl ResourceId {
    /// The UUID, when the id is one (every resource but a token with a chosen id).
    pub fn as_uuid(&self) -> Option<&Uuid> {
        self.0.as_uuid()
    }
}

impl PartialEq<Uuid> for ResourceId {
    fn eq(&self, other: &Uuid) -> bool {
        self.as_uuid() == Some(other)
    }
}

impl From<Uuid> for ResourceId {
    fn from(uuid: Uuid) -> Self {
        Self(TokenId::from_uuid(uuid))
    }
}

impl From<TokenId> for ResourceId {
    fn from(id: TokenId) -> Self {
        Self(id)
    }
}

impl From<&TokenId> for ResourceId {
    fn from(id: &TokenId) -> Self {
        Self(id.clone())
    }
}

macro_rules! from_uuid_id {
    ($($id:ty),*) => {$(
        impl From<$id> for ResourceId {
            fn from(id: $id) -> Self {
                Self::from(*id.as_uuid())
            }
        }
    )*};
}
from_uuid_id!(ApplicationId, ApplicationKeyId, ProxyId, TenantId);

impl FromStr for ResourceId {
    type Err = TokenIdError;

    /// A UUID (hyphenated, any letter case) or a chosen token id.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Self)
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ResourceId({})", self.0)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for ResourceId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <TokenId as utoipa::PartialSchema>::schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for ResourceId {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_write_as_before_and_chosen_ids_as_chosen() {
        let uuid = Uuid::new_v4();
        let json = serde_json::to_string(&ResourceId::from(uuid)).expect("json");
        assert_eq!(json, serde_json::to_string(&uuid).expect("json"));
        let chosen: ResourceId = "1234_phone".parse().expect("id");
        assert_eq!(
            serde_json::to_string(&chosen).expect("json"),
            "\"1234_phone\""
        );
        assert!(chosen.as_uuid().is_none());
    }
}
