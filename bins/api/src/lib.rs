//! Start-up code shared by the Tessera binaries (`api` and `proxy-gateway`): flags, the master
//! key, logging, storage, the gateway and signals — so both binaries stay thin and behave
//! alike.

pub mod cli;
pub mod master_key;
pub mod secret_file;
pub mod startup;
pub mod telemetry;
