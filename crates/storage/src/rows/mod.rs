//! Row structs and their conversions to and from domain types: one file per table family,
//! and here the conversions of instants and JSON columns they share.

use tessera_domain::store::StoreError;
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

mod applications;
mod associations;
mod data_keys;
mod proxies;
mod tenants;
mod tokens;

pub(crate) use applications::{application_grants, ApplicationKeyRow, ApplicationRow};
pub(crate) use associations::AssociationRow;
pub(crate) use data_keys::{DataKeyJobRow, DataKeyVersionRow};
pub(crate) use proxies::{NewProxyRow, ProxyRow};
pub(crate) use tenants::TenantRow;
pub(crate) use tokens::{TokenMetadataRow, TokenRow, TokenSearchRow};

/// Stores a UTC instant as a naive `TIMESTAMP`.
pub(crate) fn to_db_time(ts: OffsetDateTime) -> PrimitiveDateTime {
    // Every instant the domain makes is UTC already (and `timestamp::parse` refuses the ones
    // that would leave years 1–9999 in UTC), so the fallback is never taken; it only keeps
    // this conversion from panicking.
    let utc = ts.checked_to_offset(UtcOffset::UTC).unwrap_or(ts);
    PrimitiveDateTime::new(utc.date(), utc.time())
}

pub(crate) fn from_db_time(ts: PrimitiveDateTime) -> OffsetDateTime {
    ts.assume_utc()
}

fn parse<T: std::str::FromStr>(what: &str, raw: &str) -> Result<T, StoreError> {
    raw.parse()
        .map_err(|_| StoreError::Corrupt(format!("invalid {what} `{raw}`")))
}

fn json<T: serde::de::DeserializeOwned>(what: &str, raw: &str) -> Result<T, StoreError> {
    serde_json::from_str(raw).map_err(|e| StoreError::Corrupt(format!("invalid {what}: {e}")))
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serialising plain maps, vectors and enums into a String cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}
