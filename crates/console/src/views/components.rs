//! Pieces the pages share: form fields with their problems next to them, the problem summary,
//! pagination, a key shown once, timestamps.

use std::collections::BTreeMap;

use maud::{html, Markup};
use tessera_domain::{ApplicationId, Page, ValidationErrors, VaultError};
use tessera_service::problem::Problem;
use time::OffsetDateTime;

use crate::names::Names;

/// What is wrong with a submitted form, in the API's words: field problems keyed as the API
/// keys them (`name`, `data.number`, `rules[0].container`), and the detail.
#[derive(Debug, Clone, Default)]
pub(crate) struct Problems {
    pub(crate) detail: Option<String>,
    pub(crate) fields: BTreeMap<String, Vec<String>>,
}

impl Problems {
    /// No problem.
    pub(crate) fn none() -> Self {
        Self::default()
    }

    /// The problems of a refused use-case (the API's problem body).
    pub(crate) fn from_vault(error: &VaultError) -> Self {
        let problem = Problem::from_vault(error);
        Self {
            detail: problem.detail,
            fields: problem.errors.unwrap_or_default(),
        }
    }

    /// Field problems found by the console before asking the vault (a form field that is
    /// not a number, say).
    pub(crate) fn from_fields(errors: &ValidationErrors) -> Self {
        Self {
            detail: Some(errors.to_string()),
            fields: errors.fields().clone(),
        }
    }

    /// The messages about `field`.
    pub(crate) fn of(&self, field: &str) -> &[String] {
        self.fields.get(field).map_or(&[], Vec::as_slice)
    }

    /// Whether there is nothing to show.
    pub(crate) fn is_empty(&self) -> bool {
        self.detail.is_none() && self.fields.is_empty()
    }
}

/// The HTML id of the input for `field` (`rules[0].container` → `f-rules-0--container`).
pub(crate) fn field_id(field: &str) -> String {
    let mut id = String::from("f-");
    id.extend(
        field
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }),
    );
    id
}

fn error_id(field: &str) -> String {
    format!("e{}", &field_id(field)[1..])
}

/// The problems about `field`, next to it (referenced by the input's `aria-describedby`).
pub(crate) fn field_errors(problems: &Problems, field: &str) -> Markup {
    let messages = problems.of(field);
    html! {
        @if !messages.is_empty() {
            p.field-error id=(error_id(field)) {
                @for (i, m) in messages.iter().enumerate() {
                    @if i > 0 { br; }
                    (m)
                }
            }
        }
    }
}

/// The summary at the top of a refused form: every problem, each linking to its field.
pub(crate) fn problem_summary(problems: &Problems) -> Markup {
    html! {
        @if !problems.is_empty() {
            div.problems role="alert" tabindex="-1" {
                h2 { "There is a problem" }
                @if problems.fields.is_empty() {
                    @if let Some(detail) = &problems.detail { p { (detail) } }
                } @else {
                    ul {
                        @for (field, messages) in &problems.fields {
                            @for m in messages {
                                li { a href={ "#" (field_id(field)) } { code { (field) } ": " (m) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A labelled single-line input, its hint and its problems.
pub(crate) struct Input<'a> {
    pub(crate) label: &'a str,
    pub(crate) name: &'a str,
    pub(crate) value: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) hint: Option<&'a str>,
    pub(crate) required: bool,
    /// The field the API keys problems by, when it differs from `name`.
    pub(crate) field: Option<&'a str>,
}

impl<'a> Input<'a> {
    /// A text input.
    pub(crate) fn text(label: &'a str, name: &'a str, value: &'a str) -> Self {
        Self {
            label,
            name,
            value,
            kind: "text",
            hint: None,
            required: false,
            field: None,
        }
    }

    /// With a hint under the label.
    pub(crate) fn hint(mut self, hint: &'a str) -> Self {
        self.hint = Some(hint);
        self
    }

    /// Marked required.
    pub(crate) fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Of another input type (`password`, `search`, `number`).
    pub(crate) fn kind(mut self, kind: &'a str) -> Self {
        self.kind = kind;
        self
    }

    /// Problems keyed by `field` belong to this input.
    pub(crate) fn field(mut self, field: &'a str) -> Self {
        self.field = Some(field);
        self
    }

    /// The field with `problems`.
    pub(crate) fn render(&self, problems: &Problems) -> Markup {
        let field = self.field.unwrap_or(self.name);
        labelled(self.label, field, self.hint, problems, |aria| {
            html! {
                input id=(field_id(field)) type=(self.kind) name=(self.name) value=(self.value)
                    required[self.required] aria-invalid=[aria.invalid]
                    aria-describedby=[aria.describedby] autocomplete="off" spellcheck="false";
            }
        })
    }
}

/// The `aria-invalid` and `aria-describedby` of a labelled control.
struct Aria {
    invalid: Option<&'static str>,
    describedby: Option<String>,
}

/// What every labelled control shares: the label, the hint if any and the problems of
/// `field`, then the control itself, built by `control` with its `aria-*` values.
fn labelled(
    label: &str,
    field: &str,
    hint: Option<&str>,
    problems: &Problems,
    control: impl FnOnce(Aria) -> Markup,
) -> Markup {
    let invalid = !problems.of(field).is_empty();
    let aria = Aria {
        invalid: invalid.then_some("true"),
        describedby: describedby(field, hint.is_some(), invalid),
    };
    html! {
        div.field.invalid[invalid] {
            label for=(field_id(field)) { (label) }
            @if let Some(hint) = hint { p.hint id={ "h" (&field_id(field)[1..]) } { (hint) } }
            (field_errors(problems, field))
            (control(aria))
        }
    }
}

fn describedby(field: &str, hint: bool, invalid: bool) -> Option<String> {
    let mut ids = Vec::new();
    if hint {
        ids.push(format!("h{}", &field_id(field)[1..]));
    }
    if invalid {
        ids.push(error_id(field));
    }
    (!ids.is_empty()).then(|| ids.join(" "))
}

/// A labelled textarea; `code` makes it a code editor (monospace, line numbers added by the
/// script).
pub(crate) fn textarea(
    label: &str,
    name: &str,
    value: &str,
    rows: u32,
    code: bool,
    hint: Option<&str>,
    problems: &Problems,
) -> Markup {
    labelled(label, name, hint, problems, |aria| {
        html! {
            textarea.code[code] id=(field_id(name)) name=(name) rows=(rows)
                data-code-editor=[code.then_some("true")] spellcheck="false" autocomplete="off"
                aria-invalid=[aria.invalid]
                aria-describedby=[aria.describedby] { (value) }
        }
    })
}

/// A code editor (a monospace textarea; the script adds line numbers) named `name`, whose
/// problems the API keys as `field` (`request_transform.code`). A compile error's line is
/// marked by the script.
pub(crate) fn code_editor(
    label: &str,
    name: &str,
    field: &str,
    value: &str,
    hint: &str,
    problems: &Problems,
) -> Markup {
    labelled(label, field, Some(hint), problems, |aria| {
        html! {
            div.editor {
                textarea.code id=(field_id(field)) name=(name) rows="12" data-code-editor="true"
                    spellcheck="false" autocomplete="off" autocapitalize="off" wrap="off"
                    aria-invalid=[aria.invalid]
                    aria-describedby=[aria.describedby] { (value) }
            }
        }
    })
}

/// A labelled select of `(value, label)` options.
pub(crate) fn select(
    label: &str,
    name: &str,
    options: &[(&str, &str)],
    selected: &str,
    problems: &Problems,
) -> Markup {
    labelled(label, name, None, problems, |aria| {
        html! {
            select id=(field_id(name)) name=(name) aria-invalid=[aria.invalid]
                aria-describedby=[aria.describedby] {
                @for (value, text) in options {
                    option value=(value) selected[*value == selected] { (text) }
                }
            }
        }
    })
}

/// A checkbox with its label after it.
pub(crate) fn checkbox(label: &str, name: &str, value: &str, checked: bool, id: &str) -> Markup {
    html! {
        div.check {
            input type="checkbox" id=(id) name=(name) value=(value) checked[checked];
            label for=(id) { (label) }
        }
    }
}

/// The hidden CSRF field every form carries.
pub(crate) fn csrf(token: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(token); }
}

/// "Page n of m" with previous/next links; `base` is the list's URL with its other query
/// parameters (ending in `?` or `&`).
pub(crate) fn pager<T>(page: &Page<T>, base: &str) -> Markup {
    let number = u64::from(page.request.page());
    let pages = page.total_pages();
    let size = page.request.size();
    html! {
        nav.pager aria-label="Pages" {
            @if number > 1 {
                a rel="prev" href={ (base) "page=" (number - 1) "&size=" (size) } { "← Previous" }
            }
            span { "Page " (number) " of " (pages.max(1)) " · " (page.total_items) " in all" }
            @if number < pages {
                a rel="next" href={ (base) "page=" (number + 1) "&size=" (size) } { "Next →" }
            }
        }
    }
}

/// A secret shown this once (a new key), with a copy button.
pub(crate) fn shown_once(label: &str, id: &str, secret: &str) -> Markup {
    html! {
        div.once role="status" {
            h2 { (label) }
            p { "Copy it now: it is shown only once and cannot be read again." }
            div.copyable {
                code.secret #(id) { (secret) }
                button.secondary type="button" data-copy=(id) { "Copy" }
            }
        }
    }
}

/// An application named by its id: its name (the id on hover, and beside it in muted mono
/// when `beside`), or the bare id when the name is not known (docs/console.md, "Names").
pub(crate) fn application(names: &Names, id: &ApplicationId, beside: bool) -> Markup {
    html! {
        @match names.get(id) {
            Some(name) => {
                span.app-name title=(id) { (name) }
                @if beside { " " span.mono.muted.app-id { (id) } }
            },
            None => span.mono.app-id { (id) },
        }
    }
}

/// When something was created and last modified, and by which applications.
pub(crate) struct Stamps {
    pub(crate) created_at: OffsetDateTime,
    pub(crate) created_by: ApplicationId,
    pub(crate) modified_at: OffsetDateTime,
    pub(crate) modified_by: ApplicationId,
}

impl Stamps {
    /// The ids to name.
    pub(crate) fn ids(&self) -> [ApplicationId; 2] {
        [self.created_by, self.modified_by]
    }
}

/// "Created … by … · Modified … by …", one line.
pub(crate) fn stamps(s: &Stamps, names: &Names) -> Markup {
    html! {
        p.muted.stamps {
            "Created " (when(s.created_at)) " by " (application(names, &s.created_by, false))
            " · modified " (when(s.modified_at)) " by " (application(names, &s.modified_by, false))
        }
    }
}

/// A timestamp as the API writes it (RFC 3339, UTC).
pub(crate) fn when(ts: OffsetDateTime) -> String {
    tessera_domain::timestamp::format(ts)
}

/// A confirmation page's body: `question`, a red button posting to `action`, and a way back.
pub(crate) fn confirm(
    question: &str,
    action: &str,
    button: &str,
    back: &str,
    token: &str,
) -> Markup {
    html! {
        p.lead { (question) }
        form.actions method="post" action=(action) {
            (csrf(token))
            button.danger type="submit" { (button) }
            a.button.secondary href=(back) { "Cancel" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_ids_are_html_safe() {
        assert_eq!(field_id("rules[0].container"), "f-rules-0--container");
        assert_eq!(error_id("name"), "e-name");
    }

    #[test]
    fn problems_sit_next_to_their_field_and_are_escaped() {
        let mut p = Problems::none();
        p.fields
            .insert("name".into(), vec!["<b>too long</b>".to_string()]);
        let html = Input::text("Name", "name", "\"><script>")
            .render(&p)
            .into_string();
        assert!(html.contains("aria-invalid=\"true\""));
        assert!(html.contains("&lt;b&gt;too long&lt;/b&gt;"));
        assert!(html.contains("value=\"&quot;&gt;&lt;script&gt;\""));
        assert!(!html.contains("<script>"));
    }
}
