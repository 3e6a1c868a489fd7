//! The witness's read progress between two saves of its state file: what
//! questions read on since, appended as records to the conversation's lock
//! file (`witness/<hash>.lock`), so a question that only read on writes
//! one small record in place of replacing the state file (a new inode per
//! question: the most of a one-shot `leanctx stub`'s witness cost,
//! benches/README.md).
//!
//! A record holds the offset it read from and to, the seal of the bytes
//! before its end, and the prompts and MCP tool uses it saw (ids and
//! offsets; never content), which loading applies again through
//! [`super::scan::Track::apply`] in order: the same facts on the same state give the
//! same state. Only reads whose every fact is of those two kinds, with no
//! idle return pending, are written so; anything else (a cut, a rewind, a
//! clearing, a replaced transcript) saves the state file whole, as before.
//!
//! Each record names the state file's save it extends (`save_id`, new at every
//! save) and starts where the last one ended; its line carries its own
//! checksum. A record of another save, torn, or out of order ends the
//! replay there: reading starts again from the last good offset (bounded
//! by the read budget), and the next write saves the state file whole.
//! The state file is always written first, so a crash between the two
//! leaves records of an older save, which are ignored.
//!
//! The lock file begins with [`HEADER`], so that dropping an older save's
//! records cuts it to the header's length, never to 0: ext4 flushes a file
//! cut to 0 when it is closed (its `auto_da_alloc`, for programs that
//! replace a file's content that way), and the next such cut then waits for
//! that write to reach the disk (benches/README.md, "Seventh pass").

use super::file::State;
use super::scan::{Effect, Fact};
use crate::base::blake3_short;
use serde::{Deserialize, Serialize};

mod parse;

/// Bytes of records kept before the state file is saved whole again (and
/// the records dropped): a question and a turn hook read at most this.
/// Every fresh process replays them all (~23 instructions a byte: checksum,
/// parse, apply), while a save, since the state file is rewritten in place
/// (`fsx::write_recycled_kept`), costs about what 5 KiB of records do
/// (114k instructions with 256 prompts, callgrind, benches/README.md): at
/// 16 KiB a one-shot question replayed 8 KiB on average (~190k
/// instructions); at 4 KiB it replays 2 KiB and saves four times as often
/// (~60k a question, saves included).
pub const MAX_LOG_BYTES: u64 = 4 << 10;
/// The lock file's first line, before any record (a file without it, as
/// older binaries wrote, is read the same; it gains it at its next cut).
pub const HEADER: &[u8] = b"# progress\n";
/// A record longer than this is not written (the state file is saved
/// whole instead): one question's many ids.
pub const MAX_RECORD_BYTES: usize = 4 << 10;

/// One fact a record carries: a prompt's uuid, or the MCP tool uses of one
/// assistant line, with the offset of the line that said it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Seen {
    #[serde(rename = "p")]
    Prompt(u64, String),
    #[serde(rename = "t")]
    Tools(u64, Vec<String>),
}

#[derive(Debug, Serialize, Deserialize)]
struct Rec {
    g: u64,
    from: u64,
    to: u64,
    skip: bool,
    tail: String,
    seen: Vec<Seen>,
}

/// What loading found in the lock file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Log {
    /// Its length (bytes), as read under the lock.
    pub len: u64,
    /// Its records belong to an older save (or it holds none that apply):
    /// the next record replaces them.
    pub stale: bool,
    /// A record was torn, out of order or unreadable: the next write saves
    /// the state file whole.
    pub dirty: bool,
}

/// Apply the records of `log` (the lock file's bytes) that extend `st`'s
/// save, in order.
pub fn replay(st: &mut State, log: &[u8]) -> Log {
    let len = log.len() as u64;
    let log = log.strip_prefix(HEADER).unwrap_or(log);
    let mut out = Log { len, stale: log.is_empty(), dirty: false };
    let mut first = true;
    // Lines found by a vector search (base::bytes): a byte loop over a full log was 4 % of a
    // one-shot question's instructions.
    for line in lines(log) {
        let rec = match decode(line) {
            Some(r) => r,
            None => {
                out.dirty = true;
                break;
            }
        };
        if rec.g != st.save_id {
            // Another save's records: all of them are (a save's first
            // record replaces the older ones), unless a good one came first.
            out.stale |= first;
            out.dirty |= !first;
            break;
        }
        first = false;
        if rec.from != st.offset || !apply(st, rec) {
            out.dirty = true;
            break;
        }
    }
    out
}

/// `log`'s lines, each with its newline (the last one may have none).
fn lines(log: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = log;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let n = crate::base::bytes::find(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let (line, tail) = rest.split_at(n);
        rest = tail;
        Some(line)
    })
}

fn apply(st: &mut State, rec: Rec) -> bool {
    for s in rec.seen {
        let (fact, at) = match s {
            Seen::Prompt(at, u) => (Fact::Prompt(u), at),
            Seen::Tools(at, ids) => (Fact::ToolUses(ids), at),
        };
        // Written only when these ended nothing; anything else means the
        // record does not fit this state.
        if st.track.pending.is_some() || st.track.apply(fact, at) != Effect::Some {
            return false;
        }
    }
    st.offset = rec.to;
    st.skipping = rec.skip;
    st.tail = rec.tail;
    true
}

/// The record of a read from `from` to `st`'s offset that saw `seen`; `None`
/// when it is too long to write (save whole instead).
pub fn record(st: &State, from: u64, seen: Vec<Seen>) -> Option<Vec<u8>> {
    let rec = Rec { g: st.save_id, from, to: st.offset, skip: st.skipping, tail: st.tail.clone(), seen };
    let json = serde_json::to_vec(&rec).ok()?;
    let mut line = Vec::with_capacity(json.len() + 18);
    line.extend_from_slice(&sum(&json));
    line.push(b' ');
    line.extend_from_slice(&json);
    line.push(b'\n');
    (line.len() <= MAX_RECORD_BYTES).then_some(line)
}

fn decode(line: &[u8]) -> Option<Rec> {
    let line = line.strip_suffix(b"\n")?;
    let (s, json) = (line.get(..16)?, line.get(17..)?);
    if line.get(16) != Some(&b' ') || s != sum(json) {
        return None;
    }
    parse::rec(json).or_else(|| serde_json::from_slice(json).ok())
}

/// The key of save marks: a fixed one (a mark must differ from every
/// earlier save's, not be secret), so that they hash without the `blake3`
/// crate's CPU probe ([`crate::base::blake3_short`]).
const KEY: &[u8; 32] = b"leanctx witness progress, v1 key";

/// A record's checksum, as 16 lowercase hex digits: it catches a torn
/// write or a line spliced from two (nobody forges records: whoever can
/// write the lock file can write the state file), so a CRC does: CRC-64/XZ
/// from the `crc` crate, table-driven (no CPU probe, which traps to the
/// hypervisor here), and it detects every error burst up to 64 bits long.
/// Slice-by-16 tables (32 KiB): 16 KiB of records in 5.9 µs where the
/// byte-wise table took 33.8 µs (and the hand-written hash before it 3.2).
/// A fresh `leanctx stub` checks every record of the log (up to
/// [`MAX_LOG_BYTES`]): a keyed BLAKE3 per record (and its hex) was a third
/// of such a question's instructions (callgrind, benches/README.md).
fn sum(json: &[u8]) -> [u8; 16] {
    const CRC64: crc::Crc<u64, crc::Table<16>> = crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_XZ);
    let h = CRC64.checksum(json);
    let mut hex = [0u8; 16];
    for (i, d) in hex.iter_mut().enumerate() {
        *d = b"0123456789abcdef"[(h >> (60 - 4 * i) & 0xf) as usize];
    }
    hex
}

/// A new save's mark: unlike any earlier save's of this conversation (the
/// clock's nanoseconds, the process and a counter, hashed), never 0 (the
/// mark of a state file written before records existed).
pub fn new_save_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut input = [0u8; 28];
    input[..16].copy_from_slice(&t.to_le_bytes());
    input[16..20].copy_from_slice(&std::process::id().to_le_bytes());
    input[20..].copy_from_slice(&N.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let b = blake3_short::keyed(KEY, &input);
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes")).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(save_id: u64, offset: u64) -> State {
        State { transcript: "/t".into(), offset, save_id, ..State::default() }
    }

    fn rec(st: &State, from: u64, to: u64, seen: Vec<Seen>) -> Vec<u8> {
        let mut s = st.clone();
        s.offset = to;
        s.tail = format!("seal{to}");
        record(&s, from, seen).unwrap()
    }

    #[test]
    fn records_replay_in_order_onto_their_own_save_only() {
        let st = state(7, 100);
        let a = rec(&st, 100, 200, vec![Seen::Prompt(120, "u1".into()), Seen::Tools(150, vec!["t1".into()])]);
        let b = rec(&st, 200, 300, vec![Seen::Tools(250, vec!["t2".into(), "t3".into()])]);
        let log = [a.clone(), b.clone()].concat();

        let mut s = st.clone();
        assert_eq!(replay(&mut s, &log), Log { len: log.len() as u64, stale: false, dirty: false });
        assert_eq!((s.offset, s.tail.as_str()), (300, "seal300"));
        let tools: Vec<_> = s.track.tools.iter().collect();
        assert_eq!(tools, [("t1", 150), ("t2", 250), ("t3", 250)]);
        assert_eq!(s.track.prompts.iter().collect::<Vec<_>>(), [("u1", 120)]);

        // The rows: (the log, what the state becomes, stale, dirty).
        let torn = [a.clone(), b[..b.len() / 2].to_vec()].concat();
        let mut flipped = log.clone();
        let i = a.len() + 40;
        flipped[i] ^= 1;
        let other = rec(&state(8, 100), 100, 200, vec![]);
        let table: Vec<(&str, Vec<u8>, u64, bool, bool)> = vec![
            ("empty", vec![], 100, true, false),
            ("torn second record", torn, 200, false, true),
            ("a flipped byte", flipped, 200, false, true),
            ("out of order", [b.clone(), a.clone()].concat(), 100, false, true),
            ("an older save's records", other.clone(), 100, true, false),
            ("another save's record after a good one", [a.clone(), other].concat(), 200, false, true),
            ("not a record", b"{}\n".to_vec(), 100, false, true),
            ("a record with no newline yet", a[..a.len() - 1].to_vec(), 100, false, true),
        ];
        for (name, log, offset, stale, dirty) in table {
            let mut s = st.clone();
            let got = replay(&mut s, &log);
            assert_eq!((s.offset, got.stale, got.dirty), (offset, stale, dirty), "{name}");
        }
    }

    /// The checksum catches every single-bit flip of a record and every
    /// cut of it, and a record spliced from the start of one and another.
    #[test]
    fn every_flipped_bit_cut_or_splice_is_refused() {
        let st = state(7, 100);
        let ids = (0..40).map(|i| format!("toolu_{i:024}")).collect();
        let a = rec(&st, 100, 200, vec![Seen::Prompt(120, "u1".into()), Seen::Tools(150, ids)]);
        let b = rec(&st, 200, 300, vec![Seen::Prompt(220, "u2".into())]);
        assert!(a.len() > 1024, "longer than one BLAKE3 chunk: {}", a.len());
        assert!(decode(&a).is_some() && decode(&b).is_some());
        for i in 0..a.len() - 1 {
            for bit in 0..8 {
                let mut x = a.clone();
                x[i] ^= 1 << bit;
                assert!(decode(&x).is_none(), "byte {i} bit {bit}");
            }
            let mut cut = a[..i].to_vec();
            cut.push(b'\n');
            assert!(decode(&cut).is_none(), "cut at {i}");
            let spliced = [&a[..i], &b[b.len().min(i)..]].concat();
            assert!(spliced == b || decode(&spliced).is_none(), "spliced at {i}");
        }
    }

    /// The header before the records is skipped; a log of the header
    /// alone holds no records (the next one drops nothing but may follow it).
    #[test]
    fn the_header_is_read_past() {
        let st = state(7, 100);
        let a = rec(&st, 100, 200, vec![Seen::Prompt(120, "u1".into())]);
        let b = rec(&st, 200, 300, vec![Seen::Tools(250, vec!["t2".into()])]);
        let bare = [a.clone(), b.clone()].concat();
        let headed = [HEADER, &a, &b].concat();
        let (mut x, mut y) = (st.clone(), st.clone());
        let (lx, ly) = (replay(&mut x, &bare), replay(&mut y, &headed));
        assert_eq!((lx.stale, lx.dirty, ly.stale, ly.dirty), (false, false, false, false));
        assert_eq!(ly.len, headed.len() as u64);
        assert_eq!(x, y);
        assert_eq!(y.offset, 300);
        let mut z = st.clone();
        assert_eq!(replay(&mut z, HEADER), Log { len: HEADER.len() as u64, stale: true, dirty: false });
        // Only at the start: a header between records is not a record.
        let mut w = st.clone();
        assert!(replay(&mut w, &[&a, HEADER, &b].concat()).dirty);
    }

    #[test]
    fn a_record_that_would_end_something_does_not_apply() {
        // With an idle return pending a prompt is counted, not just kept:
        // records are never written then, and one found is not applied.
        let mut st = state(7, 100);
        st.track.pending = Some(Default::default());
        let log = rec(&st, 100, 200, vec![Seen::Prompt(120, "u1".into())]);
        let mut s = st.clone();
        assert!(replay(&mut s, &log).dirty);
    }

    #[test]
    fn long_records_are_not_written_and_save_ids_differ() {
        let st = state(7, 100);
        let ids: Vec<String> = (0..200).map(|i| format!("toolu_{i:030}")).collect();
        assert!(record(&st, 0, vec![Seen::Tools(1, ids)]).is_none());
        let ids: std::collections::HashSet<u64> = (0..1000).map(|_| new_save_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(!ids.contains(&0));
    }
}
