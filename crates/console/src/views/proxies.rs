//! The proxy list, the proxy form (new and edit), the page shown once after creation, and
//! "Try it".

use maud::{html, Markup};
use tessera_domain::{Page, Proxy, ProxyId, TokenId, TokenType};

use super::components::{
    checkbox, code_editor, csrf, field_errors, field_id, pager, problem_summary, select, textarea,
    when, Input, Problems,
};
use crate::{
    gateway_client::{TryError, TryRequest, TryResponse, METHODS, PLACEHOLDER},
    inputs::proxy::ProxyForm,
};

/// The applications a proxy may name for `req.svc` (`None`: the signed-in application may not
/// list applications, so the id is typed).
pub(crate) type AppChoices = Option<Vec<(String, String)>>;

/// The list with its name search.
pub(crate) fn list(name: &str, page: &Page<Proxy>, deleted: Option<String>) -> Markup {
    let mut q = form_urlencoded::Serializer::new(String::new());
    if !name.is_empty() {
        q.append_pair("name", name);
    }
    let base = format!("/console/proxies?{}&", q.finish());
    html! {
        @if let Some(id) = deleted { p.notice role="status" { "Proxy " code { (id) } " was deleted." } }
        p.toolbar { a.button href="/console/proxies/new" { "New proxy" } }
        form.search method="get" action="/console/proxies" role="search" aria-label="Search proxies" {
            (Input::text("Name", "name", name).kind("search").hint("Case-insensitive; * matches any run of characters.").render(&Problems::none()))
            div.actions { button type="submit" { "Search" } }
        }
        @if page.items.is_empty() {
            p.empty { "No proxy matches." }
        } @else {
            div.table-wrap {
                table {
                    caption.visually-hidden { "Proxies" }
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Destination" } th scope="col" { "Auth" } th scope="col" { "Created" } } }
                    tbody {
                        @for p in &page.items {
                            tr {
                                td { a href={ "/console/proxies/" (p.id) } { (p.name) } }
                                td.mono.wrap { (p.destination_url) }
                                td { @if p.require_auth { "required" } @else { "none" } }
                                td { (when(p.created_at)) }
                            }
                        }
                    }
                }
            }
        }
        (pager(page, &base))
    }
}

fn configuration(form: &ProxyForm, problems: &Problems) -> Markup {
    // The rows given, then one blank row to add an entry without the script.
    let blank = (String::new(), tessera_domain::Secret::new(String::new()));
    let rows = form.configuration.iter().chain(std::iter::once(&blank));
    html! {
        fieldset.field.invalid[!problems.of("configuration").is_empty()] id=(field_id("configuration")) {
            legend { "Configuration" }
            p.hint { "Values for the transforms (req.configuration), often credentials: stored encrypted." }
            (field_errors(problems, "configuration"))
            div.rows data-rows="config" {
                @for (i, (key, value)) in rows.enumerate() {
                    div.row {
                        div.field {
                            label for={ "config-" (i) "-key" } { "Name" }
                            input id={ "config-" (i) "-key" } type="text" name={ "config." (i) ".key" } value=(key) autocomplete="off" spellcheck="false";
                        }
                        div.field {
                            label for={ "config-" (i) "-value" } { "Value" }
                            input id={ "config-" (i) "-value" } type="text" name={ "config." (i) ".value" } value=(value.expose()) autocomplete="off" spellcheck="false";
                        }
                    }
                }
            }
            button.secondary type="button" data-add-row="config" hidden { "Add entry" }
        }
    }
}

fn application(form: &ProxyForm, apps: &AppChoices, problems: &Problems) -> Markup {
    let hint = "Optional: the public or private application whose permissions req.svc uses.";
    match apps {
        Some(apps) => {
            let mut options = vec![("", "None")];
            options.extend(apps.iter().map(|(id, name)| (id.as_str(), name.as_str())));
            html! {
                div.field-group {
                    (select("Application (req.svc)", "application_id", &options, &form.application_id, &rename(problems)))
                    p.hint { (hint) }
                }
            }
        }
        None => Input::text(
            "Application id (req.svc)",
            "application_id",
            &form.application_id,
        )
        .field("application.id")
        .hint(hint)
        .render(problems),
    }
}

/// The select is named `application_id`; the API keys its problems `application.id`.
fn rename(problems: &Problems) -> Problems {
    let mut p = problems.clone();
    if let Some(m) = p.fields.remove("application.id") {
        p.fields.insert("application_id".into(), m);
    }
    p
}

/// The proxy form; `id` is `None` for a new proxy (button "Create proxy"), else "Save".
pub(crate) fn form(
    token: &str,
    id: Option<&ProxyId>,
    form: &ProxyForm,
    apps: &AppChoices,
    problems: &Problems,
) -> Markup {
    let (action, button) = match id {
        None => ("/console/proxies/new".to_string(), "Create proxy"),
        Some(id) => (format!("/console/proxies/{id}"), "Save"),
    };
    html! {
        (problem_summary(problems))
        form.stack method="post" action=(action) {
            (csrf(token))
            (Input::text("Name", "name", &form.name).required().render(problems))
            (Input::text("Destination URL", "destination_url", &form.destination_url).hint("An absolute https URL; the path after /proxy is appended to it.").required().render(problems))
            div.field {
                (checkbox("Require auth", "require_auth", "on", form.require_auth, "require-auth"))
                p.hint { "Callers must send an API key with token:use on each token's container; without it nothing is detokenized." }
            }
            (application(form, apps, problems))
            (configuration(form, problems))
            (code_editor("Request transform", "request_transform", "request_transform.code", form.request_code.expose(), "Optional CommonJS: module.exports = async function (req) { return { body, headers }; }. It must compile.", problems))
            (code_editor("Response transform", "response_transform", "response_transform.code", form.response_code.expose(), "Optional; runs on the destination's 2xx answers.", problems))
            div.actions {
                button type="submit" { (button) }
                a.button.secondary href="/console/proxies" { "Cancel" }
            }
        }
    }
}

/// What is true of a proxy key, said wherever it is shown (docs/console.md, "Proxies").
const KEY_TRUTH: &str = "Callers send it in the SVC-PROXY-KEY header (or the svc-proxy-key query \
    parameter) to /proxy. Keep it secret: whoever holds it can call this proxy. It can be read \
    again by anyone whose API key has proxy:read: with Show key on the proxy's page, or GET \
    /proxies/{id}.";

/// The key with a copy button.
fn key_box(key: &str) -> Markup {
    html! {
        div.copyable {
            code.secret #proxy-key { (key) }
            button.secondary type="button" data-copy="proxy-key" { "Copy" }
        }
    }
}

/// The page after creation: the key, and what is true of it.
pub(crate) fn created(id: &ProxyId, name: &str, key: &str) -> Markup {
    html! {
        p.notice role="status" { "Proxy " strong { (name) } " was created." }
        div.once role="status" {
            h2 { "Proxy key" }
            p { (KEY_TRUTH) }
            (key_box(key))
        }
        p.actions { a.button href={ "/console/proxies/" (id) } { "Open the proxy" } }
    }
}

/// The proxy page's key section: the key when `key` is given (after Show key), else the
/// button that shows it.
pub(crate) fn key_section(token: &str, id: &ProxyId, key: Option<&str>) -> Markup {
    html! {
        section.key aria-labelledby="h-key" id="key" {
            h2 #h-key { "Proxy key" }
            p.hint { (KEY_TRUTH) }
            @match key {
                Some(key) => (key_box(key)),
                None => form method="post" action={ "/console/proxies/" (id) "/key#key" } {
                    (csrf(token))
                    button.secondary type="submit" { "Show key" }
                },
            }
        }
    }
}

/// A token Try it offers to insert: its id, type and mask only (never its data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecentToken {
    pub(crate) id: TokenId,
    pub(crate) token_type: TokenType,
    /// The last four digits of a card's or an account's number at most ([`crate::mask::summary`]).
    pub(crate) mask: Option<String>,
}

impl RecentToken {
    /// The expression that detokenizes it in a body: a card's number, else the whole value.
    pub(crate) fn expression(&self) -> String {
        match self.token_type {
            TokenType::Card => format!("{{{{ {} | json: '$.number' }}}}", self.id),
            _ => format!("{{{{ {} }}}}", self.id),
        }
    }
}

/// The tokens Try it offers: the newest the signed-in application may read, as the token
/// list shows them.
#[derive(Debug)]
pub(crate) enum RecentTokens {
    /// The application may not read tokens: none is offered.
    NotPermitted,
    /// The list could not be read (the reason, in the API's words).
    Failed(String),
    /// The newest readable tokens (maybe none).
    Listed(Vec<RecentToken>),
}

fn recent_token(t: &RecentToken, body_id: &str) -> Markup {
    let expression = t.expression();
    html! {
        tr.recent-token {
            td { (t.token_type.as_str()) }
            td { a.mono href=(crate::links::token(&t.id)) { (t.id) } }
            td.mono.nowrap { (t.mask.as_deref().unwrap_or("")) }
            td { code.expression { (expression) } }
            td {
                button.secondary.insert type="button" hidden data-insert=(expression)
                    data-insert-into=(body_id) data-placeholder=(PLACEHOLDER)
                    aria-label={ "Insert token " (t.id) " into the body" } { "Insert" }
            }
        }
    }
}

/// The list of tokens to insert into Try it's body.
fn recent_tokens(recent: &RecentTokens) -> Markup {
    let body_id = field_id("body");
    html! {
        div.recent aria-labelledby="h-recent" {
            h3 #h-recent { "Tokens to use" }
            @match recent {
                RecentTokens::NotPermitted => p.hint { "This application may not read tokens, so none is listed: type a token's id into the body as {{ token_id }}." },
                RecentTokens::Failed(reason) => p.hint { "Tokens could not be listed: " (reason) },
                RecentTokens::Listed(tokens) if tokens.is_empty() => p.empty { "No token yet. Create one under Tokens." },
                RecentTokens::Listed(tokens) => {
                    p.hint { "The newest tokens this application may read (masked). Insert puts the expression at the caret in Body, or in place of " code { (PLACEHOLDER) } "; or copy it." }
                    div.table-wrap {
                        table {
                            caption.visually-hidden { "Tokens to use, newest first" }
                            thead { tr { th scope="col" { "Type" } th scope="col" { "Token" } th scope="col" { "Shown" } th scope="col" { "Expression" } th scope="col" { span.visually-hidden { "Insert" } } } }
                            tbody { @for t in tokens { (recent_token(t, &body_id)) } }
                        }
                    }
                },
            }
        }
    }
}

/// The "Try it" form with the tokens to insert and, after a try, what came back.
pub(crate) fn try_it(
    token: &str,
    id: &ProxyId,
    available: bool,
    request: &TryRequest,
    recent: &RecentTokens,
    problems: &Problems,
    outcome: Option<&Result<TryResponse, TryError>>,
) -> Markup {
    html! {
        section.try aria-labelledby="h-try" id="try" {
            h2 #h-try { "Try it" }
            @if !available {
                p.notice { "Try it is unavailable: this server does not serve /proxy (started with --no-gateway) and no --console-gateway-url was given." }
            } @else {
                p.hint { "Sends a request through the gateway as the signed-in application: {{ token_id }} expressions in the body are detokenized with its permissions, and the transforms run. Keys stay on the server." }
                (problem_summary(problems))
                form.stack method="post" action={ "/console/proxies/" (id) "/try#try" } {
                    (csrf(token))
                    div.grid {
                        (select("Method", "method", &METHODS.map(|m| (m, m)), &request.method, problems))
                        (Input::text("Path", "path", &request.path).hint("Appended to /proxy, e.g. /v1/charges?x=1.").render(problems))
                        (Input::text("Content type", "content_type", &request.content_type).render(problems))
                    }
                    (textarea("Headers", "headers", request.headers.expose(), 2, false, Some("Optional; one Name: value per line (SVC-* headers are set by the console)."), problems))
                    (textarea("Body", "body", request.body.expose(), 6, true, Some("May hold {{ token_id }} expressions."), problems))
                    (recent_tokens(recent))
                    div.actions { button type="submit" { "Send" } }
                }
                @match outcome {
                    None => {},
                    Some(Err(e)) => div.notice role="alert" { p { (e.to_string()) } },
                    Some(Ok(res)) => (response(res)),
                }
            }
        }
    }
}

fn response(res: &TryResponse) -> Markup {
    html! {
        div.result role="status" aria-live="polite" {
            h3 { "Answer" }
            dl.details {
                dt { "Status" } dd.mono { (res.status) }
                dt { "Destination status" }
                dd.mono { (res.destination_status().unwrap_or("— (the gateway answered by itself)")) }
            }
            h4 { "Headers" }
            pre.headers tabindex="0" { @for (k, v) in &res.headers { (k) ": " (v) "\n" } }
            h4 { "Body" }
            pre.body tabindex="0" { (res.body) }
            @if res.truncated { p.hint { "The body was cut at 64 KiB." } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recent(token_type: TokenType, mask: Option<&str>) -> RecentToken {
        RecentToken {
            id: TokenId::new(),
            token_type,
            mask: mask.map(str::to_string),
        }
    }

    #[test]
    fn a_card_inserts_its_number_other_tokens_their_value() {
        let card = recent(TokenType::Card, Some("•••• 1111"));
        assert_eq!(
            card.expression(),
            format!("{{{{ {} | json: '$.number' }}}}", card.id)
        );
        let bank = recent(TokenType::Bank, Some("•••• 6789"));
        assert_eq!(bank.expression(), format!("{{{{ {} }}}}", bank.id));
        let other = recent(TokenType::Token, None);
        assert_eq!(other.expression(), format!("{{{{ {} }}}}", other.id));
    }

    #[test]
    fn the_list_shows_masks_and_expressions_and_hides_insert_until_the_script_runs() {
        let card = recent(TokenType::Card, Some("•••• 1111"));
        let html = recent_tokens(&RecentTokens::Listed(vec![card.clone()])).into_string();
        assert!(html.contains("•••• 1111"));
        let expression = format!("{{{{ {} | json: '$.number' }}}}", card.id);
        assert!(html.contains(&format!(">{expression}</code>")), "to copy");
        assert!(
            html.contains(&format!("data-insert=\"{expression}\"")),
            "to insert"
        );
        assert!(html.contains("hidden") && html.contains("data-insert-into=\"f-body\""));
        let none = recent_tokens(&RecentTokens::NotPermitted).into_string();
        assert!(none.contains("may not read tokens") && !none.contains("data-insert="));
    }
}
