//! The bottom layer above [`crate::fsx`]: facts and helpers every other
//! layer uses, with no state of their own. Time ([`clock`]), which ids and
//! names are safe to store ([`ids`]), content hashing ([`fingerprint`],
//! [`blake3_short`]), byte search with no CPU probe ([`bytes`]), the four
//! hosts' names ([`host`]) and the data dir ([`paths`]).

pub mod blake3_short;
pub mod bytes;
pub mod clock;
pub mod fingerprint;
pub mod host;
pub mod ids;
pub mod paths;
pub mod scope;
pub mod shell;
