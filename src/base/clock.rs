//! Time as a value. Every decision core takes `now` as an argument; only the
//! edges (hook runner, read-path API, CLI) ask the wall clock, through here.

use std::time::{SystemTime, UNIX_EPOCH};

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
