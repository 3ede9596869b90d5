//! Audit events of console actions: exactly those the management API records for the same
//! operation (`crates/http/src/audit.rs`), built the same way ([`AuditEvent::success`] and
//! [`AuditEvent::denied`] with the signed-in application as actor and the request id) and
//! handed to the same recorder, [`tessera_domain::audit::AuditLog`], whose sync mode commits
//! them before the page is answered. A refusal (403) of an audited action is recorded as
//! `denied` with the public reason, as the API records a 403.
//!
//! Pages that show no token data (a token's masked page, search results, children and
//! parents) record no `token.read`; revealing a token's data does.

use actix_web::{http::StatusCode, HttpResponse};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent, ResourceId},
    error::ErrorClass,
    VaultError,
};

use crate::{
    context::Ctx,
    views::{components::Problems, Section},
};

/// What an operation counts as in the audit trail.
#[derive(Debug, Clone)]
pub(crate) struct Audit {
    action: AuditAction,
    ids: Vec<ResourceId>,
    record_success: bool,
}

impl Audit {
    /// An operation that records `action` on `ids` when done, and its refusal.
    pub(crate) fn done(
        action: AuditAction,
        ids: impl IntoIterator<Item = impl Into<ResourceId>>,
    ) -> Self {
        Self {
            action,
            ids: ids.into_iter().map(Into::into).collect(),
            record_success: true,
        }
    }

    /// An attempt at `action` that returns nothing the trail records (a page without token
    /// data): only its refusal is recorded.
    pub(crate) fn attempt(
        action: AuditAction,
        ids: impl IntoIterator<Item = impl Into<ResourceId>>,
    ) -> Self {
        Self {
            record_success: false,
            ..Self::done(action, ids)
        }
    }
}

/// Why a use-case's answer is not shown as asked.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The input broke a rule: show the form again with the problems next to its fields.
    Invalid(Problems),
    /// Any other failure, already rendered (Not permitted, Not found, conflict, outage).
    Page(Box<HttpResponse>),
}

impl Refusal {
    /// The answer when there is no form to show again.
    pub(crate) fn into_response(self, ctx: &Ctx, section: Section) -> HttpResponse {
        match self {
            Refusal::Invalid(problems) => ctx.page(
                StatusCode::BAD_REQUEST,
                section,
                "Invalid request",
                crate::views::components::problem_summary(&problems),
            ),
            Refusal::Page(page) => *page,
        }
    }
}

impl Ctx {
    fn actor(&self) -> Actor {
        Actor::Application(self.principal.application_id())
    }

    /// Commits `events` (in sync mode, before answering); `Err` is the 503 page the API's
    /// answer would be.
    pub(crate) async fn record(&self, events: Vec<AuditEvent>) -> Result<(), Box<HttpResponse>> {
        let log = self.state.vault.audit();
        if !log.is_on() || events.is_empty() {
            return Ok(());
        }
        let events = events
            .into_iter()
            .map(|e| e.with_request_id(&self.request_id))
            .collect();
        log.record(events).await.map_err(|e| {
            tracing::error!(error = %e, request_id = %self.request_id, "audit events not committed; answering 503");
            Box::new(crate::views::errors::message_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service unavailable",
                "The audit trail cannot be written; the operation may have been applied, and its events will be written once the database recovers.",
            ))
        })
    }

    /// Records what `result` of an operation counts as, and sorts a failure into a form
    /// to show again or a page.
    pub(crate) async fn audited<T>(
        &self,
        section: Section,
        audit: Audit,
        result: Result<T, VaultError>,
    ) -> Result<T, Refusal> {
        let tenant = self.principal.tenant_id();
        match result {
            Ok(value) => {
                if audit.record_success {
                    let event = AuditEvent::success(tenant, audit.action, self.actor(), audit.ids);
                    self.record(vec![event]).await.map_err(Refusal::Page)?;
                }
                Ok(value)
            }
            Err(error) => {
                if matches!(
                    error.class(),
                    ErrorClass::Forbidden | ErrorClass::Unauthenticated
                ) {
                    let event = AuditEvent::denied(
                        Some(tenant),
                        audit.action,
                        self.actor(),
                        audit.ids,
                        &error.public_message(),
                    );
                    self.record(vec![event]).await.map_err(Refusal::Page)?;
                }
                Err(self.refusal(section, &error))
            }
        }
    }

    /// Sorts the failure of an operation the trail does not record.
    pub(crate) fn unaudited<T>(
        &self,
        section: Section,
        result: Result<T, VaultError>,
    ) -> Result<T, Refusal> {
        result.map_err(|e| self.refusal(section, &e))
    }

    fn refusal(&self, section: Section, error: &VaultError) -> Refusal {
        match error {
            VaultError::Validation(_) => Refusal::Invalid(Problems::from_vault(error)),
            other => Refusal::Page(Box::new(self.failure(section, other))),
        }
    }
}
