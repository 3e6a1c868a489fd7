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
///
/// The payload is read straight into its own buffer, which starts at 16 KiB
/// and doubles; bytes past `max + 1` go to an uninitialised scratch buffer
/// and are only counted. (A zeroed 64 KiB chunk per call cost every hook 16
/// page faults and a 64 KiB memset for a payload of a few KiB.)
pub fn read_bounded(fd: RawFd, max: usize, deadline: Instant) -> Input {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut sink = [std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
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
        let keeping = buf.len() <= max;
        let n = if keeping {
            // Grow only when full: a payload just under a power of two
            // (a 62 KB PostToolBatch) then fits its buffer instead of
            // moving to a fresh, page-faulting 128 KiB one before EOF.
            if buf.capacity() == buf.len() {
                buf.reserve(buf.capacity().max(4096));
            }
            // Never keep more than max + 1 bytes (one past the limit says
            // "too large").
            let room = (buf.capacity() - buf.len()).min(max + 1 - buf.len());
            // SAFETY: at most `room` bytes into the vector's spare capacity.
            unsafe { libc::read(fd, buf.as_mut_ptr().add(buf.len()).cast(), room) }
        } else {
            // SAFETY: the scratch buffer is valid for writes of its length.
            unsafe { libc::read(fd, sink.as_mut_ptr().cast(), sink.len()) }
        };
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
        if keeping {
            // SAFETY: the read initialised these `n` bytes.
            unsafe { buf.set_len(buf.len() + n) };
        } else {
            drained += n;
            if drained > MAX_DRAIN_BYTES {
                return Input::TooLarge { seen: buf.len() + drained };
            }
        }
    }
}
