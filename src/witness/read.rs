//! The bounded, incremental read of a host's transcript from the saved
//! offset on: what was appended since the last question, checked against
//! the seal of the bytes before it (a file rewritten in place), applied to
//! the conversation's [`Track`] line by line.

use super::file::{MAX_READ_BYTES, State, TRANSCRIPT};
use super::held::Held;
use super::owner::{self, Boundaries};
use super::progress::Seen;
use super::scan::{Effect, Fact, classify_in, prompt_id_of};
use crate::fsx;
use crate::state::journal::Reach;
use crate::state::secret::Secret;
use std::fs::File;
use std::io;
use std::path::Path;

/// The transcript `st` names, open: the held handle while the path still
/// names that file (one `stat`, following a symlink as the open does), else
/// opened again (bounded: a FIFO or a device is refused without blocking).
/// Returns its length and (device, inode).
pub(super) fn open_transcript(st: &State, held: &mut Option<(File, (u64, u64))>) -> io::Result<(u64, (u64, u64))> {
    let path = Path::new(&st.transcript);
    if let Some((_, id)) = held.as_ref()
        && let Ok(md) = std::fs::metadata(path)
        && md.file_type().is_file()
        && fsx::path_id(path, &md).is_ok_and(|now| now == *id)
    {
        return Ok((md.len(), *id));
    }
    *held = None;
    let (f, md) = fsx::open_file(path, &TRANSCRIPT)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the transcript is gone"))?;
    let id = fsx::handle_id(&f, &md)?;
    *held = Some((f, id));
    Ok((md.len(), id))
}

/// What one read on found.
pub(super) struct ReadOn {
    /// Why every delivery ended, if it did.
    pub ended: Option<String>,
    /// What ended, when `ended`: everything, every main thread
    /// ([`Effect::Main`]: a subagent's deliveries stand), or one host
    /// process's main thread (its boundary proven its: [`super::owner`]).
    pub reach: Reach<'static>,
    /// Bytes left unread (over the budget).
    pub behind: u64,
    /// The facts it applied, when each was a prompt or MCP tool uses with
    /// no idle return pending, and the file was the one read before: a
    /// progress record can carry them ([`super::progress`]). `None`: save
    /// the state whole.
    pub seen: Option<Vec<Seen>>,
}

/// Read on from `st.offset`. The [`TAIL_BYTES`] before the offset are read
/// again and compared with their seal from the last question: a file
/// rewritten in place (the same inode, any length) is caught when its
/// bytes there differ.
pub(super) fn read_on(h: &mut Held, secret: &Secret) -> io::Result<ReadOn> {
    let Held { state: st, transcript, buf, .. } = h;
    let (len, id) = open_transcript(st, transcript)?;
    let Some((f, _)) = transcript.as_ref() else { return Err(io::Error::other("the transcript is not open")) };
    let mut ended = None;
    let mut reach = Reach::All;
    // The main thread's compaction boundaries, attributed to a process
    // when their summary lines prove it ([`owner`]).
    let mut boundaries = Boundaries::default();
    let restart = |st: &mut State, why: &str| {
        // What changed in a replaced file cannot be known: every delivery
        // ends, and reading starts again at its end.
        st.file = id;
        st.offset = len;
        st.skipping = false;
        st.track.reset_positions();
        // Every delivery ends: the processes' returns are moot.
        st.returns.clear();
        Some(why.to_string())
    };
    // A process's return waiting: this read changes it, so the state is saved whole.
    let mut seen = st.returns.is_empty().then(Vec::new);
    if st.file == (0, 0) {
        st.file = id;
        seen = None;
    } else if st.file != id {
        ended = restart(st, "the transcript was replaced");
    } else if len < st.offset {
        ended = restart(st, "the transcript shrank");
    }
    let (mut back, mut hi) = first_read(f, st.offset, len, buf)?;
    if ended.is_none() && !st.tail.is_empty() && !tail_is(secret, &buf[..back], &st.tail) {
        ended = restart(st, "the transcript was rewritten");
        (back, hi) = first_read(f, st.offset, len, buf)?;
    }
    let start = st.offset;
    let avail = len - start;
    let want = avail.min(MAX_READ_BYTES);
    // `buf[lo..hi]` holds the bytes read and not yet consumed (a line whose
    // end is still to come); `done` bytes past `start` were consumed (whole
    // lines, or a skipped line's part), `got` read.
    let (mut lo, mut done, mut got) = (back, 0u64, (hi - back) as u64);
    let mut tail = Tail::new();
    tail.push(&buf[..back]);
    loop {
        let from = lo;
        if st.skipping {
            match crate::base::bytes::find(b'\n', &buf[lo..hi]) {
                Some(nl) => {
                    lo += nl + 1;
                    st.skipping = false;
                }
                None => lo = hi,
            }
            done += (lo - from) as u64;
        }
        while let Some(nl) = crate::base::bytes::find(b'\n', &buf[lo..hi]) {
            let at = start + done;
            let line = &buf[lo..lo + nl];
            let fact = classify_in(line, st.track.pending.is_some() || !st.returns.is_empty());
            if !st.returns.is_empty() {
                let id = if matches!(fact, Fact::Prompt(_)) { prompt_id_of(line) } else { None };
                for r in &mut st.returns {
                    r.saw(&fact, id.as_deref(), at);
                }
            }
            match (&fact, seen.as_mut()) {
                (Fact::Nothing, _) | (_, None) => {}
                (Fact::Prompt(u), Some(s)) if st.track.pending.is_none() => s.push(Seen::Prompt(at, u.clone())),
                (Fact::ToolUses(ids), Some(s)) if st.track.pending.is_none() => s.push(Seen::Tools(at, ids.clone())),
                _ => seen = None,
            }
            match &fact {
                Fact::Compacted { main: true, uuid } => boundaries.boundary(uuid.clone()),
                Fact::Summary { parent, prompt_id, .. } => {
                    boundaries.summary(&st.owners, parent.as_deref(), prompt_id.as_deref())
                }
                _ => {}
            }
            match st.track.apply(fact, at) {
                // A main-thread boundary: folded in once the read is done.
                Effect::Some | Effect::Main => {}
                Effect::All if reach != Reach::All || ended.is_none() => {
                    st.returns.clear();
                    ended = Some(
                        "the transcript shows the host cleared, compacted or rewound past its results".to_string(),
                    );
                    reach = Reach::All;
                }
                Effect::All => {}
            }
            lo += nl + 1;
            done += nl as u64 + 1;
        }
        tail.push(&buf[from..lo]);
        if got == want {
            break;
        }
        if hi == buf.len() {
            if lo > 0 {
                // The line being read moves to the front.
                buf.copy_within(lo..hi, 0);
                (lo, hi) = (0, hi - lo);
            } else {
                // A line longer than the buffer: it grows (to the budget at most).
                buf.resize((buf.len() * 2).max(CHUNK), 0);
            }
        }
        let k = ((buf.len() - hi) as u64).min(want - got) as usize;
        match read_at(f, &mut buf[hi..hi + k], start + got)? {
            // Shorter than its length said: what is missing is unread.
            0 => break,
            n => (hi, got) = (hi + n, got + n as u64),
        }
    }
    // A line with no end yet: being written (read it next time), unless it
    // alone fills the budget; then it cannot be read whole, so nothing in
    // it can be ruled out.
    if done == 0 && got == MAX_READ_BYTES {
        done = got;
        tail.push(&buf[lo..hi]);
        st.skipping = true;
        if reach != Reach::All || ended.is_none() {
            ended = Some(format!("a transcript line longer than {MAX_READ_BYTES} bytes"));
            reach = Reach::All;
        }
    }
    if let Some(b) = boundaries.reach() {
        (ended, reach) = match ended {
            Some(why) => (Some(why), owner::widen(reach, b)),
            None => (Some(compacted_why(b)), b),
        };
    }
    st.offset += done;
    seal_tail(secret, tail.bytes(), &mut st.tail);
    Ok(ReadOn { seen: if ended.is_some() { None } else { seen }, ended, reach, behind: avail - got })
}

/// Why the main-thread boundaries of one read ended deliveries.
fn compacted_why(reach: Reach<'_>) -> String {
    match reach {
        Reach::MainOf(p) => format!("the transcript shows host process {p} compacted its main thread"),
        _ => "the transcript shows the host compacted its main thread".to_string(),
    }
}

/// The read buffer's size: a question reads its bytes in pieces of this
/// size into one buffer kept for the process, moving the line being read
/// to its front, and grows it only for a line longer than that. Reading
/// everything appended into one buffer faulted in a fresh page per 4 KiB
/// in a one-shot `leanctx stub` (25 for 100 KB; benches/README.md).
pub const CHUNK: usize = 32 << 10;

/// The last [`TAIL_BYTES`] consumed (before the offset).
struct Tail {
    buf: [u8; TAIL_BYTES as usize],
    len: usize,
}

impl Tail {
    fn new() -> Self {
        Tail { buf: [0; TAIL_BYTES as usize], len: 0 }
    }

    fn push(&mut self, bytes: &[u8]) {
        let cap = self.buf.len();
        if bytes.len() >= cap {
            self.buf.copy_from_slice(&bytes[bytes.len() - cap..]);
            self.len = cap;
            return;
        }
        let keep = self.len.min(cap - bytes.len());
        self.buf.copy_within(self.len - keep..self.len, 0);
        self.buf[keep..keep + bytes.len()].copy_from_slice(bytes);
        self.len = keep + bytes.len();
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Read from `TAIL_BYTES` before `offset` (or the file's start) on, as
/// much of what follows as `buf` holds (made at least [`CHUNK`] or what
/// there is to read): how many of its bytes lie before `offset`, and how
/// many were read.
fn first_read(f: &File, offset: u64, len: u64, buf: &mut Vec<u8>) -> io::Result<(usize, usize)> {
    let back = offset.min(TAIL_BYTES);
    let need = back + len.saturating_sub(offset).min(MAX_READ_BYTES);
    // No bigger than this question needs (nothing new: the 256 bytes).
    let size = need.min(CHUNK as u64) as usize;
    if buf.len() < size {
        buf.resize(size, 0);
    }
    let n = need.min(buf.len() as u64) as usize;
    let mut got = 0;
    // The bytes before the offset are all that must be there; a short
    // read after them is read on by the caller.
    while got < n && (got as u64) < back.max(1) {
        match read_at(f, &mut buf[got..n], offset - back + got as u64)? {
            0 => break,
            k => got += k,
        }
    }
    if (got as u64) < back {
        return Err(io::Error::other("the transcript shrank while it was read"));
    }
    Ok((back as usize, got))
}

/// `pread`, again when interrupted.
fn read_at(f: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    loop {
        match fsx::read_at(f, buf, at) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// Bytes before the offset read again on every question.
pub const TAIL_BYTES: u64 = 256;

/// The seal of the bytes before the offset (keyed: they are the host's
/// content, which is never stored); empty for none.
/// Written into `tail`'s own buffer, and compared ([`tail_is`]) without a
/// string: both happen at every question.
fn seal_tail(secret: &Secret, bytes: &[u8], tail: &mut String) {
    if bytes.is_empty() { tail.clear() } else { secret.seal_into("witness-tail", bytes, tail) }
}

/// Whether `tail` is the seal of `bytes` ([`seal_tail`]).
fn tail_is(secret: &Secret, bytes: &[u8], tail: &str) -> bool {
    if bytes.is_empty() { tail.is_empty() } else { secret.seal_is("witness-tail", bytes, tail) }
}
