//! Liveness of the backing database.

use async_trait::async_trait;

use super::StoreError;

/// Liveness of the backing database.
#[async_trait]
pub trait HealthStore: Send + Sync {
    /// Round-trips a trivial query.
    async fn ping(&self) -> Result<(), StoreError>;
}
