//! A webhook as a tenant registers it (Basis Theory's API: `name`, `url`, `notify_email`,
//! `events`, `status`), how its input is checked, and where its delivery stands.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::event_type::WebhookEventType;
use crate::{
    ids::{ApplicationId, TenantId, WebhookId},
    network,
    validation::{char_len, check_no_nul, ValidationErrors},
};

/// Most webhooks a tenant holds at once (as Basis Theory).
pub const MAX_WEBHOOKS_PER_TENANT: u32 = 5;
/// Longest name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Longest URL, in characters.
pub const MAX_URL_CHARS: usize = 400;
/// Longest `notify_email`, in characters (RFC 5321's path limit).
pub const MAX_EMAIL_CHARS: usize = 254;

/// Whether a webhook is delivered to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum WebhookStatus {
    /// Events are delivered.
    Enabled,
    /// Nothing is delivered (set by its owner, or by the deliverer after continuous failure)
    /// until it is enabled again with `PUT`.
    Disabled,
}

impl WebhookStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookStatus::Enabled => "enabled",
            WebhookStatus::Disabled => "disabled",
        }
    }

    /// Parses the wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "enabled" => Some(WebhookStatus::Enabled),
            "disabled" => Some(WebhookStatus::Disabled),
            _ => None,
        }
    }
}

/// The body of `POST /webhooks` and `PUT /webhooks/{id}`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WebhookInput {
    /// A name for people.
    pub name: String,
    /// Where events are POSTed: `https` (plain `http` only to private addresses, and only
    /// where the deployment allows private destinations).
    pub url: String,
    /// Kept and shown; Tessera sends no email (docs/webhooks.md, "Disabling").
    #[serde(default)]
    pub notify_email: Option<String>,
    /// The event types to deliver (`token.created`, …; `token:created` is taken too).
    pub events: Vec<String>,
    /// `enabled` (the default) or `disabled`.
    #[serde(default)]
    pub status: Option<WebhookStatus>,
}

/// A checked [`WebhookInput`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    /// The name.
    pub name: String,
    /// The URL, as given.
    pub url: String,
    /// The address to tell, if any.
    pub notify_email: Option<String>,
    /// The event types, without repeats, in the order given.
    pub events: Vec<WebhookEventType>,
    /// The status asked for (`None`: enabled on create, unchanged on replace).
    pub status: Option<WebhookStatus>,
}

/// A registered webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Its id.
    pub id: WebhookId,
    /// Its tenant.
    pub tenant_id: TenantId,
    /// What it is and where it sends.
    pub settings: WebhookSettings,
    /// Enabled or disabled.
    pub status: WebhookStatus,
    /// Who registered it.
    pub created_by: ApplicationId,
    /// When.
    pub created_at: OffsetDateTime,
    /// Who last replaced it.
    pub modified_by: Option<ApplicationId>,
    /// When.
    pub modified_at: Option<OffsetDateTime>,
}

/// Where a webhook's delivery stands: its place in its tenant's audit chain, and its run of
/// failures (docs/webhooks.md, "Delivery").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookCursor {
    /// The last chain position delivered (or passed over: not subscribed, or a refusal).
    pub seq: i64,
    /// That position's hash: the next event must link to it.
    pub hash: [u8; 32],
    /// Of the webhook events the next audit event stands for (several for a bulk call), how
    /// many were already sent or passed over.
    pub sub: u32,
    /// The first failure of the current run of failures, if failing.
    pub failing_since: Option<OffsetDateTime>,
    /// Failed attempts in the current run.
    pub attempts: u32,
    /// No attempt before this instant (backoff).
    pub next_attempt_at: Option<OffsetDateTime>,
    /// Why the last attempt failed, as shown to the tenant (a status code or a kind of
    /// network error; never the receiver's body).
    pub last_error: Option<String>,
    /// When an event was last delivered.
    pub last_delivered_at: Option<OffsetDateTime>,
    /// When the deliverer disabled it, after continuous failure.
    pub disabled_at: Option<OffsetDateTime>,
}

impl WebhookCursor {
    /// A cursor at `seq`/`hash` with no failures.
    pub fn at(seq: i64, hash: [u8; 32]) -> Self {
        Self {
            seq,
            hash,
            sub: 0,
            failing_since: None,
            attempts: 0,
            next_attempt_at: None,
            last_error: None,
            last_delivered_at: None,
            disabled_at: None,
        }
    }
}

/// Checks `input`. `allow_private`: the deployment allows private destinations, and with
/// them plain `http` to private addresses (docs/webhooks.md, "Where events may go").
pub fn check_input(
    input: WebhookInput,
    allow_private: bool,
) -> Result<WebhookSettings, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let name = input.name.trim().to_string();
    if name.is_empty() || char_len(&name) > MAX_NAME_CHARS {
        errors.add("name", format!("must be 1 to {MAX_NAME_CHARS} characters"));
    }
    check_no_nul(&name, "name", &mut errors);
    if let Err(why) = check_url(&input.url, allow_private) {
        errors.add("url", why);
    }
    if let Some(email) = &input.notify_email {
        if !plausible_email(email) {
            errors.add("notify_email", "must be an email address");
        }
    }
    let mut events = Vec::new();
    if input.events.is_empty() {
        errors.add("events", "must name at least one event type");
    }
    for raw in &input.events {
        match raw.parse::<WebhookEventType>() {
            Ok(t) if !events.contains(&t) => events.push(t),
            Ok(_) => {}
            Err(e) => errors.add("events", e.to_string()),
        }
    }
    errors.into_result()?;
    Ok(WebhookSettings {
        name,
        url: input.url,
        notify_email: input.notify_email.filter(|e| !e.is_empty()),
        events,
        status: input.status,
    })
}

/// Checks a receiver's URL: absolute, `https`, a host, no credentials or fragment; an IP
/// literal in an internal range, or plain `http`, only with private destinations allowed,
/// and plain `http` then only to an internal address. Host names are checked again when the
/// deliverer connects.
pub fn check_url(raw: &str, allow_private: bool) -> Result<url::Url, String> {
    if char_len(raw) > MAX_URL_CHARS {
        return Err(format!("must be at most {MAX_URL_CHARS} characters"));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("must be an absolute URL ({e})"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry credentials".into());
    }
    if url.fragment().is_some() {
        return Err("must not have a fragment".into());
    }
    let internal = match url.host() {
        None => return Err("must have a host".into()),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => network::is_internal(ip.into()),
        Some(url::Host::Ipv6(ip)) => network::is_internal(ip.into()),
    };
    match url.scheme() {
        "https" if internal && !allow_private => {
            Err("must not point at a private, loopback or link-local address".into())
        }
        "https" => Ok(url),
        "http" if allow_private && internal => Ok(url),
        "http" => Err("must use https".into()),
        other => Err(format!("must use https, not {other}")),
    }
}

fn plausible_email(email: &str) -> bool {
    let Some((local, domain)) = email.rsplit_once('@') else {
        return false;
    };
    char_len(email) <= MAX_EMAIL_CHARS
        && !local.is_empty()
        && domain.contains('.')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(url: &str, events: &[&str]) -> WebhookInput {
        WebhookInput {
            name: "hook".into(),
            url: url.into(),
            notify_email: Some("ops@example.com".into()),
            events: events.iter().map(|e| e.to_string()).collect(),
            status: None,
        }
    }

    #[test]
    fn the_documented_example_is_accepted() {
        let s = check_input(input("https://www.example.com", &["token.created"]), false)
            .expect("valid");
        assert_eq!(s.events, vec![WebhookEventType::TokenCreated]);
        let s = check_input(
            input(
                "https://www.example.com",
                &["token:created", "token.created"],
            ),
            false,
        )
        .expect("valid");
        assert_eq!(s.events.len(), 1);
    }

    #[test]
    fn receivers_are_https_and_public_unless_the_deployment_allows_private_ones() {
        for (url, private, ok) in [
            ("https://hooks.example.com/x", false, true),
            ("http://hooks.example.com/x", false, false),
            ("http://hooks.example.com/x", true, false),
            ("http://127.0.0.1:9000/x", false, false),
            ("http://127.0.0.1:9000/x", true, true),
            ("https://10.0.0.5/x", false, false),
            ("https://169.254.169.254/latest", false, false),
            ("https://[::1]/x", false, false),
            ("http://localhost:9/x", true, true),
            ("ftp://example.com/x", true, false),
            ("https://user:pw@example.com/x", false, false),
            ("https://example.com/x#frag", false, false),
            ("/relative", false, false),
        ] {
            assert_eq!(
                check_url(url, private).is_ok(),
                ok,
                "{url} private={private}"
            );
        }
    }

    #[test]
    fn bad_fields_are_each_named() {
        let mut bad = input("http://example.com", &["3ds.session.created"]);
        bad.name = " ".into();
        bad.notify_email = Some("nobody".into());
        let errors = check_input(bad, false).expect_err("invalid");
        let fields: Vec<_> = errors.fields().keys().cloned().collect();
        assert_eq!(fields, ["events", "name", "notify_email", "url"]);
        let none = check_input(input("https://example.com", &[]), false).expect_err("empty");
        assert!(none.fields().contains_key("events"));
    }
}
