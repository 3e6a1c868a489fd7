//! Time as a value. Every decision core takes `now` as an argument; only the
//! edges (hook runner, read-path API, CLI) ask the wall clock, through here.

use std::time::{SystemTime, UNIX_EPOCH};

/// How long what a hook wrote about a conversation counts: the slot, and
/// the journal's sightings, ends, compactions and subagents. Two hours.
pub const STATE_TTL_MS: u64 = 2 * 60 * 60 * 1000;

/// How far ahead of the reader's clock a stamp may be and still count: the
/// reader's clock may be behind the writers' (at 5 s, a reader 5 s behind
/// saw two live chats as none). Further ahead, it was stamped by a clock
/// that ran ahead, or read by one that went back: a slot that far ahead
/// reads as absent (a clock jump cannot keep it alive), a journal record as
/// not yet happened. One value for the slot and the journal.
pub const FUTURE_SKEW_MS: u64 = 60 * 1000;

/// Milliseconds since the Unix epoch. A clock before 1970 reads as 0 rather
/// than panicking: a broken clock must not break a hook.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Test and fault-injection seam: `LEAN_CTX_NOW_MS` overrides the wall clock
/// for this process when set to an integer. Used by tests to move time
/// without touching the system clock.
pub fn now_ms_env() -> u64 {
    match std::env::var_os("LEAN_CTX_NOW_MS") {
        Some(v) => v.to_str().and_then(|s| s.trim().parse().ok()).unwrap_or_else(now_ms),
        None => now_ms(),
    }
}
