//! [`AssociationStore`] for both backends.

use async_trait::async_trait;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{AssociationStore, NewAssociation, StoreError, StoredToken},
    TenantId, TokenId,
};

use crate::{
    database::{with_conn, Database, DbResultExt},
    rows::AssociationRow,
    schema::token_associations,
};

#[async_trait]
impl AssociationStore for Database {
    async fn insert_association(&self, link: &NewAssociation) -> Result<(), StoreError> {
        let row = AssociationRow::from(link);
        with_conn!(self, |conn| {
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
        let deleted = with_conn!(self, |conn| {
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
}
