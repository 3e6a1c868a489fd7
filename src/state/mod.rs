//! The shared state hooks write and readers read, in the data dir: the
//! slot ([`slot`]), the journal ([`journal`]) with the delivery records of
//! the ledger ([`ledger`]), and the incremental reader that keeps a
//! parsed journal up to date ([`digest`]). Formats: docs/ARCHITECTURE.md.

pub mod digest;
pub mod journal;
pub mod ledger;
pub mod slot;
