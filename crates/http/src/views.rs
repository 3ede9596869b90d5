//! JSON shapes of responses. Token data appears only where the endpoint returns it.

use serde::Serialize;
use tessera_domain::{
    application::{Application, ApplicationKey, ApplicationType},
    audit::ChainedEvent,
    cursor::CursorPage,
    hex,
    proxy::Configuration,
    timestamp::serde_rfc3339,
    ApplicationId, Page, Permission, Proxy, ProxyId, Rule, Secret, TenantId,
};
use time::OffsetDateTime;

pub(crate) use tessera_domain::token::TokenView;

/// The answer to a token create that may deduplicate: 201 with the new token, or 200 with the
/// existing one it found; `data` only under a `mask` transform, as the mask.
pub(crate) fn created_or_found(
    token: tessera_domain::Token,
    created: bool,
    viewer: &tessera_domain::Principal,
) -> actix_web::HttpResponse {
    status(created).json(TokenView::created(token, viewer))
}

/// [`created_or_found`] for a child: never with `data` (docs/api.md, "Transforms").
pub(crate) fn child_created_or_found(
    token: tessera_domain::Token,
    created: bool,
    viewer: &tessera_domain::Principal,
) -> actix_web::HttpResponse {
    status(created).json(TokenView::created_child(token, viewer))
}

fn status(created: bool) -> actix_web::HttpResponseBuilder {
    if created {
        actix_web::HttpResponse::Created()
    } else {
        actix_web::HttpResponse::Ok()
    }
}

/// An application. `key` appears only on create (unless `create_key` was `false`) and
/// regenerate; `keys` lists its keys, never their secrets.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ApplicationView {
    id: ApplicationId,
    tenant_id: TenantId,
    name: String,
    #[serde(rename = "type")]
    app_type: ApplicationType,
    permissions: Vec<Permission>,
    rules: Vec<Rule>,
    created_by: ApplicationId,
    #[serde(with = "serde_rfc3339")]
    created_at: OffsetDateTime,
    modified_by: ApplicationId,
    #[serde(with = "serde_rfc3339")]
    modified_at: OffsetDateTime,
    /// After this instant every key of the application is refused; absent: never.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serde_rfc3339::option::serialize"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    expires_at: Option<OffsetDateTime>,
    /// A public application's browser origins; absent when it lists none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<String>)]
    allowed_origins: Vec<tessera_domain::origin::Origin>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "tessera_domain::secret::exposed_option"
    )]
    #[schema(value_type = Option<String>)]
    key: Option<Secret<String>>,
    /// Its keys, oldest first, without their secrets.
    keys: Vec<ApplicationKeyView>,
}

impl ApplicationView {
    /// Without a key.
    pub(crate) fn new(a: Application) -> Self {
        Self {
            id: a.id,
            tenant_id: a.tenant_id,
            name: a.name,
            app_type: a.app_type,
            permissions: a.permissions,
            rules: a.rules,
            created_by: a.created_by,
            created_at: a.created_at,
            modified_by: a.modified_by,
            modified_at: a.modified_at,
            expires_at: a.expires_at,
            allowed_origins: a.allowed_origins,
            key: None,
            keys: a.keys.into_iter().map(ApplicationKeyView::new).collect(),
        }
    }

    /// The application with the key just issued to it.
    pub(crate) fn issued(issued: tessera_domain::vault::IssuedKey) -> Self {
        Self {
            key: Some(Secret::new(issued.api_key.expose().to_string())),
            ..Self::new(issued.application)
        }
    }

    /// A created application, with its key unless it was created without one.
    pub(crate) fn created(created: tessera_domain::vault::CreatedApplication) -> Self {
        Self {
            key: created.api_key.map(|k| Secret::new(k.expose().to_string())),
            ..Self::new(created.application)
        }
    }
}

/// One key of an application. `key` appears only in the answer that issues it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ApplicationKeyView {
    id: tessera_domain::ApplicationKeyId,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "tessera_domain::secret::exposed_option"
    )]
    #[schema(value_type = Option<String>)]
    key: Option<Secret<String>>,
    created_by: ApplicationId,
    #[serde(with = "serde_rfc3339")]
    created_at: OffsetDateTime,
}

impl ApplicationKeyView {
    /// Without the key.
    pub(crate) fn new(k: ApplicationKey) -> Self {
        Self {
            id: k.id,
            key: None,
            created_by: k.created_by,
            created_at: k.created_at,
        }
    }

    /// A key just issued, shown this once.
    pub(crate) fn issued(issued: tessera_domain::vault::NewApplicationKey) -> Self {
        Self {
            key: Some(Secret::new(issued.api_key.expose().to_string())),
            ..Self::new(issued.key)
        }
    }
}

/// A transform in a proxy response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct TransformView {
    #[serde(serialize_with = "tessera_domain::secret::exposed")]
    #[schema(value_type = String)]
    code: Secret<String>,
}

/// A proxy (docs/api.md, "Proxy object"). `modified_*` are left out of the create response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ProxyView {
    id: ProxyId,
    #[serde(serialize_with = "tessera_domain::secret::exposed")]
    #[schema(value_type = String)]
    key: Secret<String>,
    name: String,
    destination_url: String,
    tenant_id: TenantId,
    require_auth: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_transform: Option<TransformView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_transform: Option<TransformView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    application_id: Option<ApplicationId>,
    /// Returned as stored: it is the tenant's own configuration, shown to holders of
    /// `proxy:read`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "tessera_domain::secret::exposed_option"
    )]
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    configuration: Option<Secret<Configuration>>,
    created_by: ApplicationId,
    #[serde(with = "serde_rfc3339")]
    created_at: OffsetDateTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    modified_by: Option<ApplicationId>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "serde_rfc3339::option"
    )]
    modified_at: Option<OffsetDateTime>,
}

impl ProxyView {
    fn build(p: Proxy, with_modified: bool) -> Self {
        Self {
            id: p.id,
            key: p.key,
            name: p.name,
            destination_url: p.destination_url,
            tenant_id: p.tenant_id,
            require_auth: p.require_auth,
            request_transform: p.request_transform.map(|code| TransformView { code }),
            response_transform: p.response_transform.map(|code| TransformView { code }),
            application_id: p.application_id,
            configuration: p.configuration,
            created_by: p.created_by,
            created_at: p.created_at,
            modified_by: with_modified.then_some(p.modified_by),
            modified_at: with_modified.then_some(p.modified_at),
        }
    }

    /// The create response: no `modified_*`.
    pub(crate) fn created(p: Proxy) -> Self {
        Self::build(p, false)
    }

    /// Read, list and update responses.
    pub(crate) fn full(p: Proxy) -> Self {
        Self::build(p, true)
    }
}

/// Pagination block of a list response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Pagination {
    total_items: u64,
    page_number: u32,
    page_size: u32,
    total_pages: u64,
}

/// A list response: `{"pagination": {...}, "data": [...]}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct PageView<T> {
    pagination: Pagination,
    data: Vec<T>,
}

impl<T> PageView<T> {
    /// Renders a page, converting each item.
    pub(crate) fn new<U>(page: Page<U>, f: impl FnMut(U) -> T) -> Self {
        Self {
            pagination: Pagination {
                total_items: page.total_items,
                page_number: page.request.page(),
                page_size: page.request.size(),
                total_pages: page.total_pages(),
            },
            data: page.items.into_iter().map(f).collect(),
        }
    }
}

/// Pagination block of a cursor page (docs/api.md "Cursor pages").
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct CursorPagination {
    /// The page size asked for.
    page_size: u32,
    /// The `start` of the next page; `null` on the last page.
    next: Option<String>,
}

/// A cursor page: `{"pagination": {"page_size": n, "next": "…"|null}, "data": [...]}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct CursorPageView<T> {
    pagination: CursorPagination,
    data: Vec<T>,
}

impl<T> CursorPageView<T> {
    /// Renders a cursor page, converting each item.
    pub(crate) fn new<U>(page: CursorPage<U>, f: impl FnMut(U) -> T) -> Self {
        Self {
            pagination: CursorPagination {
                page_size: page.size,
                next: page.next,
            },
            data: page.items.into_iter().map(f).collect(),
        }
    }
}

/// One audit event, with its place in its tenant's hash chain.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct AuditEventView {
    id: uuid::Uuid,
    tenant_id: Option<TenantId>,
    #[serde(with = "serde_rfc3339")]
    occurred_at: OffsetDateTime,
    /// `token.created`, `token.read`, … (see docs/api.md).
    action: &'static str,
    /// `success` or `denied`.
    outcome: &'static str,
    /// The application id, `anonymous` or `operator`.
    actor: String,
    resource_ids: Vec<tessera_domain::audit::ResourceId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy_id: Option<ProxyId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<String>,
    /// Why a denied attempt was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// How many identical refusals this event stands for, when a flood of them was folded
    /// into one event (absent: one).
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<u32>,
    /// On `audit.pruned`: the last position retention removed, and its event's hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pruned: Option<PrunedView>,
    /// On gateway events: the destination's `host:port`.
    #[serde(skip_serializing_if = "Option::is_none")]
    destination: Option<String>,
    /// On gateway events of an ephemeral proxy: `true`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    ephemeral: bool,
    /// On calls from a browser page: its `Origin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    origin: Option<String>,
    /// Position in the tenant's chain, from 1.
    seq: i64,
    /// The previous event's hash, hex.
    prev_hash: String,
    /// SHA-256 over `prev_hash`, `seq` and the event's canonical encoding, hex.
    hash: String,
}

/// What retention removed (on an `audit.pruned` event).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct PrunedView {
    /// Events up to this position were removed.
    through_seq: i64,
    /// The hash of the last removed event (what the first remaining event links to).
    last_hash: String,
}

impl AuditEventView {
    /// Renders a stored event.
    pub(crate) fn new(c: ChainedEvent) -> Self {
        let e = c.event;
        Self {
            id: e.id,
            tenant_id: e.tenant_id,
            occurred_at: e.occurred_at,
            action: e.action.as_str(),
            outcome: e.outcome.as_str(),
            actor: e.actor.to_wire(),
            resource_ids: e.resource_ids,
            proxy_id: e.proxy_id,
            request_id: e.request_id,
            reason: e.reason,
            count: e.count,
            destination: e.destination,
            ephemeral: e.ephemeral,
            origin: e.origin,
            pruned: e.pruned.map(|p| PrunedView {
                through_seq: p.through_seq,
                last_hash: hex::encode(&p.last_hash),
            }),
            seq: c.seq,
            prev_hash: hex::encode(&c.prev_hash),
            hash: hex::encode(&c.hash),
        }
    }
}
