//! The shared state hooks write and readers read, in the data dir: the
//! slot, the journal with the delivery records of the ledger ([`ledger`]),
//! and the incremental reader that keeps a parsed journal up to date.
//! Formats: docs/ARCHITECTURE.md. Only the ledger's records and content
//! rules are library API; the rest is the binary's.

#[doc(hidden)]
pub mod digest;
#[doc(hidden)]
pub mod journal;
pub mod ledger;
#[doc(hidden)]
pub mod slot;
