//! Editing the audit trail as someone with write access to the database would: each stored
//! block's lines are decompressed, edited and compressed again (the codec and its dictionary
//! are public, so compression hides nothing from such a person).

use diesel::{
    sql_types::{BigInt, Binary, SmallInt, Text},
    Connection as _, QueryableByName,
};
use tessera_audit::codec;
use tessera_storage::DatabaseUrl;

#[derive(QueryableByName)]
struct Block {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = BigInt)]
    first_seq: i64,
    #[diesel(sql_type = SmallInt)]
    encoding: i16,
    #[diesel(sql_type = Binary)]
    events: Vec<u8>,
}

const SELECT: &str = "SELECT tenant_id, first_seq, encoding, events FROM audit_blocks";

/// Rewrites the lines of every block of the database at `url` (of `tenant`'s chain only, when
/// given) with `edit`, storing them compressed again.
///
/// # Panics
/// When the database cannot be reached or a block cannot be read (a broken test).
pub async fn edit_audit_lines(
    url: &DatabaseUrl,
    tenant: Option<&str>,
    edit: impl Fn(&[u8]) -> Vec<u8>,
) {
    let filter = tenant.map_or(String::new(), |t| format!(" WHERE tenant_id = '{t}'"));
    let rewrite = |b: &Block| {
        let lines = codec::decompress(b.encoding, b.events.clone()).expect("a readable block");
        codec::compress(&edit(&lines))
    };
    match url {
        DatabaseUrl::Sqlite { path } => {
            let mut conn = diesel::SqliteConnection::establish(path.to_str().expect("path"))
                .expect("open the SQLite file");
            let blocks: Vec<Block> = diesel::RunQueryDsl::load(
                diesel::sql_query(format!("{SELECT}{filter}")),
                &mut conn,
            )
            .expect("read the blocks");
            for b in &blocks {
                let (encoding, events) = rewrite(b);
                let update = diesel::sql_query(
                    "UPDATE audit_blocks SET events = ?, encoding = ? WHERE tenant_id = ? AND first_seq = ?",
                )
                .bind::<Binary, _>(events)
                .bind::<SmallInt, _>(encoding)
                .bind::<Text, _>(&b.tenant_id)
                .bind::<BigInt, _>(b.first_seq);
                diesel::RunQueryDsl::execute(update, &mut conn).expect("write the block");
            }
        }
        DatabaseUrl::Postgres { url } => {
            let mut conn = tessera_storage::postgres_connection(url.as_str())
                .await
                .expect("connect to PostgreSQL");
            let blocks: Vec<Block> = diesel_async::RunQueryDsl::load(
                diesel::sql_query(format!("{SELECT}{filter}")),
                &mut conn,
            )
            .await
            .expect("read the blocks");
            for b in &blocks {
                let (encoding, events) = rewrite(b);
                let update = diesel::sql_query(
                    "UPDATE audit_blocks SET events = $1, encoding = $2 WHERE tenant_id = $3 AND first_seq = $4",
                )
                .bind::<Binary, _>(events)
                .bind::<SmallInt, _>(encoding)
                .bind::<Text, _>(&b.tenant_id)
                .bind::<BigInt, _>(b.first_seq);
                diesel_async::RunQueryDsl::execute(update, &mut conn)
                    .await
                    .expect("write the block");
            }
        }
    }
}

/// [`edit_audit_lines`] replacing every `from` with `to` in the lines' text.
pub async fn replace_in_audit_lines(url: &DatabaseUrl, tenant: Option<&str>, from: &str, to: &str) {
    edit_audit_lines(url, tenant, |lines| {
        String::from_utf8_lossy(lines)
            .replace(from, to)
            .into_bytes()
    })
    .await;
}
