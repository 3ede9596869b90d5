//! Cursor pages of tokens (`GET /v2/tokens`, `POST /v2/tokens/search`; docs/api.md "Cursor
//! pages"): a keyset walk, newest first, over the tokens the caller may read.

use crate::{
    access::Principal,
    cursor::{Binding, CursorError, CursorPage, CursorRequest},
    error::VaultError,
    permission::Permission,
    store::{Position, TokenSearch},
    token::Token,
    validation::ValidationErrors,
};

use super::{sealing::decrypt_with, Vault};

impl Vault {
    /// One page of a walk over the caller's tenant's tokens passing `search`, newest first
    /// (`created_at`, then id). Needs `permission`: `token:read` to list (`GET /v2/tokens`),
    /// `token:search` (or `token:read`) to search; tokens in containers the caller may not act
    /// on so are never returned, and neither the page nor its cursor depends on them.
    ///
    /// `page.start`, unless absent or empty, must be a cursor this vault issued to the same application of the same
    /// tenant for the same criteria; anything else is a 400 naming `start`, the same one
    /// whatever was wrong with it. The next cursor is `None` on the last page.
    pub async fn walk_tokens(
        &self,
        caller: &Principal,
        search: &TokenSearch,
        page: &CursorRequest,
        permission: Permission,
    ) -> Result<CursorPage<Token>, VaultError> {
        caller.require_access_somewhere(permission)?;
        let tenant = caller.tenant_id();
        let key = self.keys.cursor_key(self.store.as_ref()).await?;
        let binding = Binding::new(tenant, caller.application_id(), search);
        // An empty `start` is the first page, like an absent one.
        let after = match page.start.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(start) => Some(key.open(&binding, start).map_err(refused)?),
        };
        let (search, scope) = self
            .readable_live_search(caller, search, permission)
            .await?;
        // One more than a page: whether a next page exists, without an empty last page.
        let mut stored = self
            .store
            .search_tokens_after(tenant, &search, &scope, after, page.size.saturating_add(1))
            .await?;
        let more = stored.len() > page.size as usize;
        stored.truncate(page.size as usize);
        let next = match (more, stored.last()) {
            (true, Some(last)) => Some(key.seal(
                &binding,
                Position {
                    created_at: last.created_at,
                    id: last.id.clone(),
                },
            )),
            _ => None,
        };
        let data_key = self.keys.data_key(self.store.as_ref(), tenant).await?;
        let items = stored
            .into_iter()
            .map(|t| decrypt_with(&data_key, self.cvc, t))
            .collect::<Result<_, _>>()?;
        Ok(CursorPage {
            items,
            size: page.size,
            next,
        })
    }
}

/// The 400 of a refused cursor: one message for every reason, so that a forged or foreign
/// cursor learns nothing from the answer (the reason is logged).
fn refused(reason: CursorError) -> VaultError {
    tracing::debug!(%reason, "cursor refused");
    VaultError::Validation(ValidationErrors::single(
        "start",
        "is not a cursor this key was given for these filters; start the walk again without `start`",
    ))
}
