//! Cursor pages (docs/api.md "Cursor pages"): a search read as a keyset walk, newest first,
//! strictly after the position the previous page ended at. The same criteria and indexes as
//! `search`, with a range condition instead of an offset, so a page costs what it returns
//! however deep the walk is, and tokens created meanwhile (newer than the walk's start) never
//! shift it.

use diesel::{
    BoolExpressionMethods, EscapeExpressionMethods, ExpressionMethods, JoinOnDsl, QueryDsl,
    SelectableHelper, TextExpressionMethods,
};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    cursor::Position,
    store::{StoreError, StoredToken},
};

use super::queries::{
    searched_by_pair, searched_tokens, with_token_criteria, SearchParams, FIRST_PAIR,
};
use crate::{
    database::{Database, DbResultExt},
    rows::{to_db_time, TokenRow},
    scan::with_scan_conn,
    schema::{token_metadata, tokens},
};

impl Database {
    /// `TokenStore::search_tokens_after`: up to `limit` tokens of a search after `after`.
    pub(super) async fn walk_page(
        &self,
        params: SearchParams,
        after: Option<Position>,
        limit: u32,
    ) -> Result<Vec<StoredToken>, StoreError> {
        let mut params = params;
        if !self.rarest_pair_first(&mut params).await? {
            return Ok(Vec::new());
        }
        let after = after.map(|p| (to_db_time(p.created_at), p.id.to_string()));
        let limit = i64::from(limit);
        let rows: Vec<TokenRow> = with_scan_conn!(self, |conn| {
            match <[_]>::first(&params.metadata) {
                Some(first) => {
                    let pair = FIRST_PAIR;
                    let (at, id) = (
                        pair.field(token_metadata::created_at),
                        pair.field(token_metadata::token_id),
                    );
                    let mut q = searched_by_pair!(&params, first);
                    if let Some((c, i)) = &after {
                        q = q.filter(at.lt(*c).or(at.eq(*c).and(id.lt(i))));
                    }
                    q.order((at.desc(), id.desc()))
                        .limit(limit)
                        .select(TokenRow::as_select())
                        .load(conn)
                        .await
                        .db()
                }
                None => {
                    let mut q = searched_tokens!(&params);
                    if let Some((c, i)) = &after {
                        q = q.filter(
                            tokens::created_at
                                .lt(*c)
                                .or(tokens::created_at.eq(*c).and(tokens::id.lt(i))),
                        );
                    }
                    q.order((tokens::created_at.desc(), tokens::id.desc()))
                        .limit(limit)
                        .select(TokenRow::as_select())
                        .load(conn)
                        .await
                        .db()
                }
            }
        })?;
        rows.into_iter().map(StoredToken::try_from).collect()
    }
}
