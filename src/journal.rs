//! The journal: what every hook process saw, shared by every reader.
//!
//! One record a line, tab-separated, appended under an exclusive lock and
//! read under a shared lock. The lock is taken on `journal.lock`, a file that
//! is never replaced, so a trim (rewrite + rename of `journal`) cannot strand
//! a locker on an old inode.
//!
//! The file stays bounded however long it runs: once it grows past
//! `max(TRIM_MIN_BYTES, 2 × what the last trim kept)` the appender rewrites
//! it, keeping only what can still matter (README: "State"). Every eviction is
//! in the safe direction: a forgotten sighting is only dropped when newer
//! ones still show the same verdict, a forgotten end keeps a conversation
//! "live" (more withholding), and a forgotten compaction raises the
//! compaction floor, so any delivery before it is treated as compacted.
//!
//! Line format (`-` for absent):
//! ```text
//! S t host conv event                               sighting of a top-level conversation
//! U t host conv agent                               subagent started
//! u t host conv agent|-                             subagent stopped (`-`: an older Cursor named none)
//! C t host conv agent|- server|- tool fp callid|- key   gated MCP call
//! K t key                                           a call record was claimed
//! P t host conv                                     compaction
//! E t host conv                                     session end
//! L t host pid conv                                 the host process pid now serves conv (/clear)
//! F t                                               compactions up to t may have been forgotten
//! D t host conv scope window|- ref key ver digest len   delivery (the ledger: see ledger.rs)
//! A t host scope ref digest len whole|cut           a host hook acknowledged a call's result
//! ```
//!
//! Order is meaningful: the ledger's "after" is "later in the file", and a
//! trim keeps the records it keeps in file order.

use crate::fsx::{self, LockKind};
use crate::host::Host;
use crate::ledger::{Ack, Delivery};
use crate::paths::{JOURNAL_FILE, JOURNAL_LOCK_FILE};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
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
/// Which session a Claude process serves is kept this long (a session
/// outlives the slot's 2 h; a forgotten one only makes the server's env
/// unproven, which withholds more).
pub const LINEAGE_KEEP_MS: u64 = 24 * 60 * 60 * 1000;
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
    Delivery(Delivery<'a>),
    Ack(Ack<'a>),
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
            Record::Delivery(d) => d.t,
            Record::Ack(a) => a.t,
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
            Record::Delivery(d) => writeln!(
                out,
                "D\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                d.t,
                d.host,
                f(d.conv),
                f(d.scope),
                o(d.window),
                f(d.call_ref),
                f(d.key),
                f(d.version),
                f(d.digest),
                d.len
            ),
            Record::Ack(a) => writeln!(
                out,
                "A\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                a.t,
                a.host,
                f(a.scope),
                f(a.call_ref),
                f(a.digest),
                a.len,
                if a.whole { "whole" } else { "cut" }
            ),
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
        "D" => Record::Delivery(Delivery {
            t,
            host: parse_host(it.next()?)?,
            conv: it.next()?,
            scope: it.next()?,
            window: opt(it.next()?),
            call_ref: it.next()?,
            key: it.next()?,
            version: it.next()?,
            digest: it.next()?,
            len: it.next()?.parse().ok()?,
        }),
        "A" => Record::Ack(Ack {
            t,
            host: parse_host(it.next()?)?,
            scope: it.next()?,
            call_ref: it.next()?,
            digest: it.next()?,
            len: it.next()?.parse().ok()?,
            whole: match it.next()? {
                "whole" => true,
                "cut" => false,
                _ => return None,
            },
        }),
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

    /// The latest compaction of any conversation.
    pub fn latest_compaction_any(&self) -> Option<u64> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Compaction { t, .. } => Some(t),
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

    /// Subagents of `conv` started and not yet stopped, nor ended with their
    /// session: a subagent runs until its stop, however long (a timer let a
    /// subagent running past 2 h pass for stopped, and the parent get its
    /// stubs). A stop without an id (an older Cursor) closes the oldest open
    /// start.
    pub fn active_subagents(&self, conv: &str, now: u64) -> Vec<&'a str> {
        self.open_subagents(conv, now).into_iter().map(|(a, _)| a).collect()
    }

    /// [`View::active_subagents`] with each one's start time.
    pub fn open_subagents(&self, conv: &str, now: u64) -> Vec<(&'a str, u64)> {
        // (time, order at equal times: end, start, stop; agent)
        let mut events: Vec<(u64, u8, Option<&'a str>)> = self
            .records
            .iter()
            .filter(|r| !is_future_for(r, now))
            .filter_map(|r| match *r {
                Record::End { t, conv: c, .. } if c == conv => Some((t, 0, None)),
                Record::SubagentStart { t, conv: c, agent, .. } if c == conv => Some((t, 1, Some(agent))),
                Record::SubagentStop { t, conv: c, agent, .. } if c == conv => Some((t, 2, agent)),
                _ => None,
            })
            .collect();
        events.sort_by_key(|e| (e.0, e.1));
        let mut open: Vec<(&'a str, u64)> = Vec::new();
        for (t, kind, agent) in events {
            match (kind, agent) {
                (0, _) => open.clear(),
                (1, Some(a)) => {
                    open.retain(|o| o.0 != a);
                    open.push((a, t));
                }
                (2, Some(a)) => open.retain(|o| o.0 != a),
                (2, None) if !open.is_empty() => {
                    open.remove(0);
                }
                _ => {}
            }
        }
        open
    }

    /// A subagent of `conv` (host `host`) is running whose calls could be
    /// recorded under `conv` itself: its hooks have shown it runs inside the
    /// parent's conversation (a call record of `conv` with its `task:` id:
    /// lean-ctx's `CURSOR_TASK_ID` model, whose env a hook may lack), or
    /// nothing shows yet that it has a conversation of its own (no
    /// conversation of the host first seen since it started: Cursor 3.x gives
    /// a subagent a fresh conversation id). Such a parent cannot be told from
    /// its subagent by a fingerprint.
    pub fn subagent_unwitnessed(&self, conv: &str, host: Host, now: u64) -> bool {
        let open = self.open_subagents(conv, now);
        if open.is_empty() {
            return false;
        }
        let mut first: HashMap<&str, u64> = HashMap::new();
        for r in &self.records {
            if let Record::Sighting { t, host: h, conv: c, .. } = *r
                && h == host
                && c != conv
                && !is_future(t, now)
            {
                let e = first.entry(c).or_insert(t);
                *e = (*e).min(t);
            }
        }
        open.iter().any(|&(a, t0)| {
            let inside =
                self.records.iter().any(|r| matches!(r, Record::Call(c) if c.conv == conv && c.agent == Some(a)));
            inside || !first.values().any(|&t| t >= t0)
        })
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
                    if h == host && p == pid && in_window(t, now, LINEAGE_KEEP_MS) =>
                {
                    Some((t, conv))
                }
                _ => None,
            })
            .max_by_key(|(t, _)| *t)
    }

    /// The newest delivery of `key` (hashed) to `scope`, in file order, with
    /// its index.
    pub fn latest_delivery(&self, scope: &str, key: &str) -> Option<(usize, &Delivery<'a>)> {
        self.records.iter().enumerate().rev().find_map(|(i, r)| match r {
            Record::Delivery(d) if d.scope == scope && d.key == key => Some((i, d)),
            _ => None,
        })
    }

    /// Acknowledgements of the call `call_ref` after index `after`.
    pub fn acks_after(&self, call_ref: &str, after: usize) -> Vec<Ack<'a>> {
        self.records
            .iter()
            .skip(after + 1)
            .filter_map(|r| match r {
                Record::Ack(a) if a.call_ref == call_ref => Some(a.clone()),
                _ => None,
            })
            .collect()
    }

    /// A compaction of `conv` lies after index `after`.
    pub fn compacted_after(&self, conv: &str, after: usize) -> bool {
        self.records.iter().skip(after + 1).any(|r| matches!(r, Record::Compaction { conv: c, .. } if *c == conv))
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

/// What a trim keeps (pure). Output is in file order (the ledger's "after"
/// is file order), a synthesized floor first.
pub fn trim<'a>(records: &[Record<'a>], now: u64) -> Vec<Record<'a>> {
    use std::cmp::Reverse;
    let fresh = |t: u64, keep: u64| now.saturating_sub(t) <= keep;
    let mut floor = 0u64;
    let mut keep: Vec<usize> = Vec::new();

    // Latest per key by time (a tie goes to the later line), newest first.
    fn latest<K: std::hash::Hash + Eq>(it: impl Iterator<Item = (K, usize, u64)>) -> Vec<(usize, u64)> {
        let mut m: HashMap<K, (usize, u64)> = HashMap::new();
        for (k, i, t) in it {
            match m.get(&k) {
                Some(&(_, old)) if old > t => {}
                _ => {
                    m.insert(k, (i, t));
                }
            }
        }
        let mut v: Vec<_> = m.into_values().collect();
        v.sort_by_key(|&(i, t)| Reverse((t, i)));
        v
    }
    let indexed = || records.iter().enumerate();

    // Sightings: newest per conversation, plus the newest per host always.
    // Sightings from beyond the skew are dropped: kept, one would pass for
    // its conversation's newest and evict the real, current one.
    let current = || indexed().filter(|(_, r)| !is_future(r.t(), now));
    let sightings = latest(current().filter_map(|(i, r)| match *r {
        Record::Sighting { t, host, conv, .. } => Some(((host, conv), i, t)),
        _ => None,
    }));
    let per_host = latest(current().filter_map(|(i, r)| match *r {
        Record::Sighting { t, host, .. } => Some((host, i, t)),
        _ => None,
    }));
    let kept_sightings: Vec<usize> =
        sightings.into_iter().filter(|&(_, t)| fresh(t, STATE_TTL_MS)).take(MAX_CONVERSATIONS).map(|x| x.0).collect();
    // And the oldest sighting of each kept conversation: when it was first
    // seen tells a subagent's own new conversation from one that was there
    // before (see `View::subagent_unwitnessed`); a trim must not make an old
    // conversation look new.
    let mut oldest: HashMap<(Host, &str), (usize, u64)> = HashMap::new();
    for (i, r) in current() {
        if let Record::Sighting { t, host, conv, .. } = *r {
            let e = oldest.entry((host, conv)).or_insert((i, t));
            if t < e.1 {
                *e = (i, t);
            }
        }
    }
    for &i in &kept_sightings {
        if let Record::Sighting { host, conv, .. } = records[i]
            && let Some(&(o, _)) = oldest.get(&(host, conv))
        {
            keep.push(o);
        }
    }
    keep.extend(kept_sightings);
    for (i, _) in per_host {
        if !keep.contains(&i) {
            keep.push(i);
        }
    }

    let ends = latest(indexed().filter_map(|(i, r)| match *r {
        Record::End { t, host, conv } => Some(((host, conv), i, t)),
        _ => None,
    }));
    keep.extend(ends.into_iter().filter(|&(_, t)| fresh(t, STATE_TTL_MS)).take(MAX_CONVERSATIONS).map(|x| x.0));

    let compactions = latest(indexed().filter_map(|(i, r)| match *r {
        Record::Compaction { t, conv, .. } => Some((conv, i, t)),
        _ => None,
    }));
    for (n, (i, t)) in compactions.into_iter().enumerate() {
        if n < MAX_CONVERSATIONS && fresh(t, STATE_TTL_MS) {
            keep.push(i);
        } else {
            floor = floor.max(t);
        }
    }

    // Subagent records inside the TTL, and the start of every subagent still
    // open however old (it runs until its stop or its session's end).
    let open_starts: HashSet<(&str, &str)> = {
        let convs: HashSet<&str> = records
            .iter()
            .filter_map(|r| match *r {
                Record::SubagentStart { conv, .. } => Some(conv),
                _ => None,
            })
            .collect();
        let view = View { records: records.to_vec() };
        convs.into_iter().flat_map(|c| view.active_subagents(c, now).into_iter().map(move |a| (c, a))).collect()
    };
    let mut subs: Vec<(usize, u64)> = indexed()
        .filter(|(_, r)| match **r {
            Record::SubagentStart { t, conv, agent, .. } => {
                fresh(t, STATE_TTL_MS) || open_starts.contains(&(conv, agent))
            }
            Record::SubagentStop { t, .. } => fresh(t, STATE_TTL_MS),
            _ => false,
        })
        .map(|(i, r)| (i, r.t()))
        .collect();
    subs.sort_by_key(|&(i, t)| Reverse((t, i)));
    keep.extend(subs.into_iter().take(MAX_SUBAGENT_RECORDS).map(|x| x.0));

    let mut calls: Vec<(usize, u64)> = indexed()
        .filter(|(_, r)| matches!(r, Record::Call(_)) && fresh(r.t(), CALL_KEEP_MS))
        .map(|(i, r)| (i, r.t()))
        .collect();
    calls.sort_by_key(|&(i, t)| Reverse((t, i)));
    calls.truncate(MAX_CALLS);
    let kept_keys: HashSet<&str> = calls
        .iter()
        .filter_map(|&(i, _)| match &records[i] {
            Record::Call(c) => Some(c.key),
            _ => None,
        })
        .collect();
    keep.extend(calls.iter().map(|x| x.0));
    keep.extend(
        indexed().filter(|(_, r)| matches!(r, Record::Claim { key, .. } if kept_keys.contains(key))).map(|x| x.0),
    );

    let lineage = latest(indexed().filter_map(|(i, r)| match *r {
        Record::Lineage { t, host, pid, .. } => Some(((host, pid), i, t)),
        _ => None,
    }));
    keep.extend(lineage.into_iter().filter(|&(_, t)| fresh(t, LINEAGE_KEEP_MS)).take(MAX_LINEAGE).map(|x| x.0));

    keep.extend(ledger_kept(records, now));

    for r in records {
        if let Record::Floor { t } = *r {
            floor = floor.max(t);
        }
    }
    keep.sort_unstable();
    keep.dedup();
    let mut out = Vec::with_capacity(keep.len() + 1);
    if floor > 0 {
        out.push(Record::Floor { t: floor });
    }
    out.extend(keep.into_iter().map(|i| records[i].clone()));
    out
}

/// The ledger records a trim keeps (indices): per scope and key only the
/// newest delivery (the only one a decision reads), unless a compaction of
/// its conversation follows it (dead: and forgetting that compaction later
/// must not revive it), inside [`crate::ledger::DELIVERY_KEEP_MS`], the
/// newest [`crate::ledger::MAX_DELIVERIES`]; and the acknowledgements that
/// follow a kept delivery of their call. Everything dropped is dropped in
/// the safe direction: a forgotten delivery or acknowledgement means
/// "deliver".
fn ledger_kept(records: &[Record<'_>], now: u64) -> Vec<usize> {
    use std::cmp::Reverse;
    let mut last_compaction: HashMap<&str, usize> = HashMap::new();
    let mut newest: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        match r {
            Record::Compaction { conv, .. } => {
                last_compaction.insert(conv, i);
            }
            Record::Delivery(d) => {
                newest.insert((d.scope, d.key), i);
            }
            _ => {}
        }
    }
    let mut live: Vec<usize> = newest
        .into_values()
        .filter(|&i| match &records[i] {
            Record::Delivery(d) => {
                last_compaction.get(d.conv).is_none_or(|&p| p < i)
                    && now.saturating_sub(d.t) <= crate::ledger::DELIVERY_KEEP_MS
            }
            _ => false,
        })
        .collect();
    live.sort_unstable_by_key(|&i| Reverse(i));
    live.truncate(crate::ledger::MAX_DELIVERIES);
    // The first kept delivery of each call: an acknowledgement after it may count.
    let mut first_of_ref: HashMap<&str, usize> = HashMap::new();
    for &i in &live {
        if let Record::Delivery(d) = &records[i] {
            let e = first_of_ref.entry(d.call_ref).or_insert(i);
            *e = (*e).min(i);
        }
    }
    let acks = records.iter().enumerate().filter_map(|(i, r)| match r {
        Record::Ack(a) if first_of_ref.get(a.call_ref).is_some_and(|&d| d < i) => Some(i),
        _ => None,
    });
    let mut out = live;
    out.extend(acks);
    out
}

/// The journal files of one data dir.
#[derive(Clone, Debug)]
pub struct Journal {
    dir: PathBuf,
}

/// A held lock on `journal.lock`.
pub type LockGuard = fsx::Lock;

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
        let Some(file) = fsx::open_state(&path, exclusive, u64::MAX)? else {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display())));
        };
        let kind = if exclusive { LockKind::Exclusive } else { LockKind::Shared };
        fsx::lock(file, kind, deadline).map_err(|e| match e {
            fsx::LockError::Busy { waited } => io::Error::new(
                io::ErrorKind::TimedOut,
                format!("journal lock busy for more than {} ms", waited.as_millis()),
            ),
            fsx::LockError::Io(e) => e,
        })
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
        let Some(bytes) = fsx::read_state(&path, MAX_READ_BYTES)? else { return Err(missing(&path)) };
        if bytes.is_empty() {
            return Err(fsx::untrusted(&path, "is empty while journal.lock exists (emptied?)"));
        }
        Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// What a trim reads: the whole journal, or when it is larger than a
    /// reader reads, only its last [`MAX_READ_BYTES`] from the first whole
    /// line on (`true`: the head was cut). Missing: empty.
    fn read_for_trim(&self) -> io::Result<(String, bool)> {
        let path = self.path();
        let Some(f) = fsx::open_state(&path, false, u64::MAX)? else { return Ok((String::new(), false)) };
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
        let (mut f, md) = fsx::open_state_md(&self.path(), true, u64::MAX)?.ok_or_else(|| self.missing_error())?;
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
            if fsx::read_at(&f, &mut last, before - 1)? == 1 && last[0] != b'\n' {
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
        fsx::write_atomic(&self.path(), out.as_bytes())?;
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
    let n = fsx::read_at(f, &mut buf, start).ok()?;
    buf.truncate(n);
    let text = String::from_utf8_lossy(&buf);
    // Past the first newline unless we read from the start: the first
    // line may be cut.
    let body = if start == 0 { &text[..] } else { text.split_once('\n').map(|(_, b)| b).unwrap_or("") };
    parse(body).iter().map(Record::t).max()
}

fn read_kept_header(f: &File) -> Option<u64> {
    let mut head = [0u8; 48];
    let n = fsx::read_at(f, &mut head, 0).ok()?;
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
        if !name.to_string_lossy().starts_with(fsx::TEMP_PREFIX) {
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
        // A subagent runs until its stop, however long; its session's end closes it.
        assert_eq!(v.active_subagents("a", now + STATE_TTL_MS + 10), vec!["agent:2"]);
        let mut ended = v.records.clone();
        ended.push(Record::End { t: 7, host: Host::ClaudeCode, conv: "a" });
        ended.push(Record::SubagentStart { t: 8, host: Host::ClaudeCode, conv: "a", agent: "agent:3" });
        assert_eq!(View { records: ended }.active_subagents("a", now), vec!["agent:3"]);
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
mod subagent_trim_tests {
    use super::*;

    #[test]
    fn a_subagent_is_witnessed_by_its_own_new_conversation_or_not_at_all() {
        let s = |t, conv| Record::Sighting { t, host: Host::Cursor, conv, event: "x" };
        let start = Record::SubagentStart { t: 10, host: Host::Cursor, conv: "P", agent: "task:h:1" };
        let now = 100;
        // Another chat seen before the start: no witness.
        let v = View { records: vec![s(5, "P"), s(6, "Q"), start.clone(), s(20, "Q")] };
        assert!(v.subagent_unwitnessed("P", Host::Cursor, now));
        // A conversation first seen after the start (Cursor 3.x's subagent): witnessed.
        let v = View { records: vec![s(5, "P"), start.clone(), s(12, "F")] };
        assert!(!v.subagent_unwitnessed("P", Host::Cursor, now));
        // A call of the parent's conversation made by the task itself: it
        // runs inside the parent, whatever else is seen.
        let call = Record::Call(Call {
            t: 13,
            host: Host::Cursor,
            conv: "P",
            agent: Some("task:h:1"),
            server: None,
            tool: "t",
            fp: "f",
            call_id: None,
            key: "k",
        });
        let v = View { records: vec![s(5, "P"), start.clone(), s(12, "F"), call] };
        assert!(v.subagent_unwitnessed("P", Host::Cursor, now));
        // No subagent: nothing to witness. Another host's new chat is no witness.
        assert!(!View { records: vec![s(5, "P")] }.subagent_unwitnessed("P", Host::Cursor, now));
        let other = Record::Sighting { t: 12, host: Host::ClaudeCode, conv: "F", event: "x" };
        assert!(View { records: vec![s(5, "P"), start.clone(), other] }.subagent_unwitnessed("P", Host::Cursor, now));
        // A trim keeps each kept conversation's first sighting: an old chat
        // does not look new after it.
        let recs: Vec<Record> = vec![s(1, "Q"), s(5, "P"), start, s(50, "Q")];
        let kept = trim(&recs, now);
        assert!(View { records: kept }.subagent_unwitnessed("P", Host::Cursor, now));
    }

    #[test]
    fn an_open_subagent_survives_trims_however_old() {
        let now = 10 * STATE_TTL_MS;
        let old = now - 3 * STATE_TTL_MS;
        let recs = vec![
            Record::SubagentStart { t: old, host: Host::ClaudeCode, conv: "a", agent: "agent:long" },
            Record::SubagentStart { t: old, host: Host::ClaudeCode, conv: "a", agent: "agent:done" },
            Record::SubagentStop { t: old + 1, host: Host::ClaudeCode, conv: "a", agent: Some("agent:done") },
            Record::SubagentStart { t: old, host: Host::ClaudeCode, conv: "b", agent: "agent:ended" },
            Record::End { t: old + 2, host: Host::ClaudeCode, conv: "b" },
        ];
        let kept = trim(&recs, now);
        let v = View { records: kept };
        assert_eq!(v.active_subagents("a", now), vec!["agent:long"]);
        assert!(v.active_subagents("b", now).is_empty());
        assert_eq!(v.records.iter().filter(|r| matches!(r, Record::SubagentStart { .. })).count(), 1);
    }
}

#[cfg(test)]
mod ledger_trim_tests {
    use super::*;

    fn d<'a>(t: u64, conv: &'a str, key: &'a str, r: &'a str) -> Record<'a> {
        Record::Delivery(Delivery {
            t,
            host: Host::Codex,
            conv,
            scope: conv,
            window: None,
            call_ref: r,
            key,
            version: "v",
            digest: "dg",
            len: 1,
        })
    }

    fn a<'a>(t: u64, conv: &'a str, r: &'a str) -> Record<'a> {
        Record::Ack(Ack { t, host: Host::Codex, scope: conv, call_ref: r, digest: "dg", len: 1, whole: true })
    }

    #[test]
    fn trim_keeps_live_deliveries_in_file_order_and_drops_dead_ones() {
        let now = 10 * crate::ledger::DELIVERY_KEEP_MS;
        let recs = vec![
            a(now - 9, "x", "id:0"),       // before any delivery of its call: useless
            d(now - 8, "x", "k1", "id:1"), // superseded by the next delivery of k1
            a(now - 7, "x", "id:1"),       // its acknowledgement goes with it
            d(now - 6, "x", "k1", "id:2"), // kept
            d(now - 5, "y", "k1", "id:3"), // followed by y's compaction: dead
            Record::Compaction { t: now - 4, host: Host::Codex, conv: "y" },
            // A clock that went back: still after, by file order.
            a(now - 100, "x", "id:2"),                                       // kept
            d(now - crate::ledger::DELIVERY_KEEP_MS - 1, "z", "k9", "id:9"), // too old
            d(now - 3, "y", "k2", "id:4"),                                   // after the compaction: kept
        ];
        let kept = trim(&recs, now);
        let ledger: Vec<&Record> = kept.iter().filter(|r| matches!(r, Record::Delivery(_) | Record::Ack(_))).collect();
        assert_eq!(ledger, vec![&recs[3], &recs[6], &recs[8]]);
        let v = View { records: kept.clone() };
        let (at, dl) = v.latest_delivery("x", "k1").unwrap();
        assert_eq!(dl.call_ref, "id:2");
        assert_eq!(v.acks_after("id:2", at).len(), 1);
        assert!(v.latest_delivery("y", "k1").is_none(), "a dead delivery must not survive its compaction's eviction");
        // File order throughout: a trim of the trim changes nothing.
        assert_eq!(trim(&kept, now), kept);
    }

    #[test]
    fn trim_bounds_the_ledger() {
        let now = 10 * crate::ledger::DELIVERY_KEEP_MS;
        let keys: Vec<String> = (0..2000).map(|i| format!("k{i}")).collect();
        let refs: Vec<String> = (0..2000).map(|i| format!("id:{i}")).collect();
        let mut recs = Vec::new();
        for i in 0..2000 {
            recs.push(d(now - 5000 + i as u64, "x", &keys[i], &refs[i]));
            recs.push(a(now - 5000 + i as u64, "x", &refs[i]));
        }
        let kept = trim(&recs, now);
        let n = kept.iter().filter(|r| matches!(r, Record::Delivery(_))).count();
        assert_eq!(n, crate::ledger::MAX_DELIVERIES);
        // The newest survive, with their acknowledgements.
        let v = View { records: kept };
        assert!(v.latest_delivery("x", "k1999").is_some());
        assert!(v.latest_delivery("x", "k0").is_none());
        assert_eq!(v.records.iter().filter(|r| matches!(r, Record::Ack(_))).count(), crate::ledger::MAX_DELIVERIES);
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
