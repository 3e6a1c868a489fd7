//! The log's line format (pure): one answered question a line,
//! tab-separated, `-` for absent, names percent-encoded so no tab, newline
//! or `%` in a path can break a line:
//!
//! ```text
//! R t via host|- conv|- kind reason|- file sent|- whole
//! ```
//!
//! `via`: `serve`, `cli`, `lib`; `kind`: `whole`, `stub`, `diff`,
//! `withheld` (with the reason), `error`; `sent`, `whole`: bytes.

use super::Outcome;
use crate::base::host::Host;
use std::fmt::Write;

/// The longest file name kept (its tail, after `…`): a bound on every line
/// and on the aggregates, whatever a server names its content.
pub const MAX_FILE_CHARS: usize = 160;

/// Who answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Via {
    /// The `read` tool of `leanctx serve`.
    Serve,
    /// `leanctx stub` / `leanctx deliver`.
    Cli,
    /// The library (`ReadPath::stub` / `deliver`) in another program.
    Lib,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Serve => "serve",
            Via::Cli => "cli",
            Via::Lib => "lib",
        }
    }

    pub fn parse(s: &str) -> Option<Via> {
        [Via::Serve, Via::Cli, Via::Lib].into_iter().find(|v| v.as_str() == s)
    }
}

/// What the answer was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind<'a> {
    /// The content, as nothing could be stubbed (a first read, a changed
    /// file without a diff).
    Whole,
    /// A stub in place of content the caller holds.
    Stub,
    /// A diff against the version the caller holds.
    Diff,
    /// The content, where a stub was not proven safe: the reason code
    /// (README, "The delivery ledger").
    Withheld(&'a str),
    /// A tool error: nothing sent of the file.
    Error,
}

impl Kind<'_> {
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Whole => "whole",
            Kind::Stub => "stub",
            Kind::Diff => "diff",
            Kind::Withheld(_) => "withheld",
            Kind::Error => "error",
        }
    }
}

/// One parsed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    pub t: u64,
    pub via: Via,
    pub host: Option<Host>,
    pub conv: Option<String>,
    pub kind: Kind<'a>,
    pub file: String,
    pub sent: u64,
    pub whole: u64,
    pub saved: u64,
}

/// Append `o`'s line (with its newline) to `out`.
pub fn write(out: &mut String, t: u64, o: &Outcome<'_>) {
    let _ = write!(out, "R\t{t}\t{}\t{}\t", o.via.as_str(), o.host.map_or("-", Host::as_str));
    match o.conversation.filter(|c| crate::base::ids::is_valid_id(c)) {
        Some(c) => encode(out, c),
        None => out.push('-'),
    }
    // A reason is a code (README's table): plain words, or "other".
    let reason = match o.kind {
        Kind::Withheld(r) if is_code(r) => r,
        Kind::Withheld(_) => "other",
        _ => "-",
    };
    let _ = write!(out, "\t{}\t{reason}\t", o.kind.as_str());
    encode(out, tail(o.file));
    match o.sent {
        Some(s) => {
            let _ = writeln!(out, "\t{s}\t{}", o.whole);
        }
        None => {
            let _ = writeln!(out, "\t-\t{}", o.whole);
        }
    }
}

fn is_code(r: &str) -> bool {
    (1..=40).contains(&r.len()) && r != "-" && r.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
}

/// The last [`MAX_FILE_CHARS`] characters of a name, marked when cut.
fn tail(s: &str) -> &str {
    match s.char_indices().rev().nth(MAX_FILE_CHARS - 1) {
        Some((i, _)) if i > 0 => &s[i..],
        _ => s,
    }
}

fn encode(out: &mut String, s: &str) {
    // `-` alone means "absent", the empty name has no bytes to write.
    match s {
        "" => return out.push_str("%00"),
        "-" => return out.push_str("%2D"),
        _ => {}
    }
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            c if c.is_control() => {
                let mut b = [0u8; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    let _ = write!(out, "%{byte:02X}");
                }
            }
            c => out.push(c),
        }
    }
}

fn decode(s: &str) -> Option<String> {
    if s == "%00" {
        return Some(String::new());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn opt(s: &str) -> Option<Option<String>> {
    if s == "-" { Some(None) } else { decode(s).map(Some) }
}

/// Parse one line (without its newline). `None`: not a line of ours, or
/// torn; the fold counts it as unreadable.
pub fn parse(line: &str) -> Option<Line<'_>> {
    let f: Vec<&str> = line.split('\t').collect();
    let [tag, t, via, host, conv, kind, reason, file, sent, whole] = f.as_slice() else { return None };
    if *tag != "R" {
        return None;
    }
    let kind = match *kind {
        "whole" => Kind::Whole,
        "stub" => Kind::Stub,
        "diff" => Kind::Diff,
        "error" => Kind::Error,
        // Reasons are the read path's codes: plain words, never encoded.
        "withheld" if is_code(reason) => Kind::Withheld(reason),
        _ => return None,
    };
    let host = match *host {
        "-" => None,
        h => Some(Host::from_name(h)?),
    };
    let sent = match *sent {
        "-" => None,
        s => Some(s.parse().ok()?),
    };
    let o = Outcome {
        via: Via::parse(via)?,
        host,
        conversation: None,
        file: "",
        kind,
        sent,
        whole: whole.parse().ok()?,
        t_ms: None,
    };
    Some(Line {
        t: t.parse().ok()?,
        via: o.via,
        host,
        conv: opt(conv)?.filter(|c| crate::base::ids::is_valid_id(c)),
        kind,
        file: decode(file)?,
        sent: o.sent_bytes(),
        whole: o.whole,
        saved: o.saved_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: Kind<'static>, file: &'static str, sent: Option<u64>) -> String {
        let o = Outcome {
            via: Via::Serve,
            host: Some(Host::Codex),
            conversation: Some("019a-b"),
            file,
            kind,
            sent,
            whole: 1000,
            t_ms: None,
        };
        let mut s = String::new();
        write(&mut s, 42, &o);
        s
    }

    #[test]
    fn lines_round_trip_whatever_the_name() {
        for name in ["src/main.rs", "a\tb\nc%d", "-", "--x-", "é/ü", "\u{7}"] {
            let s = line(Kind::Withheld("compacted"), name, None);
            assert_eq!(s.matches('\n').count(), 1, "{s:?}");
            let l = parse(s.trim_end_matches('\n')).unwrap_or_else(|| panic!("{s:?}"));
            assert_eq!(l.file, name);
            assert_eq!((l.t, l.via, l.host, l.conv.as_deref()), (42, Via::Serve, Some(Host::Codex), Some("019a-b")));
            assert_eq!((l.kind, l.sent, l.whole, l.saved), (Kind::Withheld("compacted"), 1000, 1000, 0));
        }
        let s = line(Kind::Stub, "f", Some(30));
        let l = parse(s.trim_end()).unwrap();
        assert_eq!((l.kind, l.sent, l.saved), (Kind::Stub, 30, 970));
    }

    #[test]
    fn long_names_keep_their_tail() {
        let long = format!("{}/end.rs", "d".repeat(5000));
        let s = line(Kind::Whole, Box::leak(long.into_boxed_str()), None);
        let l = parse(s.trim_end()).unwrap();
        assert_eq!(l.file.chars().count(), MAX_FILE_CHARS);
        assert!(l.file.ends_with("/end.rs"));
    }

    #[test]
    fn torn_or_foreign_lines_do_not_parse() {
        let good = line(Kind::Diff, "f", Some(10));
        let good = good.trim_end();
        for i in 0..good.len() {
            if let Some(l) = parse(&good[..i]) {
                // A cut inside the last number still parses as a number:
                // the fold only reads lines that end in a newline.
                assert_eq!(l.kind, Kind::Diff);
            }
        }
        let s = line(Kind::Withheld("Not\tA code"), "f", None);
        assert_eq!(parse(s.trim_end()).unwrap().kind, Kind::Withheld("other"));
        for bad in ["", "R", "X\t1", "R\tx\tserve\t-\t-\twhole\t-\tf\t1\t2", "R\t1\tserve\t-\t-\twithheld\t-\tf\t1\t2"]
        {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
