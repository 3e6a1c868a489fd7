//! One journal line: the records, how each is written and parsed.

use super::*;

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
    /// `reach`: what it ended ([`Reach`]; `All` unless a Claude Code
    /// hook or transcript line names the context).
    Compaction {
        t: u64,
        host: Host,
        conv: &'a str,
        reach: Reach<'a>,
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
            // A narrower reach goes on a line of its own just before the
            // `P` line (one write): a reader that predates it skips that line
            // (an unknown tag) and reads the `P` line as ending everything.
            Record::Compaction { t, host, conv, reach } => {
                if let Some(r) = reach.field() {
                    let _ = writeln!(out, "{REACH_TAG}\t{t}\t{host}\t{}\t{}", f(conv), f(&r));
                }
                writeln!(out, "P\t{t}\t{host}\t{}", f(conv))
            }
            Record::End { t, host, conv } => writeln!(out, "E\t{t}\t{host}\t{}", f(conv)),
            Record::Lineage { t, host, pid, conv } => {
                writeln!(out, "L\t{t}\t{host}\t{pid}\t{}", f(conv))
            }
            Record::Floor { t } => writeln!(out, "F\t{t}"),
            // A diff's base is a last field, only when there is one: a
            // reader that predates it skips such a line (malformed to it),
            // which forgets the delivery, the safe direction.
            Record::Delivery(d) => writeln!(
                out,
                "D\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}{}",
                d.t,
                d.host,
                f(d.conv),
                f(d.scope),
                o(d.window),
                f(d.call_ref),
                f(d.key),
                f(d.version),
                f(d.digest),
                d.len,
                Base(d.base)
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

/// A delivery's optional last field: `\t<base>` when it has one.
struct Base<'a>(Option<&'a str>);

impl std::fmt::Display for Base<'_> {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(b) => write!(out, "\t{}", field(b)),
            None => Ok(()),
        }
    }
}

fn opt(s: &str) -> Option<&str> {
    (s != "-").then_some(s)
}

/// `line.split('\t')`, eight bytes at a time: a tab is ASCII, so every cut
/// is a char boundary. Readers parse every journal line; on a 65 KiB
/// journal this splits in ~22 µs where `str::split('\t')` takes ~30-40 µs
/// and a byte-by-byte search ~45 µs.
pub(super) struct Fields<'a> {
    pub(super) rest: Option<&'a str>,
}

/// The index of the first tab in `s`.
pub(super) fn find_tab(s: &[u8]) -> Option<usize> {
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

/// `s.parse::<u64>().ok()`, exactly (an optional `+`, then one or more
/// ASCII digits, no overflow), in a plain loop: std's general parse was
/// ~140 instructions for a 13-digit time, paid on most lines of every
/// one-shot fold (benches/README.md).
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let digits = match b {
        [b'+', rest @ ..] => rest,
        _ => b,
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    if digits.len() <= 19 {
        // 19 digits cannot overflow a u64.
        for &c in digits {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            n = n * 10 + u64::from(d);
        }
        return Some(n);
    }
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Parse one line (without its newline). Malformed lines give `None`.
pub fn parse_line(line: &str) -> Option<Record<'_>> {
    let mut it = Fields { rest: Some(line) };
    let tag = it.next()?;
    let t: u64 = parse_u64(it.next()?)?;
    let rec = match tag {
        "S" => Record::Sighting { t, host: Host::from_name(it.next()?)?, conv: it.next()?, event: it.next()? },
        "U" => Record::SubagentStart { t, host: Host::from_name(it.next()?)?, conv: it.next()?, agent: it.next()? },
        "u" => Record::SubagentStop { t, host: Host::from_name(it.next()?)?, conv: it.next()?, agent: opt(it.next()?) },
        "C" => Record::Call(Call {
            t,
            host: Host::from_name(it.next()?)?,
            conv: it.next()?,
            agent: opt(it.next()?),
            server: opt(it.next()?),
            tool: it.next()?,
            fp: it.next()?,
            call_id: opt(it.next()?),
            key: it.next()?,
        }),
        "K" => Record::Claim { t, key: it.next()?, claimant: it.next().and_then(opt) },
        "P" => Record::Compaction { t, host: Host::from_name(it.next()?)?, conv: it.next()?, reach: Reach::All },
        "E" => Record::End { t, host: Host::from_name(it.next()?)?, conv: it.next()? },
        "L" => {
            Record::Lineage { t, host: Host::from_name(it.next()?)?, pid: it.next()?.parse().ok()?, conv: it.next()? }
        }
        "F" => Record::Floor { t },
        "D" => Record::Delivery(Delivery {
            t,
            host: Host::from_name(it.next()?)?,
            conv: it.next()?,
            scope: it.next()?,
            window: opt(it.next()?),
            call_ref: it.next()?,
            key: it.next()?,
            version: it.next()?,
            digest: it.next()?,
            len: it.next()?.parse().ok()?,
            base: it.next(),
        }),
        "A" => Record::Ack(Ack {
            t,
            host: Host::from_name(it.next()?)?,
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

/// The tag of a compaction's reach line (`p t host conv reach`), written
/// just before its `P` line.
pub const REACH_TAG: &str = "p";

/// A reach line (`p t host conv reach`): the reach of the compaction whose
/// `P` line follows it, if that names the same time, host and conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReachLine<'a> {
    t: u64,
    host: Host,
    conv: &'a str,
    reach: Reach<'a>,
}

impl<'a> ReachLine<'a> {
    /// `line` read as a reach line (`None`: it is not one, or malformed).
    pub fn parse(line: &'a str) -> Option<ReachLine<'a>> {
        let mut it = Fields { rest: Some(line.strip_prefix(REACH_TAG)?.strip_prefix('\t')?) };
        let r = ReachLine {
            t: parse_u64(it.next()?)?,
            host: Host::from_name(it.next()?)?,
            conv: it.next()?,
            reach: Reach::parse(Some(it.next()?)),
        };
        if it.next().is_some() {
            return None;
        }
        Some(r)
    }

    /// `rec` with this reach, if it is the compaction this line qualifies
    /// (else `rec` as it is: a `P` line alone ends everything).
    pub fn apply(pending: Option<ReachLine<'a>>, rec: Record<'a>) -> Record<'a> {
        match rec {
            Record::Compaction { t, host, conv, .. } => {
                Record::Compaction { t, host, conv, reach: Self::reach_of(pending, t, host, conv) }
            }
            rec => rec,
        }
    }

    /// The reach of the compaction of `conv` by `host` at `t` whose `P` line
    /// follows `pending` (none, or another's: everything).
    pub fn reach_of(pending: Option<ReachLine<'a>>, t: u64, host: Host, conv: &str) -> Reach<'a> {
        match pending {
            Some(p) if (p.t, p.host, p.conv) == (t, host, conv) => p.reach,
            _ => Reach::All,
        }
    }
}

/// Whether `line` is a journal line this reader knows: a record, or a
/// compaction's reach line.
pub fn is_known_line(line: &str) -> bool {
    parse_line(line).is_some() || ReachLine::parse(line).is_some()
}

/// Parse a whole journal text. The header, comments, malformed lines and a
/// final line without its newline (a write in progress) are skipped. A
/// reach line qualifies the `P` line right after it.
pub fn parse(text: &str) -> Vec<Record<'_>> {
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let mut out = Vec::new();
    let mut pending = None;
    for l in crate::base::bytes::lines(complete) {
        if l.starts_with('#') {
            pending = None;
            continue;
        }
        if let Some(r) = ReachLine::parse(l) {
            pending = Some(r);
            continue;
        }
        if let Some(rec) = parse_line(l) {
            out.push(ReachLine::apply(pending, rec));
        }
        pending = None;
    }
    out
}
