//! The host's own record as a second witness. Claude Code can stop sending
//! the model a result it already delivered with no hook saying so (an idle
//! cut, the API's clearing, a rewind: docs/DELIVERY.md §8). Its transcript,
//! whose path every hook names, records each of them. Before a stub is
//! allowed the read path reads what was appended since the last question
//! and ends the deliveries the transcript shows gone.
//!
//! `scan` is the pure part (what a line says, what it withdraws); `file`
//! the state per conversation and the bounded, incremental read. The
//! hooks' part is the turn boundary ([`file::on_turn`]): where the
//! transcript is, and the idle rule that needs no timing luck.

pub mod agent;
pub mod ask;
mod exact_json;
pub mod file;
pub mod held;
pub mod idle;
pub mod ids;
pub mod lives;
pub mod owner;
pub mod progress;
mod read;
pub mod scan;

pub use file::{Boundary, Check, Question, Turn, check, on_turn};
