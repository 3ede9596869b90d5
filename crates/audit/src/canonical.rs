//! The canonical encoding of an event: its fields (with its position `seq`) as JSON with keys
//! in byte order and no whitespace, timestamps as RFC 3339 with six fractional digits. It is
//! what is hashed *and* what is stored: a block keeps each event as exactly these bytes, and
//! listing decodes them, so what a reader is shown is what the chain vouches for (rows stored
//! as separate columns could be recased without changing their hash).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use tessera_domain::audit::{Actor, AuditAction, AuditEvent, Outcome, Pruned, ResourceId};
use tessera_domain::{
    hex,
    ids::{ProxyId, TenantId},
    timestamp,
};

/// Domain separation of the chain's hashes.
const DOMAIN: &[u8] = b"tessera-audit-v1\n";

/// The encoded form: fields in byte order of their names, so that serde's compact output is
/// the canonical JSON without building a JSON tree per event on the hot path. `count` and
/// `pruned` appear only when set, so events from before they existed encode as they did.
#[derive(Serialize)]
struct Fields<'a> {
    action: &'a str,
    actor: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    destination: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    ephemeral: bool,
    id: Uuid,
    occurred_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    origin: Option<&'a str>,
    outcome: &'a str,
    proxy_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pruned: Option<PrunedFields>,
    reason: Option<&'a str>,
    request_id: Option<&'a str>,
    resource_ids: &'a [ResourceId],
    seq: i64,
    tenant_id: Option<Uuid>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrunedFields {
    hash: String,
    through: i64,
}

/// The encoded event at position `seq`.
pub fn encode(seq: i64, event: &AuditEvent) -> Vec<u8> {
    // Strings, numbers, arrays and nulls always serialise.
    serde_json::to_vec(&fields(seq, event)).unwrap_or_default()
}

/// Appends `event`'s encoding with its position left out to `out`, and returns where in `out`
/// the position goes (the bytes before it end with `"seq":`). Writing the position's digits
/// there gives exactly [`encode`]'s bytes ([`crate::encoded`]).
pub(crate) fn encode_unplaced(event: &AuditEvent, out: &mut Vec<u8>) -> usize {
    /// What follows the placeholder position 0: only `tenant_id` comes after `seq`, and its
    /// value (a UUID or null) holds no quote, so the last occurrence is the field itself (a
    /// string value earlier in the object escapes its quotes).
    const AFTER: &[u8] = b"\"seq\":0,\"tenant_id\":";
    let start = out.len();
    // Strings, numbers, arrays and nulls always serialise.
    let _ = serde_json::to_writer(&mut *out, &fields(0, event));
    let at = out[start..]
        .windows(AFTER.len())
        .rposition(|w| w == AFTER)
        .map_or(out.len(), |i| start + i + b"\"seq\":".len());
    if at < out.len() {
        out.remove(at);
    }
    at
}

fn fields(seq: i64, event: &AuditEvent) -> Fields<'_> {
    Fields {
        action: event.action.as_str(),
        actor: event.actor.to_wire(),
        count: event.count,
        destination: event.destination.as_deref(),
        ephemeral: event.ephemeral,
        id: event.id,
        occurred_at: timestamp::format(event.occurred_at),
        origin: event.origin.as_deref(),
        outcome: event.outcome.as_str(),
        proxy_id: event.proxy_id.map(|p| *p.as_uuid()),
        pruned: event.pruned.map(|p| PrunedFields {
            hash: hex::encode(&p.last_hash),
            through: p.through_seq,
        }),
        reason: event.reason.as_deref(),
        request_id: event.request_id.as_deref(),
        resource_ids: &event.resource_ids,
        seq,
        tenant_id: event.tenant_id.map(|t| *t.as_uuid()),
    }
}

/// An event as the per-event table of the first audit release (migration 000006) stored it:
/// each field as the text written then.
#[derive(Debug, Clone, Copy)]
pub struct LegacyColumns<'a> {
    /// `action`.
    pub action: &'a str,
    /// `actor`.
    pub actor: &'a str,
    /// `event_id`.
    pub id: &'a str,
    /// `occurred_at`.
    pub occurred_at: time::OffsetDateTime,
    /// `outcome`.
    pub outcome: &'a str,
    /// `proxy_id`.
    pub proxy_id: Option<&'a str>,
    /// `reason`.
    pub reason: Option<&'a str>,
    /// `request_id`.
    pub request_id: Option<&'a str>,
    /// `resource_ids`, parsed from its JSON array.
    pub resource_ids: &'a [String],
    /// `seq`.
    pub seq: i64,
    /// The chain's tenant (`None` for the deployment's chain).
    pub tenant_id: Option<&'a str>,
}

/// The encoding of a legacy row, from its stored text as it is (not parsed and re-formatted),
/// so that a row edited before it was moved into a block still fails its hash. For an
/// unedited row these are exactly the bytes that were hashed when it was written.
pub fn encode_legacy(c: &LegacyColumns<'_>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Legacy<'a> {
        action: &'a str,
        actor: &'a str,
        id: &'a str,
        occurred_at: String,
        outcome: &'a str,
        proxy_id: Option<&'a str>,
        reason: Option<&'a str>,
        request_id: Option<&'a str>,
        resource_ids: &'a [String],
        seq: i64,
        tenant_id: Option<&'a str>,
    }
    serde_json::to_vec(&Legacy {
        action: c.action,
        actor: c.actor,
        id: c.id,
        occurred_at: timestamp::format(c.occurred_at),
        outcome: c.outcome,
        proxy_id: c.proxy_id,
        reason: c.reason,
        request_id: c.request_id,
        resource_ids: c.resource_ids,
        seq: c.seq,
        tenant_id: c.tenant_id,
    })
    .unwrap_or_default()
}

/// The hash of the event encoded as `line` after an event hashing to `prev`.
pub fn link_hash(prev: &[u8; 32], line: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN);
    hasher.update(prev);
    hasher.update(line);
    hasher.finalize().into()
}

/// The encoded form read back, field by field as stored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    action: String,
    actor: String,
    #[serde(default)]
    count: Option<u32>,
    #[serde(default)]
    destination: Option<String>,
    #[serde(default)]
    ephemeral: bool,
    id: String,
    occurred_at: String,
    #[serde(default)]
    origin: Option<String>,
    outcome: String,
    proxy_id: Option<String>,
    #[serde(default)]
    pruned: Option<PrunedFields>,
    reason: Option<String>,
    request_id: Option<String>,
    resource_ids: Vec<String>,
    seq: i64,
    tenant_id: Option<String>,
}

/// Why a stored line is not an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an audit event: {0}")]
pub struct DecodeError(pub String);

fn bad(what: &str, raw: &str) -> DecodeError {
    DecodeError(format!("invalid {what} `{raw}`"))
}

/// A lowercase hyphenated UUID, as [`encode`] writes them: anything else is refused, so a
/// recased id never reads as the id it imitates.
fn uuid(what: &str, raw: &str) -> Result<Uuid, DecodeError> {
    raw.parse::<Uuid>()
        .ok()
        .filter(|u| u.hyphenated().to_string() == raw)
        .ok_or_else(|| bad(what, raw))
}

/// A resource id as [`encode`] writes them: a lowercase hyphenated UUID, or a chosen token id
/// as it was chosen.
fn resource_id(raw: &str) -> Result<ResourceId, DecodeError> {
    raw.parse::<ResourceId>()
        .ok()
        .filter(|id| id.to_string() == raw)
        .ok_or_else(|| bad("resource id", raw))
}

/// A hash as [`encode`] writes them: 64 lowercase hex digits (an uppercase digit would be a
/// second spelling of the same hash).
fn hash(what: &str, raw: &str) -> Result<[u8; 32], DecodeError> {
    hex::decode_array(raw)
        .ok()
        .filter(|h| hex::encode(h) == raw)
        .ok_or_else(|| bad(what, raw))
}

/// The `id` a stored line names, when it holds one that is a UUID (in any spelling), even if
/// the line is not a valid event: so that a report on a line that cannot be decoded (an actor
/// recased, say) still names the event.
pub(crate) fn read_id(line: &[u8]) -> Option<Uuid> {
    #[derive(Deserialize)]
    struct Id {
        id: String,
    }
    let Id { id } = serde_json::from_slice(line).ok()?;
    Uuid::try_parse(&id).ok()
}

/// Decodes a stored line into its position and event.
pub fn decode(line: &[u8]) -> Result<(i64, AuditEvent), DecodeError> {
    let s: Stored = serde_json::from_slice(line).map_err(|e| DecodeError(e.to_string()))?;
    let event = AuditEvent {
        id: uuid("event id", &s.id)?,
        tenant_id: s
            .tenant_id
            .as_deref()
            .map(|t| uuid("tenant id", t).map(TenantId::from_uuid))
            .transpose()?,
        occurred_at: timestamp::parse(&s.occurred_at)
            .filter(|at| timestamp::format(*at) == s.occurred_at)
            .ok_or_else(|| bad("time", &s.occurred_at))?,
        action: s
            .action
            .parse::<AuditAction>()
            .map_err(|e| DecodeError(e.to_string()))?,
        outcome: Outcome::parse(&s.outcome).ok_or_else(|| bad("outcome", &s.outcome))?,
        actor: Actor::parse(&s.actor)
            .filter(|a| a.to_wire() == s.actor)
            .ok_or_else(|| bad("actor", &s.actor))?,
        resource_ids: s
            .resource_ids
            .iter()
            .map(|id| resource_id(id))
            .collect::<Result<_, _>>()?,
        proxy_id: s
            .proxy_id
            .as_deref()
            .map(|p| uuid("proxy id", p).map(ProxyId::from_uuid))
            .transpose()?,
        request_id: s.request_id,
        reason: s.reason,
        count: s.count,
        destination: s.destination,
        ephemeral: s.ephemeral,
        origin: s.origin,
        pruned: s
            .pruned
            .map(|p| {
                Ok::<_, DecodeError>(Pruned {
                    through_seq: p.through,
                    last_hash: hash("pruned hash", &p.hash)?,
                })
            })
            .transpose()?,
    };
    Ok((s.seq, event))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use tessera_domain::audit::{Actor, AuditAction};

    fn sample() -> AuditEvent {
        let mut event = AuditEvent::denied(
            Some(TenantId::new()),
            AuditAction::TokenDetokenized,
            Actor::Anonymous,
            vec![Uuid::new_v4().into(), Uuid::new_v4().into()],
            "a \"quoted\" reason \u{e9}\n",
        )
        .with_request_id("req-1");
        event.proxy_id = Some(ProxyId::new());
        event
    }

    /// The fast encoding is byte for byte the canonical JSON of the event's fields.
    #[test]
    fn the_encoding_is_canonical_json() {
        let event = sample();
        let tree = json!({
            "id": event.id.to_string(),
            "tenant_id": event.tenant_id.map(|t| t.to_string()),
            "seq": 7,
            "occurred_at": timestamp::format(event.occurred_at),
            "action": event.action.as_str(),
            "outcome": event.outcome.as_str(),
            "actor": event.actor.to_wire(),
            "resource_ids": event.resource_ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "proxy_id": event.proxy_id.map(|p| p.to_string()),
            "request_id": event.request_id,
            "reason": event.reason,
        });
        let mut expected = Vec::new();
        tessera_domain::token::canonical_json(&tree, &mut expected);
        assert_eq!(
            String::from_utf8(encode(7, &event)).expect("utf-8"),
            String::from_utf8(expected).expect("utf-8")
        );
        let mut none = event.clone();
        (none.proxy_id, none.reason, none.request_id, none.tenant_id) = (None, None, None, None);
        assert!(String::from_utf8(encode(1, &none))
            .expect("utf-8")
            .contains(r#""proxy_id":null,"reason":null,"request_id":null"#));
    }

    #[test]
    fn lines_decode_to_the_event_they_encode() {
        let event = sample();
        assert_eq!(decode(&encode(9, &event)), Ok((9, event.clone())));
        let mut folded = event.clone();
        folded.count = Some(41);
        assert_eq!(decode(&encode(2, &folded)), Ok((2, folded)));
        let brokered = event
            .clone()
            .with_destination(Some("api.stripe.com:443"), true);
        let line = String::from_utf8(encode(4, &brokered)).expect("utf-8");
        assert!(line.contains(r#""destination":"api.stripe.com:443","ephemeral":true,"id""#));
        assert_eq!(decode(line.as_bytes()), Ok((4, brokered)));
        // A browser call's origin sits in name order, and only when set: events from before
        // it existed encode exactly as they did.
        assert!(!String::from_utf8_lossy(&encode(4, &event)).contains("origin"));
        let browsed = event.clone().with_origin(Some("https://shop.example"));
        let line = String::from_utf8(encode(5, &browsed)).expect("utf-8");
        assert!(
            line.contains(r#","origin":"https://shop.example","outcome":"#),
            "{line}"
        );
        assert_eq!(decode(line.as_bytes()), Ok((5, browsed)));
        let pruning = AuditEvent::pruning(None, 120, [7; 32], 120);
        let line = encode(121, &pruning);
        assert!(String::from_utf8_lossy(&line).contains(r#""pruned":{"hash":"0707"#));
        assert_eq!(decode(&line), Ok((121, pruning)));
    }

    /// What a reader is shown is what was hashed: a recased or reformatted field does not
    /// decode as the value it imitates.
    #[test]
    fn recased_or_reformatted_fields_do_not_decode() {
        let event = sample();
        let line = String::from_utf8(encode(3, &event)).expect("utf-8");
        let id = event.id.to_string();
        for forged in [
            line.replace(&id, &id.to_uppercase()),
            line.replace("token.detokenized", "TOKEN.DETOKENIZED"),
            line.replace(r#""seq":3"#, r#""seq":3,"extra":1"#),
            line.replace("+00:00\"", "Z\""),
        ] {
            if forged != line {
                assert!(decode(forged.as_bytes()).is_err(), "{forged}");
            }
        }
    }
}
