//! The readiness probe: [`HealthStore`] on [`DetachedStore`](super::DetachedStore).

use tessera_domain::store::{HealthStore, StoreError};

detached! {
    HealthStore {
        spawned fn ping() -> ();
    }
}
