//! Every management route's path, written once: the route files register them and name them
//! in their OpenAPI entries, and the audit table of refused calls (`audit.rs`) matches on them.

/// The applications: `/applications`.
pub(crate) const APPLICATIONS: &str = "/applications";

/// The calling key's application: `/applications/key`.
pub(crate) const APPLICATION_BY_KEY: &str = "/applications/key";

/// One application: `/applications/{id}`.
pub(crate) const APPLICATION: &str = "/applications/{id}";

/// An application's key, regenerated: `/applications/{id}/regenerate`.
pub(crate) const REGENERATE: &str = "/applications/{id}/regenerate";

/// An application's keys: `/applications/{id}/keys`.
pub(crate) const APPLICATION_KEYS: &str = "/applications/{id}/keys";

/// One key of an application: `/applications/{id}/keys/{key_id}`.
pub(crate) const APPLICATION_KEY: &str = "/applications/{id}/keys/{key_id}";

/// The caller's tenant's audit events: `/audit-events`.
pub(crate) const AUDIT_EVENTS: &str = "/audit-events";

/// A token's children: `/tokens/{parent_id}/children`.
pub(crate) const CHILDREN: &str = "/tokens/{parent_id}/children";

/// One child link of a token: `/tokens/{parent_id}/children/{child_id}`.
pub(crate) const CHILD: &str = "/tokens/{parent_id}/children/{child_id}";

/// Detokenization of a body: `/detokenize`.
pub(crate) const DETOKENIZE: &str = "/detokenize";

/// Liveness: `/healthz`.
pub(crate) const HEALTHZ: &str = "/healthz";

/// Readiness: `/readyz`.
pub(crate) const READYZ: &str = "/readyz";

/// Prometheus metrics: `/metrics`.
pub(crate) const METRICS: &str = "/metrics";

/// The proxies: `/proxies`.
pub(crate) const PROXIES: &str = "/proxies";

/// One proxy: `/proxies/{id}`.
pub(crate) const PROXY: &str = "/proxies/{id}";

/// Bulk and composite tokenization: `/tokenize`.
pub(crate) const TOKENIZE: &str = "/tokenize";

/// Token search: `/tokens/search`.
pub(crate) const SEARCH: &str = "/tokens/search";

/// The tokens: `/tokens`.
pub(crate) const TOKENS: &str = "/tokens";

/// One token: `/tokens/{id}`.
pub(crate) const TOKEN: &str = "/tokens/{id}";

/// Token search, in cursor pages: `/v2/tokens/search`.
pub(crate) const SEARCH_V2: &str = "/v2/tokens/search";

/// The tokens, in cursor pages: `/v2/tokens`.
pub(crate) const TOKENS_V2: &str = "/v2/tokens";

/// The webhooks: `/webhooks`.
pub(crate) const WEBHOOKS: &str = "/webhooks";

/// One webhook: `/webhooks/{id}`.
pub(crate) const WEBHOOK: &str = "/webhooks/{id}";

/// The event types webhooks can subscribe to: `/webhooks/event-types`.
pub(crate) const WEBHOOK_EVENT_TYPES: &str = "/webhooks/event-types";

/// The public half of the key that signs webhooks now, PEM: `/webhooks/signing-key`.
pub(crate) const WEBHOOK_SIGNING_KEY: &str = "/webhooks/signing-key";

/// Every published webhook signing key: `/webhooks/signing-keys`.
pub(crate) const WEBHOOK_SIGNING_KEYS: &str = "/webhooks/signing-keys";
