//! `not_quarantined`: a proxy whose transform recently ran past its time limit waits out a
//! doubling back-off (see `crate::quarantine`): 503 with `Retry-After` meanwhile, before its
//! body is read or anything is detokenized.

use tessera_domain::proxy::Proxy;

use super::Halt;
use crate::{
    error::{ErrorKind, GatewayError},
    shared::Shared,
};

pub(crate) fn not_quarantined(gw: &Shared, proxy: &Proxy) -> Result<(), Halt> {
    match gw.quarantine.remaining(proxy.id) {
        None => Ok(()),
        Some(seconds) => Err(GatewayError::new(
            ErrorKind::Quarantined,
            "this proxy's transform recently exceeded its time limit; retry later",
        )
        .with_retry_after(seconds)
        .into()),
    }
}
