//! Reading a hook payload with explicit bounds: at most `MAX_PAYLOAD_BYTES`
//! kept, the rest drained (so the host's write never blocks or breaks), and
//! never past a deadline (a stdin that never closes).

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Largest payload we parse. Real payloads are a few KiB; a PostToolUse with
/// a big file can be larger, and we fail open on it rather than spend time.
pub const MAX_PAYLOAD_BYTES: usize = 4 << 20;
/// Most we drain past the limit before giving up on the rest.
pub const MAX_DRAIN_BYTES: usize = 256 << 20;
/// How long we wait for stdin to close.
pub const STDIN_DEADLINE: Duration = Duration::from_millis(1000);

#[derive(Debug)]
pub enum Input {
    /// EOF reached within the bounds.
    Complete(Vec<u8>),
    /// More than the limit arrived; what was kept is not parsed.
    TooLarge {
        seen: usize,
    },
    /// The deadline passed before EOF. What arrived is kept: if it already
    /// holds a whole JSON payload it can still be used.
    TimedOut(Vec<u8>),
    Error(io::Error),
}

/// Read `fd` until EOF, `max` bytes, or `deadline`.
pub fn read_bounded(fd: RawFd, max: usize, deadline: Instant) -> Input {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut drained = 0usize;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return if buf.len() > max { Input::TooLarge { seen: buf.len() + drained } } else { Input::TimedOut(buf) };
        }
        let wait_ms = (deadline - now).as_millis().clamp(1, i32::MAX as u128) as i32;
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Input::Error(e);
        }
        if r == 0 {
            continue; // deadline check at the top
        }
        // SAFETY: chunk is a valid writable buffer of chunk.len() bytes.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => continue,
                _ => return Input::Error(e),
            }
        }
        let n = n as usize;
        if n == 0 {
            return if buf.len() > max { Input::TooLarge { seen: buf.len() + drained } } else { Input::Complete(buf) };
        }
        if buf.len() <= max {
            buf.extend_from_slice(&chunk[..n]);
            if buf.len() > max {
                // Over the limit: stop keeping, start draining.
                drained += buf.len() - (max + 1);
                buf.truncate(max + 1);
            }
        } else {
            drained += n;
            if drained > MAX_DRAIN_BYTES {
                return Input::TooLarge { seen: buf.len() + drained };
            }
        }
    }
}
