//! What a receiver gets: Basis Theory's envelope (`event.id`, `type`, `timestamp`,
//! `tenant_id`, `trace_id`, `data` with `data.actor`, and `delivered_at`), made from one audit
//! event, and encoded as stable JSON (keys sorted, no whitespace), the bytes that are signed
//! (docs/webhooks.md, "Events" and "Signatures").
//!
//! An event carries what the trail recorded (ids, the action, the actor, the time) and nothing
//! read at send time: so every re-send of an `event.id` carries the same `event`, whether or
//! not the resource still exists, and never token data, metadata, keys or proxy
//! configuration.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::event_type::WebhookEventType;
use crate::{
    audit::{Actor, AuditEvent, Outcome},
    timestamp,
};

/// One event to deliver, without its `delivered_at`.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEvent {
    /// `event.id`: the audit event's id, or for the n-th of several events made from one
    /// audit event (a bulk `/tokenize`), an id derived from it, the same at every re-send.
    pub id: Uuid,
    /// Its type.
    pub event_type: WebhookEventType,
    /// The `event` object.
    pub event: Value,
}

impl WebhookEvent {
    /// The webhook events `audit` stands for: none for a refusal or an action not offered;
    /// else one per resource the type is about.
    pub fn from_audit(audit: &AuditEvent) -> Vec<WebhookEvent> {
        if audit.outcome != Outcome::Success {
            return Vec::new();
        }
        let (Some(event_type), Some(tenant)) =
            (WebhookEventType::of_action(audit.action), audit.tenant_id)
        else {
            return Vec::new();
        };
        let ids: Vec<String> = audit.resource_ids.iter().map(|r| r.to_string()).collect();
        let datas = data_of(event_type, &ids);
        let many = datas.len() > 1;
        datas
            .into_iter()
            .enumerate()
            .map(|(i, mut data)| {
                let id = if many {
                    derived_id(audit.id, i)
                } else {
                    audit.id
                };
                data.insert("actor".into(), actor(audit.actor));
                let trace = audit.request_id.clone().unwrap_or_else(|| id.to_string());
                WebhookEvent {
                    id,
                    event_type,
                    event: json!({
                        "id": id.to_string(),
                        "type": event_type.as_str(),
                        "timestamp": timestamp::format(audit.occurred_at),
                        "tenant_id": tenant.to_string(),
                        "trace_id": trace,
                        "data": Value::Object(data),
                    }),
                }
            })
            .collect()
    }

    /// The body to POST: `{"delivered_at": …, "event": …}` as stable JSON.
    pub fn body(&self, delivered_at: time::OffsetDateTime) -> Vec<u8> {
        let envelope = json!({
            "event": self.event,
            "delivered_at": timestamp::format(delivered_at),
        });
        stable_json(&envelope).into_bytes()
    }
}

/// The `data` objects of one audit event of `event_type` on resources `ids` (in the order
/// the trail records them).
fn data_of(event_type: WebhookEventType, ids: &[String]) -> Vec<Map<String, Value>> {
    use WebhookEventType as T;
    let one = |key: &str, value: Value| {
        let mut m = Map::new();
        m.insert(key.to_string(), value);
        m
    };
    match event_type {
        T::TokenPropertyExpired => ids
            .iter()
            .map(|id| one("token", json!({"id": id, "property_name": "cvc"})))
            .collect(),
        T::TokenCreated | T::TokenUpdated | T::TokenDeleted | T::TokenExpired | T::TokenRead => ids
            .iter()
            .map(|id| one("token", json!({"id": id})))
            .collect(),
        T::ApplicationCreated | T::ApplicationUpdated | T::ApplicationDeleted => ids
            .first()
            .map(|id| one("application", json!({"id": id})))
            .into_iter()
            .collect(),
        T::ApplicationKeyCreated | T::ApplicationKeyDeleted => {
            let mut key = Map::new();
            if let Some(key_id) = ids.get(1) {
                key.insert("id".into(), json!(key_id));
            }
            if let Some(app) = ids.first() {
                key.insert("application_id".into(), json!(app));
            }
            vec![one("application_key", Value::Object(key))]
        }
        T::ProxyCreated | T::ProxyUpdated | T::ProxyDeleted => ids
            .first()
            .map(|id| one("proxy", json!({"id": id})))
            .into_iter()
            .collect(),
    }
}

/// `data.actor`: an application by its id, else the service (`system`) or the operator's
/// command line (`operator`).
fn actor(actor: Actor) -> Value {
    let (id, kind) = match actor {
        Actor::Application(id) => (id.to_string(), "application"),
        Actor::Anonymous => ("anonymous".to_string(), "anonymous"),
        Actor::Operator => ("operator".to_string(), "admin"),
        Actor::System => ("system".to_string(), "system"),
    };
    json!({"id": id, "type": kind, "name": id})
}

/// The `n`-th id derived from `audit`: SHA-256 of both, shaped as a UUID.
fn derived_id(audit: Uuid, n: usize) -> Uuid {
    let mut h = Sha256::new();
    h.update(b"tessera webhook event\0");
    h.update(audit.as_bytes());
    h.update((n as u64).to_be_bytes());
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// `value` as `json-stable-stringify` writes it: object keys sorted by code unit, no
/// whitespace, strings escaped as `JSON.stringify` does.
pub fn stable_json(value: &Value) -> String {
    let mut out = String::new();
    write_stable(value, &mut out);
    out
}

fn write_stable(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            // JavaScript compares strings by UTF-16 code units.
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_stable(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_stable(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        other => out.push_str(&other.to_string()),
    }
}

/// A string as `JSON.stringify` escapes it.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        audit::{AuditAction, ResourceId},
        ids::{ApplicationId, TenantId},
    };

    fn audit(action: AuditAction, ids: Vec<ResourceId>) -> AuditEvent {
        AuditEvent::success(
            TenantId::new(),
            action,
            Actor::Application(ApplicationId::new()),
            ids,
        )
    }

    #[test]
    fn stable_json_sorts_keys_and_escapes_as_javascript_does() {
        let v = json!({"b": [1, {"z": null, "a": true}], "a": "x\"\n\u{1}é", "B": 2});
        assert_eq!(
            stable_json(&v),
            r#"{"B":2,"a":"x\"\n\u0001é","b":[1,{"a":true,"z":null}]}"#
        );
    }

    #[test]
    fn a_bulk_create_is_one_event_per_token_with_ids_stable_across_re_sends() {
        let ids: Vec<ResourceId> = (0..3).map(|_| Uuid::new_v4().into()).collect();
        let a = audit(AuditAction::TokenCreated, ids.clone());
        let events = WebhookEvent::from_audit(&a);
        assert_eq!(events.len(), 3);
        assert_eq!(events, WebhookEvent::from_audit(&a));
        let distinct: std::collections::HashSet<_> = events.iter().map(|e| e.id).collect();
        assert_eq!(distinct.len(), 3);
        for (e, id) in events.iter().zip(&ids) {
            assert_eq!(e.event["data"]["token"]["id"], json!(id.to_string()));
            assert_eq!(e.event["type"], "token.created");
            assert_eq!(e.event["data"]["actor"]["type"], "application");
        }
        let single = audit(AuditAction::TokenDeleted, vec![ids[0].clone()]);
        assert_eq!(WebhookEvent::from_audit(&single)[0].id, single.id);
    }

    #[test]
    fn refusals_and_unoffered_actions_make_no_event() {
        let mut denied = audit(AuditAction::TokenRead, vec![Uuid::new_v4().into()]);
        denied.outcome = Outcome::Denied;
        assert!(WebhookEvent::from_audit(&denied).is_empty());
        let detok = audit(AuditAction::TokenDetokenized, vec![Uuid::new_v4().into()]);
        assert!(WebhookEvent::from_audit(&detok).is_empty());
    }

    #[test]
    fn the_envelope_has_basis_theorys_fields_and_nothing_else() {
        let app = Uuid::new_v4();
        let key = Uuid::new_v4();
        let a = audit(
            AuditAction::ApplicationKeyRevoked,
            vec![app.into(), key.into()],
        );
        let e = &WebhookEvent::from_audit(&a)[0];
        let body: Value =
            serde_json::from_slice(&e.body(timestamp::now())).expect("the body is JSON");
        let mut top: Vec<_> = body.as_object().expect("object").keys().cloned().collect();
        top.sort();
        assert_eq!(top, ["delivered_at", "event"]);
        let mut fields: Vec<_> = body["event"]
            .as_object()
            .expect("event")
            .keys()
            .cloned()
            .collect();
        fields.sort();
        assert_eq!(
            fields,
            ["data", "id", "tenant_id", "timestamp", "trace_id", "type"]
        );
        assert_eq!(body["event"]["type"], "application.key.deleted");
        assert_eq!(
            body["event"]["data"]["application_key"],
            json!({"id": key.to_string(), "application_id": app.to_string()})
        );
        let cvc = audit(AuditAction::TokenCvcRemoved, vec![Uuid::new_v4().into()]);
        let e = &WebhookEvent::from_audit(&cvc)[0];
        assert_eq!(e.event["type"], "token.property.expired");
        assert_eq!(e.event["data"]["token"]["property_name"], "cvc");
        assert_eq!(e.event["data"]["actor"]["type"], "application");
    }
}
