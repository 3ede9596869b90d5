//! Token creates waiting for SQLite's one writer: each queued with the rows it writes and
//! where its outcome goes, written together by whichever create gets the turn
//! (docs/architecture.md, "Writing tokens"). Below the pools that hold the queue.

use std::sync::Mutex;

use tessera_domain::store::{NewAssociation, StoreError, StoredToken};
use tokio::sync::oneshot;

use crate::rows::{AssociationRow, TokenMetadataRow, TokenRow, TokenSearchRow};

/// SQLite creates waiting to be written, each with where its outcome goes.
#[derive(Default)]
pub(crate) struct CreateQueue(Mutex<Vec<Waiting>>);

/// One queued create.
pub(crate) struct Waiting {
    pub(crate) rows: NewRows,
    pub(crate) done: oneshot::Sender<Result<(), StoreError>>,
}

impl CreateQueue {
    pub(crate) fn push(&self, waiting: Waiting) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(waiting);
    }

    pub(crate) fn take_all(&self) -> Vec<Waiting> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// The rows one create writes.
pub(crate) struct NewRows {
    pub(crate) tokens: Vec<TokenRow>,
    pub(crate) metadata: Vec<TokenMetadataRow>,
    pub(crate) search: Vec<TokenSearchRow>,
    pub(crate) link: Option<AssociationRow>,
}

impl NewRows {
    pub(crate) fn of(batch: &[StoredToken], link: Option<&NewAssociation>) -> Self {
        Self {
            tokens: batch.iter().map(TokenRow::from).collect(),
            metadata: batch.iter().flat_map(TokenMetadataRow::for_token).collect(),
            search: batch.iter().flat_map(TokenSearchRow::for_token).collect(),
            link: link.map(AssociationRow::from),
        }
    }
}
