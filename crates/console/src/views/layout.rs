//! The page shell: head (the embedded stylesheet and script only), navigation, sign-out form.

use maud::{html, Markup, DOCTYPE};
use tessera_domain::Principal;

use super::Section;

/// What the shell of a signed-in page shows.
pub(crate) struct Chrome<'a> {
    /// The session's CSRF token, for the sign-out form.
    pub(crate) csrf: &'a str,
    /// The current section (marked in the navigation).
    pub(crate) section: Section,
    /// Who is signed in.
    pub(crate) principal: &'a Principal,
    /// Its name, when it could be read.
    pub(crate) app_name: Option<&'a str>,
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="referrer" content="no-referrer";
            title { (title) " · Tessera console" }
            link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml";
            link rel="stylesheet" href="/console/assets/console.css";
            script src="/console/assets/console.js" defer {}
        }
    }
}

/// A signed-in page: navigation, sign-out, then `body` under an `h1` of `title`.
pub(crate) fn page(chrome: &Chrome<'_>, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/console/tokens" { span.logo aria-hidden="true" { "◆" } "Tessera" }
                    nav aria-label="Main" {
                        ul {
                            @for (section, href, label) in Section::ALL {
                                li {
                                    @if section == chrome.section {
                                        a href=(href) aria-current="page" { (label) }
                                    } @else {
                                        a href=(href) { (label) }
                                    }
                                }
                            }
                        }
                    }
                    form.signout method="post" action="/console/sign-out" {
                        input type="hidden" name="csrf" value=(chrome.csrf);
                        button.secondary type="submit" { "Sign out" }
                    }
                }
                main #main tabindex="-1" {
                    h1 { (title) }
                    (body)
                }
                footer {
                    "Signed in as "
                    @if let Some(name) = chrome.app_name {
                        strong.app-name title=(chrome.principal.application_id()) { (name) } " "
                        code.muted.app-id { (chrome.principal.application_id()) }
                    } @else {
                        "application " code.app-id { (chrome.principal.application_id()) }
                    }
                    " (" (chrome.principal.app_type().as_str()) ") of tenant "
                    code { (chrome.principal.tenant_id()) }
                }
            }
        }
    }
}

/// A page without navigation (sign-in, errors before or outside a session).
pub(crate) fn bare(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                main #main tabindex="-1" {
                    p.brand { span.logo aria-hidden="true" { "◆" } "Tessera" }
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}
