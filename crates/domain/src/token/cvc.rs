//! A card's CVC, kept only for a while after the token's creation (docs/operations.md, "CVC
//! retention"): PCI DSS 3.3.1.2 forbids storing it after authorization.
//!
//! Nothing kept longer than the CVC is derived from it: a card's search indexes, fingerprint
//! expression and alias id render over the card without its `cvc` ([`without_cvc`]).

use std::borrow::Cow;

use serde_json::Value;
use time::{Duration, OffsetDateTime};

use super::token_type::TokenType;

/// The member of a card's data that holds its CVC.
const CVC: &str = "cvc";
/// The retention when none is set: an hour, as Basis Theory's.
pub const DEFAULT_CVC_RETENTION: Duration = Duration::hours(1);
/// The longest retention accepted: a week (a CVC is needed for the authorization only).
pub const MAX_CVC_RETENTION: Duration = Duration::days(7);

/// How long a card's CVC is kept after the token's creation (`--cvc-retention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CvcRetention(Duration);

impl Default for CvcRetention {
    fn default() -> Self {
        Self(DEFAULT_CVC_RETENTION)
    }
}

impl CvcRetention {
    /// Keeps a CVC for `retention` (clamped to `0..=`[`MAX_CVC_RETENTION`]); zero: never
    /// stored.
    pub fn new(retention: Duration) -> Self {
        Self(retention.clamp(Duration::ZERO, MAX_CVC_RETENTION))
    }

    /// The retention.
    pub fn duration(self) -> Duration {
        self.0
    }

    /// Whether the CVC of a token created at `created_at` is gone at `now`: the retention has
    /// passed (at once when it is zero).
    pub fn is_past(self, created_at: OffsetDateTime, now: OffsetDateTime) -> bool {
        self.0 == Duration::ZERO || created_at + self.0 <= now
    }

    /// The creation time at or before which a CVC is gone at `now`.
    pub fn cutoff(self, now: OffsetDateTime) -> OffsetDateTime {
        now - self.0
    }
}

/// Whether `data` of a `token_type` token holds a CVC: a card's object with a `cvc` member.
pub fn holds_cvc(token_type: TokenType, data: &Value) -> bool {
    token_type == TokenType::Card && data.get(CVC).is_some()
}

/// Removes a card's CVC from `data`; `true` when there was one.
pub fn remove_cvc(token_type: TokenType, data: &mut Value) -> bool {
    match data {
        Value::Object(members) if token_type == TokenType::Card => members.remove(CVC).is_some(),
        _ => false,
    }
}

/// `data` without a card's CVC, for what is rendered from it and kept longer than the CVC
/// (search indexes, fingerprint expressions, alias ids); borrowed when there is none.
pub fn without_cvc(token_type: TokenType, data: &Value) -> Cow<'_, Value> {
    if holds_cvc(token_type, data) {
        let mut owned = data.clone();
        remove_cvc(token_type, &mut owned);
        Cow::Owned(owned)
    } else {
        Cow::Borrowed(data)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_a_cards_cvc_is_removed() {
        let mut card = json!({"number": "4242424242424242", "cvc": "123"});
        assert!(holds_cvc(TokenType::Card, &card));
        assert_eq!(
            without_cvc(TokenType::Card, &card).as_ref(),
            &json!({"number": "4242424242424242"})
        );
        assert!(remove_cvc(TokenType::Card, &mut card));
        assert!(!remove_cvc(TokenType::Card, &mut card));
        assert_eq!(card, json!({"number": "4242424242424242"}));
        let mut other = json!({"cvc": "123"});
        assert!(!holds_cvc(TokenType::Token, &other));
        assert!(!remove_cvc(TokenType::Token, &mut other));
        assert_eq!(other, json!({"cvc": "123"}));
    }

    #[test]
    fn the_retention_counts_from_creation_and_zero_keeps_nothing() {
        let created = OffsetDateTime::UNIX_EPOCH + Duration::days(20_000);
        let hour = CvcRetention::default();
        assert!(!hour.is_past(created, created + Duration::minutes(59)));
        assert!(hour.is_past(created, created + Duration::hours(1)));
        assert_eq!(hour.cutoff(created), created - Duration::hours(1));
        let never = CvcRetention::new(Duration::ZERO);
        assert!(never.is_past(created, created));
        assert_eq!(
            CvcRetention::new(Duration::days(30)).duration(),
            MAX_CVC_RETENTION
        );
        assert_eq!(
            CvcRetention::new(-Duration::SECOND).duration(),
            Duration::ZERO
        );
    }
}
