//! The application list, the application form with its priority-ordered container rules, and
//! the pages that show a new key once.

use maud::{html, Markup};
use tessera_domain::{Application, ApplicationId, Page, Permission};

use super::components::{
    checkbox, csrf, field_id, pager, problem_summary, select, shown_once, stamps, when, Input,
    Problems, Stamps,
};
use crate::{
    inputs::application::{ApplicationForm, RuleRow},
    names::Names,
};

/// When `app` was created and modified, and by whom.
pub(crate) fn stamps_of(app: &Application) -> Stamps {
    Stamps {
        created_at: app.created_at,
        created_by: app.created_by,
        modified_at: app.modified_at,
        modified_by: app.modified_by,
    }
}

/// The list.
pub(crate) fn list(page: &Page<Application>, deleted: Option<String>) -> Markup {
    html! {
        @if let Some(id) = deleted { p.notice role="status" { "Application " code { (id) } " was deleted; its key no longer works." } }
        p.toolbar { a.button href="/console/applications/new" { "New application" } }
        div.table-wrap {
            table {
                caption.visually-hidden { "Applications" }
                thead { tr { th scope="col" { "Name" } th scope="col" { "Type" } th scope="col" { "Permissions" } th scope="col" { "Rules" } th scope="col" { "Created" } } }
                tbody {
                    @for a in &page.items {
                        tr {
                            td { a href={ "/console/applications/" (a.id) } { (a.name) } }
                            td { (a.app_type.as_str()) }
                            td { @for p in &a.permissions { span.pill { (p.as_str()) } " " } }
                            td { (a.rules.len()) }
                            td { (when(a.created_at)) }
                        }
                    }
                }
            }
        }
        (pager(page, "/console/applications?"))
    }
}

/// Messages about any field starting with `prefix` (`permissions[2]`, `rules[0].permissions`).
fn messages_under<'a>(problems: &'a Problems, prefix: &str) -> Vec<&'a String> {
    problems
        .fields
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .flat_map(|(_, m)| m)
        .collect()
}

fn errors_list(messages: &[&String], id: &str) -> Markup {
    html! {
        @if !messages.is_empty() {
            p.field-error id=(id) { @for (i, m) in messages.iter().enumerate() { @if i > 0 { br; } (m) } }
        }
    }
}

fn rule_row(i: usize, rule: &RuleRow, problems: &Problems) -> Markup {
    let key = |f: &str| format!("rules[{i}].{f}");
    let (priority, container, description) =
        (key("priority"), key("container"), key("description"));
    let permission_errors = messages_under(problems, &format!("rules[{i}].permissions"));
    html! {
        fieldset.rule data-rule="true" id=(field_id(&format!("rules[{i}]"))) {
            legend { "Rule " span data-rule-number="true" { (i + 1) } }
            div.grid {
                (Input::text("Priority", &format!("rule.{i}.priority"), &rule.priority).kind("number").field(&priority).hint("1 is consulted first.").render(problems))
                (Input::text("Container", &format!("rule.{i}.container"), &rule.container).field(&container).hint("e.g. /pci/").render(problems))
                (Input::text("Description", &format!("rule.{i}.description"), &rule.description).field(&description).render(problems))
            }
            fieldset.field {
                legend { "Token permissions in this container" }
                (errors_list(&permission_errors, &format!("e-rules-{i}-permissions")))
                div.inline {
                    @for p in Permission::ALL.iter().filter(|p| p.is_token()) {
                        (checkbox(p.as_str(), &format!("rule.{i}.permissions"), p.as_str(),
                            rule.permissions.iter().any(|x| x == p.as_str()), &format!("rule-{i}-{}", p.as_str().replace(':', "-"))))
                    }
                }
            }
            div.row-actions {
                button.secondary type="button" data-move="up" hidden { "Move up" }
                button.secondary type="button" data-move="down" hidden { "Move down" }
                button.secondary type="button" data-remove-rule="true" hidden { "Remove" }
            }
        }
    }
}

/// The application form; `id` is `None` for a new one.
pub(crate) fn form(
    token: &str,
    id: Option<&ApplicationId>,
    form: &ApplicationForm,
    problems: &Problems,
) -> Markup {
    let (action, button) = match id {
        None => (
            "/console/applications/new".to_string(),
            "Create application",
        ),
        Some(id) => (format!("/console/applications/{id}"), "Save"),
    };
    let permission_errors = messages_under(problems, "permissions");
    let blank = RuleRow::default();
    let rows = form.rules.iter().chain(std::iter::once(&blank));
    html! {
        (problem_summary(problems))
        form.stack method="post" action=(action) {
            (csrf(token))
            (Input::text("Name", "name", &form.name).required().render(problems))
            (select("Type", "type", &[("private", "private: a back-end service (token permissions)"), ("public", "public: a browser or mobile client (token:create, token:update)"), ("management", "management: proxies and applications")], &form.app_type, problems))
            fieldset.field.invalid[!permission_errors.is_empty()] id=(field_id("permissions")) {
                legend { "Permissions" }
                p.hint { "Token permissions here apply in every container no rule covers." }
                (errors_list(&permission_errors, "e-permissions"))
                div.inline {
                    @for p in Permission::ALL {
                        (checkbox(p.as_str(), "permissions", p.as_str(), form.permissions.iter().any(|x| x == p.as_str()), &format!("perm-{}", p.as_str().replace(':', "-"))))
                    }
                }
            }
            section.rules aria-labelledby="h-rules" {
                h2 #h-rules { "Container rules" }
                p.hint { "For a token, the rules whose container holds it are taken by priority (1 first); the first decides all its token permissions. Leave a row empty to drop it." }
                div.rows data-rows="rule" {
                    @for (i, rule) in rows.enumerate() { (rule_row(i, rule, problems)) }
                }
                button.secondary type="button" data-add-row="rule" hidden { "Add rule" }
            }
            div.actions {
                button type="submit" { (button) }
                a.button.secondary href="/console/applications" { "Cancel" }
            }
        }
    }
}

/// An application's page: its form and the key actions; `names` names who created and last
/// modified it.
pub(crate) fn page(
    token: &str,
    app: &Application,
    f: &ApplicationForm,
    problems: &Problems,
    names: &Names,
    saved: bool,
) -> Markup {
    html! {
        @if saved { p.notice role="status" { "Saved." } }
        (stamps(&stamps_of(app), names))
        p.toolbar {
            a.button.secondary href={ "/console/applications/" (app.id) "/regenerate" } { "Regenerate key" }
            " "
            a.button.danger href={ "/console/applications/" (app.id) "/delete" } { "Delete application" }
        }
        (form(token, Some(&app.id), f, problems))
    }
}

/// The page that shows a new key once (after create or regenerate).
pub(crate) fn key_once(app: &Application, key: &str, regenerated: bool) -> Markup {
    html! {
        p.notice role="status" {
            @if regenerated { "A new key was issued for " strong { (app.name) } "; the old one no longer works." }
            @else { "Application " strong { (app.name) } " was created." }
        }
        (shown_once("API key", "api-key", key))
        p.actions { a.button href={ "/console/applications/" (app.id) } { "Open the application" } }
    }
}
