//! The proxy list, the proxy form (new and edit), the page shown once after creation, and
//! "Try it".

use maud::{html, Markup};
use tessera_domain::{Page, Proxy, ProxyId};

use super::components::{
    checkbox, code_editor, csrf, field_errors, field_id, pager, problem_summary, select,
    shown_once, textarea, when, Input, Problems,
};
use crate::{
    gateway_client::{TryRequest, TryResponse, METHODS},
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

/// The page after creation: the key, shown once.
pub(crate) fn created(id: &ProxyId, name: &str, key: &str) -> Markup {
    html! {
        p.notice role="status" { "Proxy " strong { (name) } " was created." }
        (shown_once("Proxy key", "proxy-key", key))
        p { "Callers send it as the SVC-PROXY-KEY header (or the svc-proxy-key query parameter) to /proxy." }
        p.actions { a.button href={ "/console/proxies/" (id) } { "Open the proxy" } }
    }
}

/// The "Try it" form and, after a try, what came back.
pub(crate) fn try_it(
    token: &str,
    id: &ProxyId,
    available: bool,
    request: &TryRequest,
    problems: &Problems,
    outcome: Option<&Result<TryResponse, String>>,
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
                    div.actions { button type="submit" { "Send" } }
                }
                @match outcome {
                    None => {},
                    Some(Err(message)) => div.notice role="alert" { p { (message) } },
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
