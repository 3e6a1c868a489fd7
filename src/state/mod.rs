//! The shared state hooks write and readers read, in the data dir: the
//! slot, the journal with the delivery records of the ledger ([`ledger`]),
//! the incremental reader that keeps a parsed journal up to date, and the
//! secret that keys every digest and name hash the journal stores.
//! Formats: docs/ARCHITECTURE.md. Only the ledger's records and content
//! rules are library API; the rest is the binary's.

#[doc(hidden)]
pub mod digest;
#[doc(hidden)]
pub mod journal;
pub mod ledger;
pub mod secret;
#[doc(hidden)]
pub mod slot;
