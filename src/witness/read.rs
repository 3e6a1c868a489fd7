//! The bounded, incremental read of a host's transcript from the saved
//! offset on: what was appended since the last question, checked against
//! the seal of the bytes before it (a file rewritten in place), applied to
//! the conversation's [`Track`] line by line.

use super::file::{MAX_READ_BYTES, State, TRANSCRIPT};
use super::held::Held;
use super::progress::Seen;
use super::scan::{Effect, Fact, classify_in};
use crate::fsx;
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
    let restart = |st: &mut State, why: &str| {
        // What changed in a replaced file cannot be known: every delivery
        // ends, and reading starts again at its end.
        st.file = id;
        st.offset = len;
        st.skipping = false;
        st.track.reset_positions();
        Some(why.to_string())
    };
    let mut seen = Some(Vec::new());
    if st.file == (0, 0) {
        st.file = id;
        seen = None;
    } else if st.file != id {
        ended = restart(st, "the transcript was replaced");
    } else if len < st.offset {
        ended = restart(st, "the transcript shrank");
    }
    let mut back = read_from(f, st.offset, len, buf)?;
    if ended.is_none() && !st.tail.is_empty() && seal_tail(secret, &buf[..back]) != st.tail {
        ended = restart(st, "the transcript was rewritten");
        back = read_from(f, st.offset, len, buf)?;
    }
    let avail = len - st.offset;
    let got = buf.len() - back;
    let new = &buf[back..];
    let mut pos = 0usize;
    if st.skipping {
        match memchr::memchr(b'\n', new) {
            Some(nl) => {
                pos = nl + 1;
                st.skipping = false;
            }
            None => pos = new.len(),
        }
    }
    while let Some(nl) = memchr::memchr(b'\n', &new[pos..]) {
        let at = st.offset + pos as u64;
        let fact = classify_in(&new[pos..pos + nl], st.track.pending.is_some());
        match (&fact, seen.as_mut()) {
            (Fact::Nothing, _) | (_, None) => {}
            (Fact::Prompt(u), Some(s)) if st.track.pending.is_none() => s.push(Seen::Prompt(at, u.clone())),
            (Fact::ToolUses(ids), Some(s)) if st.track.pending.is_none() => s.push(Seen::Tools(at, ids.clone())),
            _ => seen = None,
        }
        if st.track.apply(fact, at) == Effect::All && ended.is_none() {
            ended = Some("the transcript shows the host cleared, compacted or rewound past its results".to_string());
        }
        pos += nl + 1;
    }
    // A line with no end yet: being written (read it next time), unless it
    // alone fills the budget; then it cannot be read whole, so nothing in
    // it can be ruled out.
    if pos == 0 && got as u64 == MAX_READ_BYTES {
        pos = got;
        st.skipping = true;
        ended.get_or_insert_with(|| format!("a transcript line longer than {MAX_READ_BYTES} bytes"));
    }
    st.offset += pos as u64;
    // The bytes before the new offset are in the buffer: it starts at most
    // TAIL_BYTES before the old one.
    let end = back + pos;
    st.tail = seal_tail(secret, &buf[end - end.min(TAIL_BYTES as usize)..end]);
    Ok(ReadOn { seen: if ended.is_some() { None } else { seen }, ended, behind: avail - got as u64 })
}

/// Bytes before the offset read again on every question.
pub const TAIL_BYTES: u64 = 256;

/// Read from `TAIL_BYTES` before `offset` (or the file's start) up to
/// [`MAX_READ_BYTES`] past it into `buf` (kept between questions): how many
/// of its bytes lie before `offset`.
fn read_from(f: &File, offset: u64, len: u64, buf: &mut Vec<u8>) -> io::Result<usize> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let back = offset.min(TAIL_BYTES);
    let n = back + len.saturating_sub(offset).min(MAX_READ_BYTES);
    buf.clear();
    // Read into the reserved room, not a zero-filled one: filling 100 KB
    // first was an eighth of a one-shot question's instructions.
    buf.reserve(n as usize);
    let mut r = f;
    r.seek(SeekFrom::Start(offset - back))?;
    r.take(n).read_to_end(buf)?;
    if (buf.len() as u64) < back {
        return Err(io::Error::other("the transcript shrank while it was read"));
    }
    Ok(back as usize)
}

/// The seal of the bytes before the offset (keyed: they are the host's
/// content, which is never stored); empty for none.
fn seal_tail(secret: &Secret, bytes: &[u8]) -> String {
    if bytes.is_empty() { String::new() } else { secret.seal_bytes("witness-tail", bytes) }
}
