//! The token search page and the new-token form.

use maud::{html, Markup};
use tessera_domain::{Page, Token};

use super::components::{
    checkbox, csrf, field_errors, field_id, pager, problem_summary, select, textarea, when, Input,
    Problems,
};
use crate::inputs::token::{NewTokenForm, BANK_FIELDS, CARD_FIELDS};

/// The search criteria as the form holds them.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchForm {
    pub(crate) id: String,
    pub(crate) types: Vec<String>,
    pub(crate) metadata: String,
    pub(crate) fingerprint: String,
    pub(crate) container: String,
}

impl SearchForm {
    /// The query string of these criteria, ending in `&` (for the pager to add the page).
    fn query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for t in &self.types {
            q.append_pair("type", t);
        }
        for (name, value) in [
            ("metadata", &self.metadata),
            ("fingerprint", &self.fingerprint),
            ("container", &self.container),
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

const TYPES: [&str; 3] = ["card", "bank", "token"];

fn search_form(form: &SearchForm, problems: &Problems) -> Markup {
    html! {
        form.search method="get" action="/console/tokens" role="search" aria-label="Search tokens" {
            div.grid {
                (Input::text("Token id", "id", &form.id).kind("search").hint("Goes straight to the token.").render(problems))
                (Input::text("Fingerprint", "fingerprint", &form.fingerprint).kind("search").render(problems))
                (Input::text("Container", "container", &form.container).kind("search").hint("A prefix: /pci/ finds /pci/high/.").render(problems))
            }
            fieldset.field {
                legend { "Type" }
                (field_errors(problems, "type"))
                div.inline {
                    @for t in TYPES {
                        (checkbox(t, "type", t, form.types.iter().any(|x| x == t), &format!("type-{t}")))
                    }
                }
            }
            (textarea("Metadata", "metadata", &form.metadata, 2, false, Some("One key=value per line; all must match exactly."), problems))
            div.actions {
                button type="submit" { "Search" }
                a.button.secondary href="/console/tokens" { "Clear" }
            }
        }
    }
}

fn results(page: &Page<Token>, form: &SearchForm) -> Markup {
    html! {
        @if page.items.is_empty() {
            p.empty { "No token matches." }
        } @else {
            div.table-wrap {
                table {
                    caption.visually-hidden { "Tokens, newest first" }
                    thead { tr { th scope="col" { "Token" } th scope="col" { "Type" } th scope="col" { "Container" } th scope="col" { "Metadata" } th scope="col" { "Created" } th scope="col" { "Expires" } } }
                    tbody {
                        @for t in &page.items {
                            tr {
                                td { a.mono href=(crate::links::token(&t.id)) { (t.id) } }
                                td { (t.token_type.as_str()) }
                                td.mono { (t.container.as_str()) }
                                td {
                                    @for (k, v) in &t.metadata { span.pill { (k) "=" (v) } " " }
                                }
                                td { (when(t.created_at)) }
                                td { (t.expires_at.map(when).unwrap_or_else(|| "never".into())) }
                            }
                        }
                    }
                }
            }
        }
        (pager(page, &format!("/console/tokens?{}", form.query())))
    }
}

/// The search page: form, then results (when the search ran).
pub(crate) fn search_page(
    form: &SearchForm,
    found: Option<&Page<Token>>,
    problems: &Problems,
    deleted: Option<String>,
) -> Markup {
    html! {
        @if let Some(id) = deleted {
            p.notice role="status" { "Token " code { (id) } " was deleted." }
        }
        p.toolbar { a.button href="/console/tokens/new" { "New token" } }
        (problem_summary(problems))
        (search_form(form, problems))
        @if let Some(page) = found {
            h2 { "Results" }
            (results(page, form))
        }
    }
}

/// The tokens page of an application that may not search tokens.
pub(crate) fn not_permitted_to_search() -> Markup {
    html! {
        div.notice role="alert" {
            p.lead { strong { "Not permitted" } ": this application may not read tokens, so it cannot search them." }
        }
        p { a.button href="/console/tokens/new" { "New token" } }
    }
}

/// The page after creating a token the signed-in application may not read.
pub(crate) fn created_unreadable(id: &str, container: &str) -> Markup {
    html! {
        p.notice role="status" { "Token " code { (id) } " was created in " code { (container) } "." }
        p { "This application may not read tokens there, so the token's page is not shown." }
        p.actions { a.button href="/console/tokens/new" { "New token" } }
    }
}

/// One data field of the new-token form: what was typed in it shown again only when
/// [`NewTokenForm::kept`] keeps it (never a number, a CVC or free data).
fn data_field(form: &NewTokenForm, name: &str, label: &str, problems: &Problems) -> Markup {
    let field = format!("data.{name}");
    let hint = match name {
        "number" => Some("Spaces and dashes between the digits are fine."),
        _ => None,
    };
    let mut input = Input::text(label, &field, form.kept(name));
    if let Some(hint) = hint {
        input = input.hint(hint);
    }
    input.render(problems)
}

/// Why some data fields are empty on a refused form.
fn asked_again(problems: &Problems, sentence: &str) -> Markup {
    html! {
        @if !problems.is_empty() {
            p.hint.asked-again { (sentence) }
        }
    }
}

/// The new-token form. When it is shown again, every field keeps what was typed but the card
/// number, the CVC, the account number and free data ([`NewTokenForm::kept`]).
pub(crate) fn new_form(token: &str, form: &NewTokenForm, problems: &Problems) -> Markup {
    let chosen = if form.token_type.is_empty() {
        "card"
    } else {
        form.token_type.as_str()
    };
    html! {
        (problem_summary(problems))
        form.stack method="post" action="/console/tokens/new" data-token-form="true" {
            (csrf(token))
            (select("Type", "type", &[("card", "Card"), ("bank", "Bank account"), ("token", "Other (any JSON value)")], chosen, problems))
            fieldset.field data-token-type="card" {
                legend { "Card" }
                (field_errors(problems, "data"))
                (asked_again(problems, "The card number and the CVC are never sent back to the browser: enter them again."))
                @for (name, label) in CARD_FIELDS {
                    (data_field(form, name, label, problems))
                }
            }
            fieldset.field data-token-type="bank" {
                legend { "Bank account" }
                (asked_again(problems, "The account number is never sent back to the browser: enter it again."))
                @for (name, label) in BANK_FIELDS {
                    (data_field(form, name, label, problems))
                }
            }
            fieldset.field data-token-type="token" {
                legend { "Other" }
                (asked_again(problems, "The data is never sent back to the browser: enter it again."))
                div.field {
                    label for=(field_id("data")) { "Data" }
                    (field_errors(problems, "data"))
                    textarea id=(field_id("data")) name="data" rows="4" spellcheck="false" autocomplete="off" {}
                }
                (checkbox("The data is JSON (otherwise it is stored as text)", "data_is_json", "on", form.data_is_json, "data-is-json"))
            }
            (textarea("Metadata", "metadata", &form.metadata, 3, false, Some("Not secret. One key=value per line."), problems))
            (Input::text("Container", "container", &form.container).field("containers[0]").hint("Optional; by default /pci/high/ for cards, /bank/high/ for bank accounts, /general/high/ otherwise.").render(problems))
            (Input::text("Expires at", "expires_at", &form.expires_at).hint("Optional; RFC 3339, e.g. 2030-01-31T12:00:00Z.").render(problems))
            div.actions {
                button type="submit" { "Create token" }
                a.button.secondary href="/console/tokens" { "Cancel" }
            }
        }
    }
}
