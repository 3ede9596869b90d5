//! The tokens "Try it" offers to insert into a test request (docs/console.md, "Try it").

use tessera_domain::{store::TokenSearch, PageRequest, Permission};

use crate::{
    context::Ctx,
    mask,
    views::proxies::{RecentToken, RecentTokens},
};

/// How many tokens Try it offers to insert.
const RECENT: i64 = 10;

/// The tokens Try it offers: the newest the signed-in application may read, found as the
/// token list finds them (`Vault::search_tokens`, which neither returns nor counts tokens it
/// may not read), each reduced to its id, type and mask ([`crate::mask::summary`]) here, so
/// no data reaches the page. Like the list, it records no event when it succeeds; a key
/// without `token:read` is not asked.
pub(crate) async fn recent_tokens(ctx: &Ctx) -> RecentTokens {
    if !ctx.principal.may_somewhere(Permission::TokenRead) {
        return RecentTokens::NotPermitted;
    }
    let Ok(page) = PageRequest::new(Some(1), Some(RECENT)) else {
        return RecentTokens::Listed(vec![]);
    };
    let found = ctx
        .state
        .vault
        .search_tokens(&ctx.principal, &TokenSearch::default(), page)
        .await;
    match found {
        Ok(found) => RecentTokens::Listed(
            found
                .items
                .iter()
                .map(|t| RecentToken {
                    id: t.id.clone(),
                    token_type: t.token_type,
                    mask: mask::summary(t.token_type, t.data.expose()),
                })
                .collect(),
        ),
        Err(e) => RecentTokens::Failed(e.public_message()),
    }
}
