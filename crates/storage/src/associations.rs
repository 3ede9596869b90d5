//! [`AssociationStore`] for both backends.

use async_trait::async_trait;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{AssociationStore, NewAssociation, StoreError, StoredToken},
    TenantId, TokenId,
};

use crate::{
    database::{with_conn, with_write_conn, Database, DbResultExt},
    rows::AssociationRow,
    schema::token_associations,
};

#[async_trait]
impl AssociationStore for Database {
    async fn insert_association(&self, link: &NewAssociation) -> Result<(), StoreError> {
        let row = AssociationRow::from(link);
        with_write_conn!(self, |conn| {
            diesel::insert_into(token_associations::table)
                .values(&row)
                .on_conflict_do_nothing()
                .execute(conn)
                .await
                .db()
                .map(|_| ())
        })
    }

    async fn delete_association(
        &self,
        tenant: TenantId,
        parent: TokenId,
        child: TokenId,
    ) -> Result<bool, StoreError> {
        let (tenant, parent, child) = (tenant.to_string(), parent.to_string(), child.to_string());
        let deleted = with_write_conn!(self, |conn| {
            diesel::delete(
                token_associations::table
                    .filter(token_associations::tenant_id.eq(&tenant))
                    .filter(token_associations::parent_id.eq(&parent))
                    .filter(token_associations::child_id.eq(&child)),
            )
            .execute(conn)
            .await
            .db()
        })?;
        Ok(deleted == 1)
    }

    async fn insert_child_token(
        &self,
        child: &StoredToken,
        link: &NewAssociation,
    ) -> Result<(), StoreError> {
        self.insert_token_rows(child, Some(link)).await
    }

    async fn parent_ids(
        &self,
        tenant: TenantId,
        child: TokenId,
        limit: u32,
    ) -> Result<Vec<TokenId>, StoreError> {
        let (tenant, child) = (tenant.to_string(), child.to_string());
        let ids: Vec<String> = with_conn!(self, |conn| {
            token_associations::table
                .filter(token_associations::tenant_id.eq(&tenant))
                .filter(token_associations::child_id.eq(&child))
                .order((
                    token_associations::created_at.asc(),
                    token_associations::parent_id.asc(),
                ))
                .limit(i64::from(limit))
                .select(token_associations::parent_id)
                .load(conn)
                .await
                .db()
        })?;
        ids.iter()
            .map(|raw| {
                raw.parse()
                    .map_err(|_| StoreError::Corrupt(format!("invalid token id `{raw}`")))
            })
            .collect()
    }
}
