//! The sign-in page.

use maud::{html, Markup};

use super::{
    components::{csrf, problem_summary, Input, Problems},
    layout,
};

/// Why the sign-in page is shown, besides "not signed in".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    None,
    Expired,
    SignedOut,
}

/// The form: one field labelled "API key", a "Sign in" button.
pub(crate) fn page(token: &str, notice: Notice, problems: &Problems) -> Markup {
    layout::bare(
        "Sign in",
        html! {
            @match notice {
                Notice::Expired => p.notice role="status" { "Your session has ended. Sign in again." },
                Notice::SignedOut => p.notice role="status" { "You have signed out." },
                Notice::None => {},
            }
            (problem_summary(problems))
            p.lead { "Sign in with an application's API key. The console then acts as that application, with exactly its permissions." }
            form.signin method="post" action="/console/sign-in" {
                (csrf(token))
                (Input::text("API key", "api_key", "")
                    .kind("password")
                    .hint("It is exchanged for a session; the browser never keeps the key.")
                    .required()
                    .render(problems))
                button type="submit" { "Sign in" }
            }
        },
    )
}
