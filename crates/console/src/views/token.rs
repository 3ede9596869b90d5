//! A token's page (data masked until Reveal) and its edit form.

use maud::{html, Markup};
use tessera_domain::{Page, Token, TokenId};

use super::components::{application, csrf, problem_summary, textarea, when, Input, Problems};
use crate::{inputs::token::EditTokenForm, mask::mask, names::Names};

/// How much of the data the page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shown {
    /// The last four digits of a card or account number at most; the Reveal button only
    /// when the signed-in application may read the plaintext here (`token:read` under a
    /// `reveal` transform; docs/console.md).
    Masked {
        /// Whether Reveal is offered.
        may_reveal: bool,
    },
    /// All of it (after Reveal, recorded as `token.read`).
    Revealed,
    /// Nothing: the application's transform on the token's container is `redact`.
    Withheld,
}

impl Shown {
    /// Whether the plaintext may be seen, and so the fingerprint shown.
    fn reveals(self) -> bool {
        matches!(self, Shown::Revealed | Shown::Masked { may_reveal: true })
    }
}

/// The token's parents and children (or why they could not be listed).
pub(crate) struct Links {
    pub(crate) parents: Result<Page<Token>, String>,
    pub(crate) children: Result<Page<Token>, String>,
}

fn link_list(
    label: &str,
    param: &str,
    token: &TokenId,
    links: &Result<Page<Token>, String>,
) -> Markup {
    html! {
        section.links aria-labelledby={ "h-" (param) } {
            h2 id={ "h-" (param) } { (label) }
            @match links {
                Err(message) => p.notice { (message) },
                Ok(page) if page.items.is_empty() => p.empty { "None." },
                Ok(page) => {
                    ul.plain {
                        @for t in &page.items {
                            li { a.mono href=(crate::links::token(&t.id)) { (t.id) } " " span.pill { (t.token_type.as_str()) } " " span.mono.muted { (t.container.as_str()) } }
                        }
                    }
                    @if page.total_pages() > 1 {
                        (super::components::pager(page, &format!("{}?{param}_", crate::links::token(token))))
                    }
                }
            }
        }
    }
}

fn data(csrf_token: &str, t: &Token, shown: Shown) -> Markup {
    html! {
        section.data aria-labelledby="h-data" {
            h2 #h-data { "Data" }
            @match shown {
                Shown::Masked { may_reveal } => {
                    dl.masked {
                        @for f in mask(t.token_type, t.data.expose()) {
                            dt { (f.name) } dd.mono { (f.shown) }
                        }
                    }
                    @if may_reveal {
                        form method="post" action=(crate::links::token_action(&t.id, "reveal")) {
                            (csrf(csrf_token))
                            button type="submit" { "Reveal" }
                            span.hint { " Revealing is recorded in the audit trail as a read (token.read)." }
                        }
                    } @else {
                        p.hint { "Your application sees this token's data masked." }
                    }
                },
                Shown::Withheld => {
                    p.hint { "Your application's transform here is redact: the data is not shown." }
                },
                Shown::Revealed => {
                    p.notice role="status" { "Revealed: this read is recorded in the audit trail." }
                    pre.revealed tabindex="0" aria-label="Token data" {
                        (serde_json::to_string_pretty(t.data.expose()).unwrap_or_default())
                    }
                    p { a href=(crate::links::token(&t.id)) { "Hide" } }
                },
            }
        }
    }
}

/// The token's page; `names` names its creator and last modifier.
pub(crate) fn page(
    csrf_token: &str,
    t: &Token,
    shown: Shown,
    links: &Links,
    names: &Names,
    created: bool,
) -> Markup {
    html! {
        @if created { p.notice role="status" { "Token created." } }
        div.columns {
            section aria-labelledby="h-details" {
                h2 #h-details { "Details" }
                dl.details {
                    dt { "Type" } dd { (t.token_type.as_str()) }
                    dt { "Container" } dd.mono { (t.container.as_str()) }
                    dt { "Expires" } dd { (t.expires_at.map(when).unwrap_or_else(|| "never".into())) }
                    @if shown.reveals() {
                        dt { "Fingerprint" } dd.mono.wrap { (t.fingerprint) }
                    }
                    dt { "Created" } dd { (when(t.created_at)) " by " (application(names, &t.created_by, true)) }
                    dt { "Modified" } dd { (when(t.modified_at)) " by " (application(names, &t.modified_by, true)) }
                }
                h2 { "Metadata" }
                @if t.metadata.is_empty() {
                    p.empty { "None." }
                } @else {
                    dl.details {
                        @for (k, v) in &t.metadata { dt.mono { (k) } dd { (v) } }
                    }
                }
                p.actions {
                    a.button.secondary href=(crate::links::token_action(&t.id, "edit")) { "Edit metadata and expiry" }
                    a.button.danger href=(crate::links::token_action(&t.id, "delete")) { "Delete" }
                }
            }
            (data(csrf_token, t, shown))
        }
        div.columns {
            (link_list("Parents", "parents", &t.id, &links.parents))
            (link_list("Children", "children", &t.id, &links.children))
        }
    }
}

/// The form editing a token's metadata and expiry.
pub(crate) fn edit_form(
    csrf_token: &str,
    id: &TokenId,
    form: &EditTokenForm,
    problems: &Problems,
) -> Markup {
    html! {
        p { "Token " a.mono href=(crate::links::token(id)) { (id) } }
        (problem_summary(problems))
        form.stack method="post" action=(crate::links::token_action(id, "edit")) {
            (csrf(csrf_token))
            @for (name, value) in form.hidden() {
                input type="hidden" name=(name) value=(value);
            }
            (textarea("Metadata", "metadata", &form.metadata, 6, false, Some("One key=value per line. Remove a line to remove the pair."), problems))
            (Input::text("Expires at", "expires_at", &form.expires_at).hint("RFC 3339, e.g. 2030-01-31T12:00:00Z; empty: never. Setting or shortening it needs token:delete too.").render(problems))
            div.actions {
                button type="submit" { "Save" }
                a.button.secondary href=(crate::links::token(id)) { "Cancel" }
            }
        }
    }
}
