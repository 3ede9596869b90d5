//! The audit trail page: filters, events (newest first) and the chain verification.

use maud::{html, Markup};
use tessera_domain::{
    audit::{Actor, AuditAction, ChainedEvent, Outcome, VerifyReport},
    ApplicationId, Page,
};

use super::components::{application, csrf, pager, problem_summary, select, when, Input, Problems};
use crate::names::Names;

/// The filters as the form holds them (the API's query parameters).
#[derive(Debug, Clone, Default)]
pub(crate) struct AuditForm {
    pub(crate) action: String,
    pub(crate) actor: String,
    pub(crate) outcome: String,
    pub(crate) resource_id: String,
    pub(crate) from: String,
    pub(crate) to: String,
}

impl AuditForm {
    /// The query string of these filters, ending in `&`.
    pub(crate) fn query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("action", &self.action),
            ("actor", &self.actor),
            ("outcome", &self.outcome),
            ("resource_id", &self.resource_id),
            ("from", &self.from),
            ("to", &self.to),
        ] {
            if !value.is_empty() {
                q.append_pair(name, value);
            }
        }
        let mut out = q.finish();
        out.push('&');
        out
    }
}

fn filters(form: &AuditForm, problems: &Problems) -> Markup {
    let mut actions: Vec<(&str, &str)> = vec![("", "Any")];
    actions.extend(AuditAction::ALL.iter().map(|a| (a.as_str(), a.as_str())));
    html! {
        form.search method="get" action="/console/audit" role="search" aria-label="Filter events" {
            div.grid {
                (select("Action", "action", &actions, &form.action, problems))
                (select("Outcome", "outcome", &[("", "Any"), ("success", "success"), ("denied", "denied")], &form.outcome, problems))
                (Input::text("Actor", "actor", &form.actor).hint("An application id, anonymous or operator.").render(problems))
                (Input::text("Resource", "resource_id", &form.resource_id).hint("A token, proxy or application id.").render(problems))
                (Input::text("From", "from", &form.from).hint("RFC 3339, e.g. 2030-01-31T00:00:00Z.").render(problems))
                (Input::text("To", "to", &form.to).hint("RFC 3339; events before it.").render(problems))
            }
            div.actions {
                button type="submit" { "Filter" }
                a.button.secondary href="/console/audit" { "Clear" }
            }
        }
    }
}

/// Where a resource of an event of `action` is shown in the console.
fn resource_link(action: AuditAction, id: &tessera_domain::audit::ResourceId) -> Markup {
    let section = match action.as_str().split('.').next() {
        Some("token" | "association") => Some("tokens"),
        Some("proxy") => Some("proxies"),
        Some("application") => Some("applications"),
        _ => None,
    };
    html! {
        @match section {
            Some(s) => a.mono href=(crate::links::resource(s, id)) { (id) },
            None => span.mono { (id) },
        }
    }
}

/// Who acted: an application by its current name with its id beside it (names are neither
/// unique nor fixed, the id is what the event recorded), or `anonymous`, `operator`…
fn actor(actor: Actor, names: &Names) -> Markup {
    match actor {
        Actor::Application(id) => application(names, &id, true),
        other => html! { span.mono { (other.to_wire()) } },
    }
}

/// The applications that acted in `page`'s events (to name them, once for the page).
pub(crate) fn actors(page: &Page<ChainedEvent>) -> Vec<ApplicationId> {
    page.items
        .iter()
        .filter_map(|c| match c.event.actor {
            Actor::Application(id) => Some(id),
            _ => None,
        })
        .collect()
}

fn events(page: &Page<ChainedEvent>, form: &AuditForm, names: &Names) -> Markup {
    html! {
        @if page.items.is_empty() {
            p.empty { "No event matches." }
        } @else {
            div.table-wrap {
                table.events {
                    caption.visually-hidden { "Audit events, newest first" }
                    thead { tr { th scope="col" { "When" } th scope="col" { "Action" } th scope="col" { "Outcome" } th scope="col" { "Actor" } th scope="col" { "Resources" } th scope="col" { "Request" } th scope="col" { "Reason" } } }
                    tbody {
                        @for c in &page.items {
                            @let e = &c.event;
                            tr.denied[e.outcome == Outcome::Denied] {
                                td.nowrap { (when(e.occurred_at)) }
                                td.mono { (e.action.as_str()) }
                                td { (e.outcome.as_str()) }
                                td.actor { (actor(e.actor, names)) }
                                td {
                                    @for id in &e.resource_ids { (resource_link(e.action, id)) br; }
                                    @if let Some(p) = e.proxy_id { "via proxy " (resource_link(AuditAction::ProxyUpdated, &p.into())) }
                                }
                                td.mono.wrap { (e.request_id.as_deref().unwrap_or("")) }
                                td { (e.reason.as_deref().unwrap_or("")) }
                            }
                        }
                    }
                }
            }
        }
        (pager(page, &format!("/console/audit?{}", form.query())))
    }
}

fn verification(token: &str, report: Option<&VerifyReport>) -> Markup {
    html! {
        section.verify aria-labelledby="h-verify" {
            h2 #h-verify { "Chain verification" }
            p.hint { "Re-walks your tenant's hash chain: an event edited or deleted in the database breaks it." }
            form method="post" action="/console/audit/verify" {
                (csrf(token))
                button type="submit" { "Verify" }
            }
            @if let Some(report) = report {
                div.result role="status" aria-live="polite" {
                    @if report.ok() {
                        p.ok { strong { "The chain holds." } " Events checked: " (report.events_checked) "." }
                    } @else if let Some(b) = &report.broken {
                        p.bad { strong { "The chain is broken" } " at position " (b.seq) ": " (b.problem) }
                    }
                    @if report.chains.is_empty() {
                        p { "No event has been recorded for this tenant yet." }
                    }
                    @for chain in &report.chains {
                        dl.details {
                            dt { "Chain head" }
                            dd.mono.wrap { "position " (chain.head["last_seq"]) ", hash " (chain.head["last_hash"].as_str().unwrap_or("")) }
                            dt { "Events checked" } dd { (chain.events_checked) }
                        }
                    }
                }
            }
        }
    }
}

/// The page: verification, filters, events (their actors named by `names`).
pub(crate) fn page(
    token: &str,
    form: &AuditForm,
    found: Option<&Page<ChainedEvent>>,
    problems: &Problems,
    report: Option<&VerifyReport>,
    names: &Names,
) -> Markup {
    html! {
        (verification(token, report))
        h2 { "Events" }
        (problem_summary(problems))
        (filters(form, problems))
        @if let Some(page) = found { (events(page, form, names)) }
    }
}
