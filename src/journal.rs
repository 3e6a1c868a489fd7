//! The journal: what every hook process saw, shared by every reader.
//!
//! One record a line, tab-separated, appended under an exclusive lock and
//! read under a shared lock. The lock is taken on `journal.lock`, a file that
//! is never replaced, so a trim (rewrite + rename of `journal`) cannot strand
//! a locker on an old inode.
//!
//! The file stays bounded however long it runs: once it grows past
//! `max(TRIM_MIN_BYTES, 2 × what the last trim kept)` the appender rewrites
//! it, keeping only what can still matter (DESIGN.md §3). Every eviction is
//! in the safe direction: a forgotten sighting is only dropped when newer
//! ones still show the same verdict, a forgotten end keeps a conversation
//! "live" (more withholding), and a forgotten compaction raises the
//! compaction floor, so any delivery before it is treated as compacted.
//!
//! Line format (`-` for absent):
//! ```text
//! S t host conv event                               sighting of a top-level conversation
//! U t host conv agent                               subagent started
//! u t host conv agent|-                             subagent stopped (Cursor sends no id)
//! C t host conv agent|- server|- tool fp callid|- key   gated MCP call
//! K t key                                           a call record was claimed
//! P t host conv                                     compaction
//! E t host conv                                     session end
//! L t host pid conv                                 the host process pid now serves conv (/clear)
//! F t                                               compactions up to t may have been forgotten
//! ```

use crate::host::Host;
use crate::paths::{JOURNAL_FILE, JOURNAL_LOCK_FILE};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// More than one live top-level conversation inside this window = concurrent.
pub const WINDOW_MS: u64 = 30_000;
/// A Cursor call record can be claimed by an MCP call this long after it.
pub const CLAIM_WINDOW_MS: u64 = 10_000;
/// Call records are kept this long (a permission prompt can delay the call).
pub const CALL_KEEP_MS: u64 = 10 * 60_000;
/// Sightings, ends, compactions, subagents and lineage are kept this long.
pub const STATE_TTL_MS: u64 = crate::slot::SLOT_TTL_MS;
/// A sighting (or subagent start, or call record) stamped up to this far
/// ahead of the reader's clock counts: the reader's clock may be behind the
/// hooks' (it was 5 s: a reader 5 s behind saw two live chats as none).
/// Further ahead, it was stamped by a clock that ran ahead and has not
/// happened yet. The same tolerance as the slot's.
pub const FUTURE_SKEW_MS: u64 = crate::slot::FUTURE_SKEW_MS;
/// An end or a subagent stop stamped further ahead than this is ignored.
/// Ignoring one only keeps a conversation or subagent live (more
/// withholding); applying one stamped by a clock that ran ahead could end
/// a conversation that is live now. So the end side stays strict.
pub const END_SKEW_MS: u64 = 5_000;
/// Trim once the file is larger than this (and twice what the last trim kept).
pub const TRIM_MIN_BYTES: u64 = 16 * 1024;
pub const MAX_CONVERSATIONS: usize = 128;
pub const MAX_CALLS: usize = 256;
pub const MAX_SUBAGENT_RECORDS: usize = 512;
pub const MAX_LINEAGE: usize = 64;
/// How long a hook or reader waits for the lock before giving up (fail open).
pub const LOCK_WAIT: Duration = Duration::from_millis(800);
/// The most of the journal anyone reads (a reader: the whole file or
/// nothing; a trim: its last bytes).
pub const MAX_READ_BYTES: u64 = crate::paths::JOURNAL_MAX_BYTES;

/// A journal record, borrowing its strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    Sighting {
        t: u64,
        host: Host,
        conv: &'a str,
        event: &'a str,
    },
    SubagentStart {
        t: u64,
        host: Host,
        conv: &'a str,
        agent: &'a str,
    },
    SubagentStop {
        t: u64,
        host: Host,
        conv: &'a str,
        agent: Option<&'a str>,
    },
    Call(Call<'a>),
    /// `claimant`: a token of the MCP request that claimed it, so the same
    /// request resolving again gets the same answer.
    Claim {
        t: u64,
        key: &'a str,
        claimant: Option<&'a str>,
    },
    Compaction {
        t: u64,
        host: Host,
        conv: &'a str,
    },
    End {
        t: u64,
        host: Host,
        conv: &'a str,
    },
    Lineage {
        t: u64,
        host: Host,
        pid: u32,
        conv: &'a str,
    },
    Floor {
        t: u64,
    },
}

/// A gated MCP call, as the hook saw it before answering.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Call<'a> {
    pub t: u64,
    pub host: Host,
    pub conv: &'a str,
    pub agent: Option<&'a str>,
    pub server: Option<&'a str>,
    pub tool: &'a str,
    pub fp: &'a str,
    pub call_id: Option<&'a str>,
    pub key: &'a str,
}

impl Record<'_> {
    pub fn t(&self) -> u64 {
        match self {
            Record::Sighting { t, .. }
            | Record::SubagentStart { t, .. }
            | Record::SubagentStop { t, .. }
            | Record::Claim { t, .. }
            | Record::Compaction { t, .. }
            | Record::End { t, .. }
            | Record::Lineage { t, .. }
            | Record::Floor { t } => *t,
            Record::Call(c) => c.t,
        }
    }

    /// Append this record as one line to `out`. Fields that could break the
    /// line format are escaped (they are validated upstream; this is the
    /// last line of defence).
    pub fn write_line(&self, out: &mut String) {
        use std::fmt::Write as _;
        let f = field;
        let o = |v: Option<&str>| v.map(field).unwrap_or_else(|| "-".into());
        let _ = match self {
            Record::Sighting { t, host, conv, event } => {
                writeln!(out, "S\t{t}\t{host}\t{}\t{}", f(conv), f(event))
            }
            Record::SubagentStart { t, host, conv, agent } => {
                writeln!(out, "U\t{t}\t{host}\t{}\t{}", f(conv), f(agent))
            }
            Record::SubagentStop { t, host, conv, agent } => {
                writeln!(out, "u\t{t}\t{host}\t{}\t{}", f(conv), o(*agent))
            }
            Record::Call(c) => writeln!(
                out,
                "C\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                c.t,
                c.host,
                f(c.conv),
                o(c.agent),
                o(c.server),
                f(c.tool),
                f(c.fp),
                o(c.call_id),
                f(c.key)
            ),
            Record::Claim { t, key, claimant } => writeln!(out, "K\t{t}\t{}\t{}", f(key), o(*claimant)),
            Record::Compaction { t, host, conv } => writeln!(out, "P\t{t}\t{host}\t{}", f(conv)),
            Record::End { t, host, conv } => writeln!(out, "E\t{t}\t{host}\t{}", f(conv)),
            Record::Lineage { t, host, pid, conv } => {
                writeln!(out, "L\t{t}\t{host}\t{pid}\t{}", f(conv))
            }
            Record::Floor { t } => writeln!(out, "F\t{t}"),
        };
    }
}

/// A field safe for a tab-separated line: printable ASCII without `%` stays
/// as is; anything else is percent-encoded, and `-` alone (our "absent")
/// becomes `%2D`.
fn field(s: &str) -> String {
    if s == "-" {
        return "%2D".into();
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && b != b'%') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        if b.is_ascii_graphic() && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push_str("%00");
    }
    out
}

fn parse_host(s: &str) -> Option<Host> {
    match s {
        "cursor" => Some(Host::Cursor),
        "claude-code" => Some(Host::ClaudeCode),
        "codex" => Some(Host::Codex),
        "codebuddy" => Some(Host::CodeBuddy),
        _ => None,
    }
}

fn opt(s: &str) -> Option<&str> {
    (s != "-").then_some(s)
}

/// `line.split('\t')`, eight bytes at a time: a tab is ASCII, so every cut
/// is a char boundary. Readers parse every journal line; on a 65 KiB
/// journal this splits in ~22 µs where `str::split('\t')` takes ~30-40 µs
/// and a byte-by-byte search ~45 µs.
struct Fields<'a> {
    rest: Option<&'a str>,
}

/// The index of the first tab in `s`.
fn find_tab(s: &[u8]) -> Option<usize> {
    find_byte(s, b'\t')
}

/// The index of the first `byte` in `s`, eight bytes at a time.
pub(crate) fn find_byte(s: &[u8], byte: u8) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let pattern = ONES * u64::from(byte);
    let mut chunks = s.chunks_exact(8);
    for (k, c) in chunks.by_ref().enumerate() {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes")) ^ pattern;
        // A zero byte in `w` is `byte` in `s`; the lowest flagged one is exact.
        let z = w.wrapping_sub(ONES) & !w & HIGHS;
        if z != 0 {
            return Some(k * 8 + (z.trailing_zeros() / 8) as usize);
        }
    }
    let done = s.len() - chunks.remainder().len();
    chunks.remainder().iter().position(|&b| b == byte).map(|i| done + i)
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        let s = self.rest?;
        match find_tab(s.as_bytes()) {
            Some(i) => {
                self.rest = Some(&s[i + 1..]);
                Some(&s[..i])
            }
            None => {
                self.rest = None;
                Some(s)
            }
        }
    }
}

/// Parse one line (without its newline). Malformed lines give `None`.
pub fn parse_line(line: &str) -> Option<Record<'_>> {
    let mut it = Fields { rest: Some(line) };
    let tag = it.next()?;
    let t: u64 = it.next()?.parse().ok()?;
    let rec = match tag {
        "S" => Record::Sighting { t, host: parse_host(it.next()?)?, conv: it.next()?, event: it.next()? },
        "U" => Record::SubagentStart { t, host: parse_host(it.next()?)?, conv: it.next()?, agent: it.next()? },
        "u" => Record::SubagentStop { t, host: parse_host(it.next()?)?, conv: it.next()?, agent: opt(it.next()?) },
        "C" => Record::Call(Call {
            t,
            host: parse_host(it.next()?)?,
            conv: it.next()?,
            agent: opt(it.next()?),
            server: opt(it.next()?),
            tool: it.next()?,
            fp: it.next()?,
            call_id: opt(it.next()?),
            key: it.next()?,
        }),
        "K" => Record::Claim { t, key: it.next()?, claimant: it.next().and_then(opt) },
        "P" => Record::Compaction { t, host: parse_host(it.next()?)?, conv: it.next()? },
        "E" => Record::End { t, host: parse_host(it.next()?)?, conv: it.next()? },
        "L" => Record::Lineage { t, host: parse_host(it.next()?)?, pid: it.next()?.parse().ok()?, conv: it.next()? },
        "F" => Record::Floor { t },
        _ => return None,
    };
    if it.next().is_some() {
        return None;
    }
    Some(rec)
}

/// Parse a whole journal text. The header, comments, malformed lines and a
/// final line without its newline (a write in progress) are skipped.
pub fn parse(text: &str) -> Vec<Record<'_>> {
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    complete.lines().filter(|l| !l.starts_with('#')).filter_map(parse_line).collect()
}

/// A live top-level conversation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Live<'a> {
    pub host: Host,
    pub conversation: &'a str,
    pub last_seen_ms: u64,
    pub last_event: &'a str,
}

/// Queries over parsed records. Pure: `now` is always an argument.
pub struct View<'a> {
    pub records: Vec<Record<'a>>,
}

impl<'a> View<'a> {
    pub fn parse(text: &'a str) -> View<'a> {
        View { records: parse(text) }
    }

    /// Top-level conversations sighted in the window before `now` and not
    /// ended since their last sighting, newest first.
    pub fn live_conversations(&self, now: u64) -> Vec<Live<'a>> {
        let mut last: HashMap<(Host, &str), (u64, &str)> = HashMap::new();
        let mut ended: HashMap<(Host, &str), u64> = HashMap::new();
        // A record stamped beyond the skew (written while the clock was
        // ahead) has not happened yet as far as `now` knows: it must neither
        // stand for a conversation's latest sighting (hiding the real,
        // current ones) nor end a conversation that is live now.
        for r in self.records.iter().filter(|r| !is_future_for(r, now)) {
            match *r {
                Record::Sighting { t, host, conv, event } => {
                    let e = last.entry((host, conv)).or_insert((t, event));
                    if t >= e.0 {
                        *e = (t, event);
                    }
                }
                Record::End { t, host, conv } => {
                    let e = ended.entry((host, conv)).or_insert(t);
                    *e = (*e).max(t);
                }
                _ => {}
            }
        }
        let mut out: Vec<Live<'a>> = last
            .into_iter()
            .filter(|((host, conv), (t, _))| {
                in_window(*t, now, WINDOW_MS) && ended.get(&(*host, *conv)).is_none_or(|e| *e < *t)
            })
            .map(|((host, conv), (t, event))| Live { host, conversation: conv, last_seen_ms: t, last_event: event })
            .collect();
        out.sort_by(|a, b| b.last_seen_ms.cmp(&a.last_seen_ms).then(a.conversation.cmp(b.conversation)));
        out
    }

    /// More than one distinct live top-level conversation.
    pub fn concurrent(&self, now: u64) -> bool {
        let live = self.live_conversations(now);
        let mut ids: Vec<&str> = live.iter().map(|l| l.conversation).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len() > 1
    }

    /// The latest compaction of `conv`, if any.
    pub fn last_compaction(&self, conv: &str) -> Option<u64> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Compaction { t, conv: c, .. } if c == conv => Some(t),
                _ => None,
            })
            .max()
    }

    /// Compactions at or before this time may have been forgotten.
    pub fn compaction_floor(&self) -> u64 {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Floor { t } => Some(t),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// Subagents of `conv` started inside the TTL and not yet stopped. A stop
    /// without an id (Cursor) closes the oldest open start.
    pub fn active_subagents(&self, conv: &str, now: u64) -> Vec<&'a str> {
        let mut events: Vec<(u64, bool, Option<&'a str>)> = self
            .records
            .iter()
            .filter(|r| !is_future_for(r, now))
            .filter_map(|r| match *r {
                Record::SubagentStart { t, conv: c, agent, .. } if c == conv => Some((t, true, Some(agent))),
                Record::SubagentStop { t, conv: c, agent, .. } if c == conv => Some((t, false, agent)),
                _ => None,
            })
            .collect();
        events.sort_by_key(|e| (e.0, !e.1));
        let mut open: Vec<(u64, &'a str)> = Vec::new();
        for (t, start, agent) in events {
            match (start, agent) {
                (true, Some(a)) => {
                    open.retain(|(_, o)| *o != a);
                    open.push((t, a));
                }
                (false, Some(a)) => open.retain(|(_, o)| *o != a),
                (false, None) => {
                    if !open.is_empty() {
                        open.remove(0);
                    }
                }
                (true, None) => {}
            }
        }
        open.into_iter().filter(|(t, _)| in_window(*t, now, STATE_TTL_MS)).map(|(_, a)| a).collect()
    }

    /// The call record the host gave this call id (Claude `tool_use_id`).
    pub fn call_by_id(&self, call_id: &str) -> Option<&Call<'a>> {
        self.records.iter().rev().find_map(|r| match r {
            Record::Call(c) if c.call_id == Some(call_id) => Some(c),
            _ => None,
        })
    }

    pub fn claimed_keys(&self) -> HashSet<&'a str> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Claim { key, .. } => Some(key),
                _ => None,
            })
            .collect()
    }

    /// The call record this claimant (one MCP request) already claimed.
    pub fn claimed_by(&self, claimant: &str) -> Option<&Call<'a>> {
        let key = self.records.iter().rev().find_map(|r| match *r {
            Record::Claim { key, claimant: Some(c), .. } if c == claimant => Some(key),
            _ => None,
        })?;
        self.records.iter().find_map(|r| match r {
            Record::Call(c) if c.key == key => Some(c),
            _ => None,
        })
    }

    /// Unclaimed call records (of any host) with this tool and fingerprint,
    /// inside the claim window, oldest first.
    pub fn claim_candidates(&self, tool: &str, fp: &str, now: u64) -> Vec<&Call<'a>> {
        let claimed = self.claimed_keys();
        self.records
            .iter()
            .filter_map(|r| match r {
                // Every host's records: a call that reaches fingerprint
                // matching has no per-call id, so it may come from any host
                // (an older Claude Code sends none). A Claude or Codex record
                // with the same arguments from another scope makes the match
                // ambiguous rather than letting the call claim a Cursor
                // record that is not its own; and a lone Claude record is
                // that Claude call's own.
                Record::Call(c)
                    if c.tool == tool
                        && c.fp == fp
                        && in_window(c.t, now, CLAIM_WINDOW_MS)
                        && !claimed.contains(c.key) =>
                {
                    Some(c)
                }
                _ => None,
            })
            .collect()
    }

    /// The conversation the host process `pid` moved to (Claude `/clear`),
    /// if it did inside the TTL.
    pub fn lineage_for(&self, host: Host, pid: u32, now: u64) -> Option<(u64, &'a str)> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Lineage { t, host: h, pid: p, conv }
                    if h == host && p == pid && in_window(t, now, STATE_TTL_MS) =>
                {
                    Some((t, conv))
                }
                _ => None,
            })
            .max_by_key(|(t, _)| *t)
    }

    /// The newest sighting of each host, however old (for status).
    pub fn last_event_per_host(&self) -> Vec<Live<'a>> {
        let mut per: HashMap<Host, Live<'a>> = HashMap::new();
        for r in &self.records {
            if let Record::Sighting { t, host, conv, event } = *r {
                let e =
                    per.entry(host).or_insert(Live { host, conversation: conv, last_seen_ms: t, last_event: event });
                if t >= e.last_seen_ms {
                    *e = Live { host, conversation: conv, last_seen_ms: t, last_event: event };
                }
            }
        }
        let mut v: Vec<_> = per.into_values().collect();
        v.sort_by_key(|l| l.host);
        v
    }
}

/// `t` is further ahead of `now` than the skew we tolerate: stamped by a
/// clock that was ahead, or read by one that went back.
pub fn is_future(t: u64, now: u64) -> bool {
    t > now.saturating_add(FUTURE_SKEW_MS)
}

/// `t` (of an end or a subagent stop) is further ahead than [`END_SKEW_MS`].
pub fn is_future_end(t: u64, now: u64) -> bool {
    t > now.saturating_add(END_SKEW_MS)
}

/// Has `r` not happened yet at `now`? Ends and stops by [`END_SKEW_MS`],
/// everything else by [`FUTURE_SKEW_MS`].
fn is_future_for(r: &Record<'_>, now: u64) -> bool {
    match r {
        Record::End { t, .. } | Record::SubagentStop { t, .. } => is_future_end(*t, now),
        _ => is_future(r.t(), now),
    }
}

/// `t` is inside `[now - window, now + FUTURE_SKEW_MS]`.
pub fn in_window(t: u64, now: u64, window: u64) -> bool {
    t <= now.saturating_add(FUTURE_SKEW_MS) && now.saturating_sub(t) <= window
}

/// What a trim keeps (pure). Output is in time order.
pub fn trim<'a>(records: &[Record<'a>], now: u64) -> Vec<Record<'a>> {
    let fresh = |t: u64, keep: u64| now.saturating_sub(t) <= keep;
    let mut floor = 0u64;
    let mut keep: Vec<Record<'a>> = Vec::new();

    // Latest per key, then the newest `cap` of those inside `ttl`.
    fn latest<'a, K: std::hash::Hash + Eq>(it: impl Iterator<Item = (K, Record<'a>)>) -> Vec<Record<'a>> {
        let mut m: HashMap<K, Record<'a>> = HashMap::new();
        for (k, r) in it {
            match m.get(&k) {
                Some(old) if old.t() > r.t() => {}
                _ => {
                    m.insert(k, r);
                }
            }
        }
        let mut v: Vec<_> = m.into_values().collect();
        v.sort_by_key(|r| std::cmp::Reverse(r.t()));
        v
    }

    // Sightings: newest per conversation, plus the newest per host always.
    // Sightings from beyond the skew are dropped: kept, one would pass for
    // its conversation's newest and evict the real, current one.
    let sightings = latest(records.iter().filter(|r| !is_future(r.t(), now)).filter_map(|r| match *r {
        Record::Sighting { host, conv, .. } => Some(((host, conv), r.clone())),
        _ => None,
    }));
    let per_host = latest(records.iter().filter(|r| !is_future(r.t(), now)).filter_map(|r| match *r {
        Record::Sighting { host, .. } => Some((host, r.clone())),
        _ => None,
    }));
    keep.extend(sightings.into_iter().filter(|r| fresh(r.t(), STATE_TTL_MS)).take(MAX_CONVERSATIONS));
    for r in per_host {
        if !keep.contains(&r) {
            keep.push(r);
        }
    }

    let ends = latest(records.iter().filter_map(|r| match *r {
        Record::End { host, conv, .. } => Some(((host, conv), r.clone())),
        _ => None,
    }));
    keep.extend(ends.into_iter().filter(|r| fresh(r.t(), STATE_TTL_MS)).take(MAX_CONVERSATIONS));

    let compactions = latest(records.iter().filter_map(|r| match *r {
        Record::Compaction { conv, .. } => Some((conv, r.clone())),
        _ => None,
    }));
    for (i, r) in compactions.into_iter().enumerate() {
        if i < MAX_CONVERSATIONS && fresh(r.t(), STATE_TTL_MS) {
            keep.push(r);
        } else {
            floor = floor.max(r.t());
        }
    }

    let mut subs: Vec<Record<'a>> = records
        .iter()
        .filter(|r| {
            matches!(r, Record::SubagentStart { .. } | Record::SubagentStop { .. }) && fresh(r.t(), STATE_TTL_MS)
        })
        .cloned()
        .collect();
    subs.sort_by_key(|r| std::cmp::Reverse(r.t()));
    subs.truncate(MAX_SUBAGENT_RECORDS);
    keep.extend(subs);

    let mut calls: Vec<Record<'a>> =
        records.iter().filter(|r| matches!(r, Record::Call(_)) && fresh(r.t(), CALL_KEEP_MS)).cloned().collect();
    calls.sort_by_key(|r| std::cmp::Reverse(r.t()));
    calls.truncate(MAX_CALLS);
    let kept_keys: HashSet<&str> = calls
        .iter()
        .filter_map(|r| match r {
            Record::Call(c) => Some(c.key),
            _ => None,
        })
        .collect();
    keep.extend(calls);
    keep.extend(records.iter().filter(|r| matches!(r, Record::Claim { key, .. } if kept_keys.contains(key))).cloned());

    let lineage = latest(records.iter().filter_map(|r| match *r {
        Record::Lineage { host, pid, .. } => Some(((host, pid), r.clone())),
        _ => None,
    }));
    keep.extend(lineage.into_iter().filter(|r| fresh(r.t(), STATE_TTL_MS)).take(MAX_LINEAGE));

    for r in records {
        if let Record::Floor { t } = *r {
            floor = floor.max(t);
        }
    }
    if floor > 0 {
        keep.push(Record::Floor { t: floor });
    }
    keep.sort_by_key(|r| r.t());
    keep
}

/// The journal files of one data dir.
#[derive(Clone, Debug)]
pub struct Journal {
    dir: PathBuf,
}

/// A held lock on `journal.lock`; released on drop (and by the kernel if the
/// process dies, so a crash cannot leave it stuck).
pub struct LockGuard {
    file: File,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

impl Journal {
    pub fn new(dir: &Path) -> Journal {
        Journal { dir: dir.to_path_buf() }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(JOURNAL_FILE)
    }

    /// Writers: an exclusive lock, creating the lock file if needed.
    fn lock(&self, exclusive: bool) -> io::Result<LockGuard> {
        self.lock_until(exclusive, Instant::now() + LOCK_WAIT)
    }

    /// The lock, waiting for it until `deadline` at most. The lock file must
    /// be a regular file of ours: opened without blocking or following a
    /// symlink (a FIFO there hung every reader that opened it).
    fn lock_until(&self, exclusive: bool, deadline: Instant) -> io::Result<LockGuard> {
        let path = self.dir.join(JOURNAL_LOCK_FILE);
        // Readers need no write access: flock works on a read-only fd.
        let Some(file) = crate::paths::open_state(&path, exclusive, u64::MAX)? else {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display())));
        };
        let try_once = |f: &File| if exclusive { f.try_lock() } else { f.try_lock_shared() };
        let started = Instant::now();
        let mut pause = Duration::from_micros(50);
        loop {
            match try_once(&file) {
                Ok(()) => return Ok(LockGuard { file }),
                Err(TryLockError::WouldBlock) => {
                    if Instant::now() >= deadline {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("journal lock busy for more than {} ms", started.elapsed().as_millis()),
                        ));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(2));
                }
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
    }

    /// Read the whole journal under a shared lock. A missing journal is
    /// empty; so is one whose lock file was never created (no hook ran).
    pub fn read(&self) -> io::Result<String> {
        self.read_until(Instant::now() + LOCK_WAIT)
    }

    /// [`Journal::read`], waiting for the lock until `deadline` at most.
    pub fn read_until(&self, deadline: Instant) -> io::Result<String> {
        let Some(_guard) = self.read_lock_until(deadline)? else { return Ok(String::new()) };
        self.read_unlocked()
    }

    /// The exclusive lock writers hold, for a caller that reads and then
    /// appends under it itself (a claim through a long-lived reader).
    pub fn write_lock(&self) -> io::Result<LockGuard> {
        self.lock(true)
    }

    /// [`Journal::write_lock`], waiting until `deadline` at most.
    pub fn write_lock_until(&self, deadline: Instant) -> io::Result<LockGuard> {
        self.lock_until(true, deadline)
    }

    /// Append under the exclusive lock the caller took with
    /// [`Journal::write_lock`] (and still holds: `held`).
    pub fn append_held(&self, held: &LockGuard, records: &[Record<'_>], now: u64) -> io::Result<()> {
        let _ = held;
        if records.is_empty() {
            return Ok(());
        }
        self.append_locked(records, now)
    }

    /// The shared lock readers hold while they read. `None` when there is
    /// no lock file and no journal (no hook ran: nothing to read).
    pub fn read_lock(&self) -> io::Result<Option<LockGuard>> {
        self.read_lock_until(Instant::now() + LOCK_WAIT)
    }

    /// [`Journal::read_lock`], waiting until `deadline` at most. A journal
    /// path that is anything at all (a dangling symlink too) without a lock
    /// file is an error, not "no hook ran".
    pub fn read_lock_until(&self, deadline: Instant) -> io::Result<Option<LockGuard>> {
        match self.lock_until(false, deadline) {
            Ok(g) => Ok(Some(g)),
            Err(e) if e.kind() == io::ErrorKind::NotFound && fs::symlink_metadata(self.path()).is_err() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The journal as a reader may use it, under a lock the caller holds:
    /// a regular file of ours, not empty, at most [`MAX_READ_BYTES`]. The
    /// lock file exists (the caller holds it), so hooks have run: a journal
    /// that is missing or empty was deleted or emptied, and what it said
    /// (two live chats, a compaction) is lost; that is an error, never "no
    /// records".
    fn read_unlocked(&self) -> io::Result<String> {
        let path = self.path();
        let Some(bytes) = crate::paths::read_state(&path, MAX_READ_BYTES)? else { return Err(missing(&path)) };
        if bytes.is_empty() {
            return Err(crate::paths::untrusted(&path, "is empty while journal.lock exists (emptied?)"));
        }
        Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// What a trim reads: the whole journal, or when it is larger than a
    /// reader reads, only its last [`MAX_READ_BYTES`] from the first whole
    /// line on (`true`: the head was cut). Missing: empty.
    fn read_for_trim(&self) -> io::Result<(String, bool)> {
        let path = self.path();
        let Some(f) = crate::paths::open_state(&path, false, u64::MAX)? else { return Ok((String::new(), false)) };
        let len = f.metadata()?.len();
        let start = len.saturating_sub(MAX_READ_BYTES);
        let mut bytes = Vec::with_capacity((len - start) as usize);
        let mut r: &File = &f;
        r.seek(SeekFrom::Start(start))?;
        r.take(MAX_READ_BYTES).read_to_end(&mut bytes)?;
        if start > 0 {
            let first = bytes.iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| i + 1);
            bytes.drain(..first);
        }
        let text = String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Ok((text, start > 0))
    }

    /// The error for a journal that is missing while its lock file exists.
    pub fn missing_error(&self) -> io::Error {
        missing(&self.path())
    }

    /// Append records under the exclusive lock (one write), trimming when
    /// the file has grown past its bound.
    pub fn append(&self, records: &[Record<'_>], now: u64) -> io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let _guard = self.lock(true)?;
        self.append_locked(records, now)
    }

    fn append_locked(&self, records: &[Record<'_>], now: u64) -> io::Result<()> {
        // Never through a symlink, never into a FIFO, never into a file of
        // someone else's: such a journal is refused (readers withhold on it
        // too), and the hook says why.
        let (mut f, md) =
            crate::paths::open_state_md(&self.path(), true, u64::MAX)?.ok_or_else(|| self.missing_error())?;
        let before = md.len();
        // A compaction is stamped no earlier than the newest record already
        // written: if the clock went back since a delivery (or was ahead
        // during it), the compaction must still order after the delivering
        // call's own records (its PostToolUse follows the delivery), or a
        // stub from before the compaction would pass. Erring late only
        // withholds more. Rare event, so the tail read costs nothing typical.
        let floor = if records.iter().any(|r| matches!(r, Record::Compaction { .. })) {
            newest_in_tail(&f, before).unwrap_or(0)
        } else {
            0
        };
        let mut buf = String::with_capacity(128 * records.len());
        for r in records {
            match *r {
                Record::Compaction { t, host, conv } if t < floor => {
                    Record::Compaction { t: floor, host, conv }.write_line(&mut buf)
                }
                _ => r.write_line(&mut buf),
            }
        }
        // A tail without its newline (a write cut short by a full disk)
        // must not swallow our first record.
        if before > 0 {
            let mut last = [0u8; 1];
            if f.read_at(&mut last, before - 1)? == 1 && last[0] != b'\n' {
                buf.insert(0, '\n');
            }
        }
        if let Err(e) = f.write_all(buf.as_bytes()) {
            // Leave nothing half-written: cut back to where we started.
            let _ = f.set_len(before);
            return Err(e);
        }
        let len = before + buf.len() as u64;
        if len > TRIM_MIN_BYTES {
            let kept = read_kept_header(&f).unwrap_or(0);
            if len > MAX_READ_BYTES || len > TRIM_MIN_BYTES.max(kept.saturating_mul(2)) {
                drop(f);
                self.trim_locked(now)?;
            }
        }
        Ok(())
    }

    /// Read the journal and, under the same exclusive lock, claim the call
    /// record whose key `choose` returns (for `claimant`). A call record is
    /// thereby claimed exactly once across processes.
    pub fn claim<R>(
        &self,
        now: u64,
        claimant: Option<&str>,
        choose: impl for<'v> FnOnce(&View<'v>) -> (R, Option<&'v str>),
    ) -> io::Result<R> {
        let _guard = self.lock(true)?;
        let text = self.read_unlocked()?;
        let view = View::parse(&text);
        let (result, key) = choose(&view);
        if let Some(key) = key {
            self.append_locked(&[Record::Claim { t: now, key, claimant }], now)?;
        }
        Ok(result)
    }

    /// Rewrite the journal keeping what can still matter. Caller holds the
    /// exclusive lock.
    fn trim_locked(&self, now: u64) -> io::Result<()> {
        // Bounded: a journal grown past what a reader reads (a bug, or a
        // file planted there) is trimmed from its last bytes. What the head
        // held is forgotten in the safe direction: a floor at `now` makes
        // every earlier delivery count as compacted.
        let (text, cut) = self.read_for_trim()?;
        let mut kept = trim(&parse(&text), now);
        if cut {
            kept.push(Record::Floor { t: now });
        }
        let mut body = String::with_capacity(kept.len() * 100);
        for r in &kept {
            r.write_line(&mut body);
        }
        let header = format!("#leanctx-journal v1 kept={:010}\n", body.len() + 40);
        let mut out = header;
        out.push_str(&body);
        crate::slot::write_atomic(&self.path(), out.as_bytes())?;
        clean_stray_temps(&self.dir, now);
        // Cursor task slots are written through temps in scopes/ as well.
        clean_stray_temps(&self.dir.join(crate::paths::SCOPES_DIR), now);
        Ok(())
    }

    /// Force a trim now (tests, `status --trim`).
    pub fn trim_now(&self, now: u64) -> io::Result<()> {
        let _guard = self.lock(true)?;
        self.trim_locked(now)
    }

    /// Size of the journal file in bytes (0 if absent).
    pub fn size(&self) -> u64 {
        fs::metadata(self.path()).map(|m| m.len()).unwrap_or(0)
    }
}

fn missing(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} is missing while journal.lock exists (deleted?)", path.display()),
    )
}

/// The newest time among the complete records in the last 8 KiB of `f`.
fn newest_in_tail(f: &File, len: u64) -> Option<u64> {
    let start = len.saturating_sub(8192);
    let mut buf = vec![0u8; (len - start) as usize];
    let n = f.read_at(&mut buf, start).ok()?;
    buf.truncate(n);
    let text = String::from_utf8_lossy(&buf);
    // Past the first newline unless we read from the start: the first
    // line may be cut.
    let body = if start == 0 { &text[..] } else { text.split_once('\n').map(|(_, b)| b).unwrap_or("") };
    parse(body).iter().map(Record::t).max()
}

fn read_kept_header(f: &File) -> Option<u64> {
    let mut head = [0u8; 48];
    let n = f.read_at(&mut head, 0).ok()?;
    let s = std::str::from_utf8(&head[..n]).ok()?;
    let rest = s.strip_prefix("#leanctx-journal v1 kept=")?;
    rest.get(..10)?.parse().ok()
}

/// Remove temp files (`.tmp-*`) that a killed writer left behind, once they
/// are older than a minute (a live writer renames its temp within ms).
///
/// Ages are measured against the earlier of `now_ms` and the system clock:
/// a file's mtime comes from the system clock, so an injected or jumped
/// `now` far ahead of it must not make another writer's in-flight temp look
/// a minute old (deleting it made that writer's rename fail with ENOENT and
/// its record was lost; found by tests/it/sim.rs, which runs hooks in
/// virtual time).
pub fn clean_stray_temps(dir: &Path, now_ms: u64) {
    let now_ms = now_ms.min(crate::clock::now_ms());
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(".tmp-") {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|m| now_ms.saturating_sub(m.as_millis() as u64) > 60_000);
        if old {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Read a file's head (used by tests to inspect the header).
pub fn read_head(path: &Path, n: usize) -> io::Result<String> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0; n];
    let got = f.read(&mut buf)?;
    buf.truncate(got);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: u64, conv: &str) -> Record<'_> {
        Record::Sighting { t, host: Host::ClaudeCode, conv, event: "PreToolUse" }
    }

    #[test]
    fn lines_round_trip() {
        let recs = vec![
            s(1, "a"),
            Record::SubagentStart { t: 2, host: Host::Codex, conv: "a", agent: "agent:x" },
            Record::SubagentStop { t: 3, host: Host::Cursor, conv: "a", agent: None },
            Record::Call(Call {
                t: 4,
                host: Host::Cursor,
                conv: "c",
                agent: None,
                server: Some("lean-ctx"),
                tool: "ctx_read",
                fp: "ab",
                call_id: None,
                key: "k1",
            }),
            Record::Claim { t: 5, key: "k1", claimant: Some("tok") },
            Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "a" },
            Record::End { t: 7, host: Host::ClaudeCode, conv: "a" },
            Record::Lineage { t: 8, host: Host::ClaudeCode, pid: 42, conv: "b" },
            Record::Floor { t: 9 },
        ];
        let mut text = String::new();
        for r in &recs {
            r.write_line(&mut text);
        }
        assert_eq!(parse(&text), recs);
    }

    #[test]
    fn hostile_fields_cannot_break_lines() {
        let r = Record::Sighting { t: 1, host: Host::Cursor, conv: "a\tb\nc", event: "-" };
        let mut text = String::new();
        r.write_line(&mut text);
        assert_eq!(text.matches('\n').count(), 1);
        let back = parse(&text);
        assert_eq!(back.len(), 1);
        assert!(matches!(back[0], Record::Sighting { conv: "a%09b%0Ac", event: "%2D", .. }));
    }

    #[test]
    fn find_tab_finds_the_first_tab() {
        let alphabet = [0x00u8, 0x01, 0x08, 0x09, 0x0a, 0x19, 0x80, 0x89, 0xff, b'a'];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for len in 0..40 {
            for _ in 0..200 {
                let v: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        alphabet[(x % alphabet.len() as u64) as usize]
                    })
                    .collect();
                assert_eq!(find_tab(&v), v.iter().position(|&b| b == b'\t'), "{v:?}");
                assert_eq!(find_byte(&v, b'\n'), v.iter().position(|&b| b == b'\n'), "{v:?}");
                assert_eq!(find_byte(&v, 0x89), v.iter().position(|&b| b == 0x89), "{v:?}");
            }
        }
    }

    #[test]
    fn fields_split_like_str_split() {
        let long = "0123456789abcdef\t01234567\t\t0123456789\u{e9}\u{3000}xyz\tend";
        for s in ["", "\t", "a", "a\tb", "a\t\tb\t", "\tS\t1\té\t-", "x\u{3000}\ty", long, &long[1..], &long[3..]] {
            assert_eq!(Fields { rest: Some(s) }.collect::<Vec<_>>(), s.split('\t').collect::<Vec<_>>(), "{s:?}");
        }
    }

    #[test]
    fn torn_last_line_is_ignored() {
        assert_eq!(parse("S\t1\tcursor\ta\tx\nS\t2\tcur").len(), 1);
        assert_eq!(parse("garbage\n\nS\t1\tcursor\ta\tx\n").len(), 1);
    }

    #[test]
    fn concurrency_table() {
        let now = 100_000;
        let cases: Vec<(Vec<Record>, bool)> = vec![
            (vec![], false),
            (vec![s(now - 1000, "a")], false),
            (vec![s(now - 1000, "a"), s(now - 2000, "a")], false),
            (vec![s(now - 1000, "a"), s(now - 2000, "b")], true),
            (vec![s(now - 1000, "a"), s(now - WINDOW_MS - 1, "b")], false),
            (
                vec![
                    s(now - 1000, "a"),
                    s(now - 2000, "b"),
                    Record::End { t: now - 1500, host: Host::ClaudeCode, conv: "b" },
                ],
                false,
            ),
            // A later event of the same id revives it (resume keeps the id).
            (
                vec![
                    s(now - 1000, "a"),
                    Record::End { t: now - 3000, host: Host::ClaudeCode, conv: "b" },
                    s(now - 2000, "b"),
                ],
                true,
            ),
            // A sighting from far in the future (clock went back) is not live.
            (vec![s(now - 1000, "a"), s(now + FUTURE_SKEW_MS + 1, "b")], false),
        ];
        for (i, (recs, want)) in cases.into_iter().enumerate() {
            assert_eq!(View { records: recs }.concurrent(now), want, "case {i}");
        }
    }

    #[test]
    fn subagents_open_and_close() {
        let now = 10_000;
        let v = View {
            records: vec![
                Record::SubagentStart { t: 1, host: Host::ClaudeCode, conv: "a", agent: "agent:1" },
                Record::SubagentStart { t: 2, host: Host::ClaudeCode, conv: "a", agent: "agent:2" },
                Record::SubagentStop { t: 3, host: Host::ClaudeCode, conv: "a", agent: Some("agent:1") },
                Record::SubagentStart { t: 4, host: Host::Cursor, conv: "c", agent: "task:1" },
                Record::SubagentStart { t: 5, host: Host::Cursor, conv: "c", agent: "task:2" },
                Record::SubagentStop { t: 6, host: Host::Cursor, conv: "c", agent: None },
            ],
        };
        assert_eq!(v.active_subagents("a", now), vec!["agent:2"]);
        assert_eq!(v.active_subagents("c", now), vec!["task:2"]);
        assert!(v.active_subagents("zzz", now).is_empty());
        assert!(v.active_subagents("a", now + STATE_TTL_MS + 10).is_empty());
    }

    #[test]
    fn trim_keeps_what_matters_and_raises_the_floor() {
        let now = 10 * STATE_TTL_MS;
        let convs: Vec<String> = (0..300).map(|i| format!("c{i}")).collect();
        let mut recs = Vec::new();
        for (i, c) in convs.iter().enumerate() {
            recs.push(Record::Sighting { t: now - 300 + i as u64, host: Host::ClaudeCode, conv: c, event: "x" });
            recs.push(Record::Compaction { t: now - 300 + i as u64, host: Host::ClaudeCode, conv: c });
        }
        recs.push(Record::Compaction { t: now - STATE_TTL_MS - 5, host: Host::Codex, conv: "old" });
        let kept = trim(&recs, now);
        let v = View { records: kept };
        // The newest conversations survive, the verdict is unchanged.
        assert!(v.concurrent(now));
        assert_eq!(v.last_compaction("c299"), Some(now - 1));
        // Evicted compactions raise the floor to the newest evicted one.
        assert_eq!(v.last_compaction("c0"), None);
        assert_eq!(v.compaction_floor(), now - 300 + (300 - MAX_CONVERSATIONS as u64 - 1));
        let n = v.records.iter().filter(|r| matches!(r, Record::Sighting { .. })).count();
        assert_eq!(n, MAX_CONVERSATIONS);
    }
}

#[cfg(test)]
mod append_tests {
    use super::*;

    #[test]
    fn a_torn_tail_does_not_swallow_the_next_record() {
        let tmp = tempfile::tempdir().unwrap();
        let j = Journal::new(tmp.path());
        fs::write(j.path(), "S\t1\tcursor\ta\tx\nS\t2\tcur").unwrap();
        j.append(&[Record::End { t: 3, host: Host::Cursor, conv: "a" }], 3).unwrap();
        let text = j.read().unwrap();
        let recs = parse(&text);
        assert_eq!(recs.len(), 2, "{text:?}");
        assert!(matches!(recs[1], Record::End { t: 3, .. }));
    }
}
