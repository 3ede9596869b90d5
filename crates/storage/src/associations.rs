//! [`AssociationStore`] for both backends.

use async_trait::async_trait;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    store::{AssociationStore, NewAssociation, StoreError, StoredToken},
    TenantId, TokenId,
};

use crate::{
    database::{with_conn, Database, DbResultExt},
    rows::{AssociationRow, TokenMetadataRow, TokenRow},
    schema::{token_associations, token_metadata, tokens},
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
        let token = TokenRow::from(child);
        let metadata = TokenMetadataRow::for_token(child);
        let link = AssociationRow::from(link);
        with_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::insert_into(tokens::table)
                    .values(&token)
                    .execute(conn)
                    .await?;
                for pair in &metadata {
                    diesel::insert_into(token_metadata::table)
                        .values(pair)
                        .execute(conn)
                        .await?;
                }
                diesel::insert_into(token_associations::table)
                    .values(&link)
                    .execute(conn)
                    .await?;
                Ok(())
            })
            .await
            .db()
        })
    }
}
