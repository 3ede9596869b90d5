//! The parent-child link row.

use diesel::prelude::Insertable;
use tessera_domain::store::NewAssociation;
use time::PrimitiveDateTime;

use crate::schema::token_associations;

use super::to_db_time;

#[derive(Insertable)]
#[diesel(table_name = token_associations)]
pub(crate) struct AssociationRow {
    pub tenant_id: String,
    pub parent_id: String,
    pub child_id: String,
    pub child_created_at: PrimitiveDateTime,
    pub child_type: String,
    pub created_at: PrimitiveDateTime,
}

impl From<&NewAssociation> for AssociationRow {
    fn from(a: &NewAssociation) -> Self {
        Self {
            tenant_id: a.tenant_id.to_string(),
            parent_id: a.parent_id.to_string(),
            child_id: a.child_id.to_string(),
            child_created_at: to_db_time(a.child_created_at),
            child_type: a.child_type.as_str().to_string(),
            created_at: to_db_time(a.created_at),
        }
    }
}
