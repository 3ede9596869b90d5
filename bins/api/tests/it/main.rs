//! The `api` binary end to end, one test binary: its commands, flags and start-up.

mod audit;
mod bulk_kill;
mod cli;
mod console;
mod cvc_retention;
mod data_keys;
mod deploy_files;
mod dev_echo;
mod hsm;
mod import;
mod kms;
mod operations;
mod readme;
mod upgrade;
mod webhooks;
