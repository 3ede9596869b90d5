//! The tenant row.

use diesel::prelude::{Insertable, Queryable, Selectable};
use tessera_domain::{
    store::{StoreError, StoredTenant},
    Tenant,
};
use time::PrimitiveDateTime;

use crate::schema::tenants;

use super::{from_db_time, parse, to_db_time};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = tenants)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct TenantRow {
    pub tenant_id: String,
    pub name: String,
    pub wrapped_data_key: Vec<u8>,
    pub created_at: PrimitiveDateTime,
    pub wrapped_index_keys: Option<Vec<u8>>,
}

impl From<&StoredTenant> for TenantRow {
    fn from(t: &StoredTenant) -> Self {
        Self {
            tenant_id: t.tenant.id.to_string(),
            name: t.tenant.name.clone(),
            wrapped_data_key: t.wrapped_data_key.clone(),
            created_at: to_db_time(t.tenant.created_at),
            wrapped_index_keys: t.wrapped_index_keys.clone(),
        }
    }
}

impl TryFrom<TenantRow> for StoredTenant {
    type Error = StoreError;

    fn try_from(r: TenantRow) -> Result<Self, StoreError> {
        Ok(StoredTenant {
            tenant: Tenant {
                id: parse("tenant id", &r.tenant_id)?,
                name: r.name,
                created_at: from_db_time(r.created_at),
            },
            wrapped_data_key: r.wrapped_data_key,
            wrapped_index_keys: r.wrapped_index_keys,
        })
    }
}
