//! Cursor pages (`GET /v2/tokens`, `POST /v2/tokens/search`; docs/api.md "Cursor pages"): the
//! opaque `start` a page hands back as `pagination.next`.
//!
//! A cursor is the position of the last token of a page (its `created_at` and id: pages are
//! read newest first, by that pair, so a keyset walk neither shifts nor repeats while tokens
//! are created) plus an HMAC-SHA-256 tag binding it to the tenant, the application and the
//! criteria of the walk it belongs to. The tag's key is a deployment-wide vault key of its
//! own (see [`CURSOR_KEY`]), never a tenant data key, so a data-key rotation leaves every
//! walk valid.
//!
//! ```text
//!   base64url( version 1 ‖ created_at, Unix ns, i128 BE ‖ token id (16) ‖ HMAC tag (32) )
//!   base64url( version 2 ‖ created_at, Unix ns, i128 BE ‖ chosen token id (UTF-8) ‖ HMAC tag (32) )
//! ```
//!
//! Version 1 holds a UUID id; version 2 an id a caller chose (docs/api.md, "Token ids"),
//! and its tag covers the version byte too, so neither form passes for the other.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use time::OffsetDateTime;
use zeroize::Zeroizing;

use crate::{
    ids::{ApplicationId, TenantId, TokenId},
    store::{Position, TokenSearch},
};

/// Name under which the cursor key is stored (wrapped by the master key) among the vault keys.
pub const CURSOR_KEY: &str = "token-cursor";
/// Bytes of a cursor key.
pub const CURSOR_KEY_LEN: usize = 32;
/// Longest `start` accepted, in bytes: a cursor of a UUID id is 87, one of the longest chosen
/// id (400 characters of up to 4 bytes each) 2,199.
pub const MAX_CURSOR_LEN: usize = 2200;

/// A position whose id is a UUID.
const VERSION_UUID: u8 = 1;
/// A position whose id a caller chose.
const VERSION_CHOSEN: u8 = 2;
const TIME_LEN: usize = 16;
const POSITION_LEN: usize = TIME_LEN + 16;
const TAG_LEN: usize = 32;
/// Domain separation of the tag: no other MAC of this key's holder can be replayed as one.
const TAG_LABEL: &[u8] = b"tessera token cursor v1\0";

/// Why a `start` was refused. The variants are kept apart for logs and tests only: the caller
/// is told the same thing for each, so a forged cursor learns nothing from the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    /// Longer than [`MAX_CURSOR_LEN`].
    #[error("the cursor is too long")]
    TooLong,
    /// Not base64url, or not the length of a cursor.
    #[error("the cursor is malformed")]
    Malformed,
    /// A version this build does not write.
    #[error("the cursor has an unknown version")]
    Version,
    /// The tag does not match: tampered with, or issued to another tenant, application or
    /// set of criteria.
    #[error("the cursor was not issued for this walk")]
    Foreign,
}

/// One page of a cursor walk, as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorRequest {
    /// The cursor a previous page answered; `None` for the first page.
    pub start: Option<String>,
    /// Items per page (1–100, checked by the request's validation).
    pub size: u32,
}

/// One page of a cursor walk, as answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorPage<T> {
    /// The items, newest first.
    pub items: Vec<T>,
    /// The page size asked for.
    pub size: u32,
    /// The cursor of the next page; `None` on the last one.
    pub next: Option<String>,
}

/// What a cursor is bound to: the caller's tenant and application and the walk's criteria.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding(Vec<u8>);

impl Binding {
    /// The binding of a walk of `search` by `application` of `tenant`. The criteria are put in
    /// a canonical form (sorted, each part length-prefixed, each list preceded by its label and
    /// its count), so equal criteria given in another order bind alike and no two different
    /// criteria do. `live_at` is left out: each page sets it anew.
    pub fn new(tenant: TenantId, application: ApplicationId, search: &TokenSearch) -> Self {
        let mut out = Vec::with_capacity(128);
        let mut part = |bytes: &[u8]| {
            out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
            out.extend_from_slice(bytes);
        };
        part(tenant.as_uuid().as_bytes());
        part(application.as_uuid().as_bytes());
        // A list's label and count, so that no list's items can pass for the next list's.
        let list = |part: &mut dyn FnMut(&[u8]), label: &[u8], items: &[&[u8]]| {
            part(label);
            part(&(items.len() as u64).to_be_bytes());
            items.iter().for_each(|item| part(item));
        };
        let mut ids: Vec<&[u8]> = search.ids.iter().map(TokenId::as_bytes).collect();
        ids.sort_unstable();
        list(&mut part, b"ids", &ids);
        let mut types: Vec<&[u8]> = search.types.iter().map(|t| t.as_str().as_bytes()).collect();
        types.sort_unstable();
        list(&mut part, b"types", &types);
        let mut pairs: Vec<&(String, String)> = search.metadata.iter().collect();
        pairs.sort();
        let pairs: Vec<&[u8]> = pairs
            .iter()
            .flat_map(|(key, value)| [key.as_bytes(), value.as_bytes()])
            .collect();
        list(&mut part, b"metadata", &pairs);
        let mut destinations: Vec<&[u8]> =
            search.destinations.iter().map(|d| d.as_bytes()).collect();
        destinations.sort_unstable();
        list(&mut part, b"destinations", &destinations);
        let optional = |v: Option<Vec<u8>>| v.map(|b| [vec![1], b].concat()).unwrap_or_default();
        let time =
            |t: Option<OffsetDateTime>| t.map(|t| t.unix_timestamp_nanos().to_be_bytes().to_vec());
        part(&optional(
            search.fingerprint.as_ref().map(|f| f.as_bytes().to_vec()),
        ));
        part(&optional(
            search
                .container_prefix
                .as_ref()
                .map(|c| c.as_str().as_bytes().to_vec()),
        ));
        part(&optional(time(search.created_after)));
        part(&optional(time(search.created_before)));
        // Only when there are any, so that every walk begun before `data:` terms existed
        // binds as it did.
        if !search.data.is_empty() {
            let mut data: Vec<&[u8]> = search.data.iter().map(|d| d.expose().as_bytes()).collect();
            data.sort_unstable();
            list(&mut part, b"data", &data);
        }
        Self(out)
    }
}

/// The HMAC key of cursor tags, held in memory only (as the keyed HMAC state, like the
/// fingerprint key of [`crate::crypto::DataKey`]).
pub struct CursorKey(Hmac<Sha256>);

impl CursorKey {
    /// A key from exactly [`CURSOR_KEY_LEN`] bytes; `None` for any other length.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let key: Zeroizing<[u8; CURSOR_KEY_LEN]> = Zeroizing::new(bytes.try_into().ok()?);
        <Hmac<Sha256> as Mac>::new_from_slice(key.as_ref())
            .ok()
            .map(Self)
    }

    fn tag(&self, binding: &Binding, position: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.0.clone();
        mac.update(TAG_LABEL);
        mac.update(&binding.0);
        mac.update(position);
        mac
    }

    /// The cursor of `position` in the walk `binding` names.
    pub fn seal(&self, binding: &Binding, position: Position) -> String {
        let id = position.id.as_bytes();
        let mut raw = Vec::with_capacity(1 + TIME_LEN + id.len() + TAG_LEN);
        let version = match position.id.as_uuid() {
            Some(_) => VERSION_UUID,
            None => VERSION_CHOSEN,
        };
        raw.push(version);
        raw.extend_from_slice(&position.created_at.unix_timestamp_nanos().to_be_bytes());
        raw.extend_from_slice(id);
        let tag = self.tag(binding, tagged(&raw)).finalize().into_bytes();
        raw.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// The position `cursor` holds, if this key issued it for the walk `binding` names. The tag
    /// is compared in constant time.
    pub fn open(&self, binding: &Binding, cursor: &str) -> Result<Position, CursorError> {
        if cursor.len() > MAX_CURSOR_LEN {
            return Err(CursorError::TooLong);
        }
        let raw = URL_SAFE_NO_PAD
            .decode(cursor)
            .map_err(|_| CursorError::Malformed)?;
        let fits = match raw.first() {
            Some(&VERSION_UUID) => raw.len() == 1 + POSITION_LEN + TAG_LEN,
            Some(&VERSION_CHOSEN) => raw.len() > 1 + TIME_LEN + TAG_LEN,
            Some(_) => return Err(CursorError::Version),
            None => false,
        };
        if !fits {
            return Err(CursorError::Malformed);
        }
        let (signed, tag) = raw.split_at(raw.len() - TAG_LEN);
        self.tag(binding, tagged(signed))
            .verify_slice(tag)
            .map_err(|_| CursorError::Foreign)?;
        let (nanos, id) = signed[1..].split_at(TIME_LEN);
        let nanos = i128::from_be_bytes(nanos.try_into().map_err(|_| CursorError::Malformed)?);
        let id = match signed[0] {
            VERSION_UUID => {
                TokenId::from_uuid(uuid::Uuid::from_slice(id).map_err(|_| CursorError::Malformed)?)
            }
            _ => std::str::from_utf8(id)
                .ok()
                .and_then(|text| text.parse::<TokenId>().ok())
                .filter(|id| id.as_uuid().is_none())
                .ok_or(CursorError::Malformed)?,
        };
        Ok(Position {
            // Only this key writes a valid tag, and only over a stored token's time.
            created_at: OffsetDateTime::from_unix_timestamp_nanos(nanos)
                .map_err(|_| CursorError::Malformed)?,
            id,
        })
    }
}

/// The part of a cursor's bytes its tag covers: the position for version 1 (as cursors were
/// first written), the version byte and the position for version 2.
fn tagged(signed: &[u8]) -> &[u8] {
    match signed.first() {
        Some(&VERSION_UUID) => &signed[1..],
        _ => signed,
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::TokenType;

    fn key(byte: u8) -> CursorKey {
        CursorKey::from_bytes(&[byte; CURSOR_KEY_LEN]).expect("32 bytes")
    }

    fn position() -> Position {
        Position {
            created_at: OffsetDateTime::from_unix_timestamp_nanos(1_790_000_000_123_456_000)
                .expect("time"),
            id: TokenId::new(),
        }
    }

    fn binding(search: &TokenSearch) -> (TenantId, ApplicationId, Binding) {
        let (tenant, app) = (TenantId::new(), ApplicationId::new());
        (tenant, app, Binding::new(tenant, app, search))
    }

    #[test]
    fn a_cursor_opens_to_its_position_for_its_own_walk_only() {
        let search = TokenSearch {
            types: vec![TokenType::Card],
            ..TokenSearch::default()
        };
        let (tenant, app, walk) = binding(&search);
        let at = position();
        let cursor = key(1).seal(&walk, at.clone());
        assert_eq!(cursor.len(), 87);
        assert_eq!(key(1).open(&walk, &cursor), Ok(at));
        assert_eq!(key(2).open(&walk, &cursor), Err(CursorError::Foreign));
        let other_tenant = Binding::new(TenantId::new(), app, &search);
        let other_app = Binding::new(tenant, ApplicationId::new(), &search);
        let other_criteria = Binding::new(tenant, app, &TokenSearch::default());
        for other in [other_tenant, other_app, other_criteria] {
            assert_eq!(key(1).open(&other, &cursor), Err(CursorError::Foreign));
        }
    }

    #[test]
    fn every_changed_byte_is_refused() {
        let (_, _, walk) = binding(&TokenSearch::default());
        let cursor = key(1).seal(&walk, position());
        let raw = URL_SAFE_NO_PAD.decode(&cursor).expect("base64url");
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x01;
            let bad = URL_SAFE_NO_PAD.encode(bad);
            assert!(key(1).open(&walk, &bad).is_err(), "byte {i}");
        }
        for bad in [
            "",
            "AgAAAA==",
            "not base64!",
            &"A".repeat(MAX_CURSOR_LEN + 1),
        ] {
            assert!(key(1).open(&walk, bad).is_err(), "{bad}");
        }
        let mut versioned = raw.clone();
        versioned[0] = 3;
        assert_eq!(
            key(1).open(&walk, &URL_SAFE_NO_PAD.encode(&versioned)),
            Err(CursorError::Version)
        );
        // A UUID position relabelled as a chosen id's is refused: the tags differ.
        versioned[0] = 2;
        assert_eq!(
            key(1).open(&walk, &URL_SAFE_NO_PAD.encode(&versioned)),
            Err(CursorError::Foreign)
        );
    }

    #[test]
    fn chosen_ids_ride_in_cursors_of_their_own_version() {
        let (_, _, walk) = binding(&TokenSearch::default());
        for id in ["1234_phone", &"\u{e9}".repeat(400)] {
            let at = Position {
                id: id.parse().expect("id"),
                ..position()
            };
            let cursor = key(1).seal(&walk, at.clone());
            assert!(cursor.len() <= MAX_CURSOR_LEN, "{}", cursor.len());
            assert_eq!(key(1).open(&walk, &cursor), Ok(at));
            let raw = URL_SAFE_NO_PAD.decode(&cursor).expect("base64url");
            assert_eq!(raw[0], 2);
            for i in [0, 1, 17, raw.len() - 1] {
                let mut bad = raw.clone();
                bad[i] ^= 0x01;
                assert!(
                    key(1).open(&walk, &URL_SAFE_NO_PAD.encode(bad)).is_err(),
                    "{i}"
                );
            }
        }
    }

    #[test]
    fn equal_criteria_in_another_order_bind_alike() {
        let (tenant, app) = (TenantId::new(), ApplicationId::new());
        let pairs = |p: &[(&str, &str)]| TokenSearch {
            metadata: p
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            types: vec![TokenType::Card, TokenType::Bank],
            ..TokenSearch::default()
        };
        let a = pairs(&[("a", "1"), ("b", "2")]);
        let mut b = pairs(&[("b", "2"), ("a", "1")]);
        b.types.reverse();
        assert_eq!(Binding::new(tenant, app, &a), Binding::new(tenant, app, &b));
        // Length prefixes keep `("ab", "")` and `("a", "b")` apart.
        assert_ne!(
            Binding::new(tenant, app, &pairs(&[("ab", "")])),
            Binding::new(tenant, app, &pairs(&[("a", "b")]))
        );
        assert_eq!(format!("{:?}", key(1)), "CursorKey(***)");
    }

    #[test]
    fn one_lists_items_never_pass_for_the_next_lists() {
        let (tenant, app) = (TenantId::new(), ApplicationId::new());
        // Without counts both encoded as: metadata, destinations, api.x.com, destinations.
        let in_metadata = TokenSearch {
            metadata: vec![("destinations".into(), "api.x.com".into())],
            ..TokenSearch::default()
        };
        let in_destinations = TokenSearch {
            destinations: vec!["api.x.com".into(), "destinations".into()],
            ..TokenSearch::default()
        };
        assert_ne!(
            Binding::new(tenant, app, &in_metadata),
            Binding::new(tenant, app, &in_destinations)
        );
    }
}
