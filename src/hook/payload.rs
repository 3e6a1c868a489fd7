//! Reading a hook payload with explicit bounds: at most `MAX_PAYLOAD_BYTES`
//! kept, the rest drained (so the host's write never blocks or breaks), and
//! never past a deadline (a stdin that never closes).

use std::time::{Duration, Instant};

pub use crate::fsx::Input;

/// Largest payload we parse. Real payloads are a few KiB; a PostToolUse with
/// a big file can be larger, and we fail open on it rather than spend time.
pub const MAX_PAYLOAD_BYTES: usize = 4 << 20;
/// Most we drain past the limit before giving up on the rest.
pub const MAX_DRAIN_BYTES: usize = 256 << 20;
/// How long we wait for stdin to close.
pub const STDIN_DEADLINE: Duration = Duration::from_millis(1000);

/// Read stdin until EOF, `max` bytes, or `deadline`.
pub fn read_bounded(max: usize, deadline: Instant) -> Input {
    crate::fsx::read_stdin(max, MAX_DRAIN_BYTES, deadline)
}
