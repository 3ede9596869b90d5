//! The token store for both backends, one part of [`TokenStore`] per file, each query written
//! in the trait method it answers:
//!
//! * `insert`: [`TokenInserts`], new tokens, their metadata rows and a child's link, a
//!   statement per table;
//! * `crud`: [`TokenRecords`], point reads, the optimistic update, delete, the duplicate
//!   lookup;
//! * `list` (with `children`): [`TokenListing`], a filtered list, and a parent's children
//!   through the link index;
//! * `search`: [`TokenSearching`], `POST /tokens/search` driven by its rarest metadata pair,
//!   and cursor pages, the same search read as a keyset walk;
//! * `upkeep`: [`TokenUpkeep`], the sweep of expired tokens, the CVC sweep's reads, and
//!   fingerprints for tokens written before fingerprints existed;
//! * `queries`: the domain's criteria as column values, and the boxed queries the others
//!   share (a scope that admits no container is answered without a query).
//!
//! [`TokenStore`]: tessera_domain::store::TokenStore
//! [`TokenInserts`]: tessera_domain::store::TokenInserts
//! [`TokenRecords`]: tessera_domain::store::TokenRecords
//! [`TokenListing`]: tessera_domain::store::TokenListing
//! [`TokenSearching`]: tessera_domain::store::TokenSearching
//! [`TokenUpkeep`]: tessera_domain::store::TokenUpkeep

mod children;
mod crud;
mod insert;
mod list;
mod queries;
mod search;
mod upkeep;
