//! Fields of a journal line found without parsing it: the digest locates
//! call and claim lines by their tabs and parses only the lines it is asked
//! about.

use super::Span;
// The SSE2 searches (no CPU probe): a Cursor claim looks at the fields of
// every call line in its window, byte loops from each end were ~450
// instructions a line (callgrind, benches/README.md).
use crate::base::bytes::{find, rfind};
use crate::state::journal;

/// `line.rsplit('\t').next() == Some(field)`, without searching the line.
pub(super) fn last_field_is(line: &str, field: &str) -> bool {
    line.ends_with(field)
        && (line.len() == field.len() || line.as_bytes()[line.len() - field.len() - 1] == b'\t')
        && !field.contains('\t')
}

/// The fields of a call line the digest indexes, located without parsing:
/// the conversation (4th), the agent (5th) and the call id (next to last).
pub(super) struct CallFields<'a> {
    pub(super) conv: Option<&'a str>,
    pub(super) agent: Option<&'a str>,
    pub(super) next_to_last: Option<&'a str>,
}

pub(super) fn fields_of(line: &str) -> CallFields<'_> {
    let b = line.as_bytes();
    let mut starts = [0usize; 5];
    let mut at = 0;
    for slot in starts.iter_mut().skip(1) {
        match journal::find_byte(&b[at..], b'\t') {
            Some(i) => {
                at += i + 1;
                *slot = at;
            }
            None => return CallFields { conv: None, agent: None, next_to_last: None },
        }
    }
    let field = |k: usize| {
        let s = starts[k];
        let e = journal::find_byte(&b[s..], b'\t').map_or(b.len(), |i| s + i);
        &line[s..e]
    };
    CallFields { conv: Some(field(3)), agent: Some(field(4)), next_to_last: next_to_last(line) }
}

/// The next-to-last tab-separated field (a call line's call id): a call
/// question looks at it on each line not yet indexed, and `rsplit`'s char
/// search was ~400 instructions a line (callgrind, ledger stub op 8).
pub(super) fn next_to_last(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let end = rfind(b'\t', b)?;
    let start = rfind(b'\t', &b[..end]).map_or(0, |i| i + 1);
    Some(&line[start..end])
}

/// A call line's time (its second field), if it has one.
pub(super) fn call_time(line: &str) -> Option<u64> {
    let b = line.as_bytes();
    let start = find(b'\t', b)? + 1;
    let len = find(b'\t', &b[start..])?;
    journal::parse_u64(&line[start..start + len])
}

/// The last four tab-separated fields of a line (tool, fingerprint, call
/// id, key, for a call line) and its second field (the time).
pub(super) fn call_fields(line: &str) -> Option<(&str, &str, &str, &str, &str)> {
    let b = line.as_bytes();
    let mut end = b.len();
    let mut f = [""; 4];
    for slot in f.iter_mut().rev() {
        let tab = rfind(b'\t', &b[..end])?;
        *slot = &line[tab + 1..end];
        end = tab;
    }
    let t_start = find(b'\t', b)? + 1;
    let t_len = find(b'\t', &b[t_start..])?;
    Some((&line[t_start..t_start + t_len], f[0], f[1], f[2], f[3]))
}

/// Where `part` (a slice of `whole`) lies in `whole`.
pub(super) fn span_in(whole: &str, part: &str) -> Span {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    (start, start + part.len())
}
