//! Association use-cases (docs/api.md, "Associations"): link and unlink tokens, create a
//! child under a parent, list a parent's children.

use crate::{
    access::Principal,
    error::{Resource, VaultError},
    ids::TokenId,
    pagination::{Page, PageRequest},
    permission::Permission,
    store::{NewAssociation, StoredToken, TokenFilter},
    timestamp,
    token::{NewToken, Token},
    validation::ValidationErrors,
};

use super::{
    new_tokens::Drawn,
    tokens::{may_create, may_name_id},
    Vault,
};

/// Most parent links [`Vault::list_parents`] considers (a token with more shows the first ones).
pub const MAX_PARENTS: u32 = 1000;

fn link(parent: &StoredToken, child: &StoredToken) -> NewAssociation {
    link_to(parent, child.id.clone(), child.created_at, child.token_type)
}

/// The link `parent` → the child with this id, creation time and type.
fn link_to(
    parent: &StoredToken,
    child: TokenId,
    child_created_at: time::OffsetDateTime,
    child_type: crate::token::TokenType,
) -> NewAssociation {
    NewAssociation {
        tenant_id: parent.tenant_id,
        parent_id: parent.id.clone(),
        child_id: child,
        child_created_at,
        child_type,
        created_at: timestamp::now(),
    }
}

impl Vault {
    /// Links `parent` → `child`. Needs `token:read` on both tokens; idempotent. Links form a
    /// directed graph: `A→B` and `B→A` may both exist, and a child may have many parents.
    pub async fn associate(
        &self,
        caller: &Principal,
        parent: TokenId,
        child: TokenId,
    ) -> Result<(), VaultError> {
        caller.require_somewhere(Permission::TokenRead)?;
        if parent == child {
            return Err(
                ValidationErrors::single("child_id", "a token cannot be its own child").into(),
            );
        }
        let parent = self.stored_token(caller, parent).await?;
        let child = self.stored_token(caller, child).await?;
        caller.require_on(Permission::TokenRead, &parent.container)?;
        caller.require_on(Permission::TokenRead, &child.container)?;
        Ok(self
            .store
            .insert_association(&link(&parent, &child))
            .await?)
    }

    /// Removes the link `parent` → `child`; both tokens remain. Needs `token:delete` on the
    /// parent's container.
    pub async fn dissociate(
        &self,
        caller: &Principal,
        parent: TokenId,
        child: TokenId,
    ) -> Result<(), VaultError> {
        caller.require_somewhere(Permission::TokenDelete)?;
        let parent_token = self.stored_token(caller, parent.clone()).await?;
        caller.require_on(Permission::TokenDelete, &parent_token.container)?;
        if self
            .store
            .delete_association(caller.tenant_id(), parent, child)
            .await?
        {
            Ok(())
        } else {
            Err(VaultError::NotFound(Resource::Association))
        }
    }

    /// Creates a token and links it under `parent`, in one transaction. Needs `token:read` on
    /// the parent and `token:create` on the child's container. With `deduplicate_token`, an
    /// existing equal token is linked instead (and `false` returned: nothing was created).
    pub async fn create_child_token(
        &self,
        caller: &Principal,
        parent: TokenId,
        input: NewToken,
    ) -> Result<(Token, bool), VaultError> {
        caller.require_somewhere(Permission::TokenRead)?;
        let parent = self.stored_token(caller, parent).await?;
        caller.require_on(Permission::TokenRead, &parent.container)?;
        may_name_id(caller, &input)?;
        let now = crate::timestamp::now();
        let valid = input.validate_at(now)?;
        may_create(caller, &valid)?;
        let (key, fingerprint, duplicate) = self.prepare_create(caller, &valid, now).await?;
        if let Some(found) = duplicate {
            if found.id != parent.id {
                self.store
                    .insert_association(&link_to(
                        &parent,
                        found.id.clone(),
                        found.created_at,
                        found.token_type,
                    ))
                    .await?;
            }
            return Ok((found, false));
        }
        let mut drawn = Drawn::with_capacity(1, self.cvc);
        drawn.push(caller, &key, String::new(), valid, fingerprint)?;
        let insert = async |rows: &[StoredToken]| {
            let child = &rows[0];
            self.store
                .insert_child_token(child, &link(&parent, child))
                .await
        };
        self.insert_settled(caller, &key, &mut drawn, insert)
            .await?;
        Ok((drawn.tokens.remove(0), true))
    }

    /// Lists the parents of `child` that the caller may read (the first [`MAX_PARENTS`]
    /// links), in their creation order. Needs `token:read` on the child; parents the caller may
    /// not read are neither listed nor counted.
    pub async fn list_parents(
        &self,
        caller: &Principal,
        child: TokenId,
        page: PageRequest,
    ) -> Result<Page<Token>, VaultError> {
        caller.require_somewhere(Permission::TokenRead)?;
        let child = self.stored_token(caller, child).await?;
        caller.require_on(Permission::TokenRead, &child.container)?;
        let ids = self
            .store
            .parent_ids(caller.tenant_id(), child.id, MAX_PARENTS)
            .await?;
        if ids.is_empty() {
            // An empty id filter means "any token": answer the empty page here.
            return Ok(Page {
                items: Vec::new(),
                total_items: 0,
                request: page,
            });
        }
        let filter = TokenFilter {
            ids,
            ..TokenFilter::default()
        };
        self.list_tokens(caller, &filter, page).await
    }

    /// Lists `parent`'s children with filters and pagination, in the children's creation order.
    /// Needs `token:read` on the parent; children the caller may not read are neither listed
    /// nor counted.
    pub async fn list_children(
        &self,
        caller: &Principal,
        parent: TokenId,
        filter: &TokenFilter,
        page: PageRequest,
    ) -> Result<Page<Token>, VaultError> {
        caller.require_somewhere(Permission::TokenRead)?;
        let parent = self.stored_token(caller, parent).await?;
        caller.require_on(Permission::TokenRead, &parent.container)?;
        let filter = TokenFilter {
            parent: Some(parent.id),
            live_at: Some(crate::timestamp::now()),
            ..filter.clone()
        };
        let scope = self
            .readable_scope(caller, Permission::TokenRead, &filter)
            .await?;
        self.list_in_scope(caller.tenant_id(), &filter, &scope, page)
            .await
    }
}
