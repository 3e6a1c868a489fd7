//! The log's line format (pure): one answered question a line,
//! tab-separated, `-` for absent, names percent-encoded so no tab, newline
//! or `%` in a path can break a line (a name that is `-` alone is `%2D`, the
//! empty name `%00`, a name that is one NUL `%0`: each name its own field):
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

/// Append `o`'s line (with its newline) to `out`. Pushed piece by piece,
/// numbers through `itoa`: `write!` and a `char`-at-a-time copy of the
/// names were ~2,000 instructions of a record's ~3,000 (callgrind,
/// benches/README.md).
pub fn write(out: &mut String, t: u64, o: &Outcome<'_>) {
    let mut n = itoa::Buffer::new();
    out.push_str("R\t");
    out.push_str(n.format(t));
    for s in ["\t", o.via.as_str(), "\t", o.host.map_or("-", Host::as_str), "\t"] {
        out.push_str(s);
    }
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
    for s in ["\t", o.kind.as_str(), "\t", reason, "\t"] {
        out.push_str(s);
    }
    encode(out, tail(o.file));
    out.push('\t');
    match o.sent {
        Some(s) => out.push_str(n.format(s)),
        None => out.push('-'),
    }
    out.push('\t');
    out.push_str(n.format(o.whole));
    out.push('\n');
}

fn is_code(r: &str) -> bool {
    (1..=40).contains(&r.len()) && r != "-" && r.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
}

/// The last [`MAX_FILE_CHARS`] characters of a name, marked when cut.
fn tail(s: &str) -> &str {
    // No more bytes than that: no more characters either.
    if s.len() <= MAX_FILE_CHARS {
        return s;
    }
    match s.char_indices().rev().nth(MAX_FILE_CHARS - 1) {
        Some((i, _)) if i > 0 => &s[i..],
        _ => s,
    }
}

/// The empty name's field: it has no bytes to write. Logs on users' disks
/// since the format's first version have it so.
const EMPTY: &str = "%00";
/// The field of a name that is one NUL, which percent-encodes as [`EMPTY`]:
/// until session 10 it was written so, and read back as the empty name (two
/// names, one field; reports merged them). A short escape that no other
/// name is written as and the general decoder refuses (a `%` takes two hex
/// digits): older logs read as before (their `%00` the empty name, the
/// only reading they allow), an older binary counts a line with `%0` as
/// unreadable instead of misnaming it.
const LONE_NUL: &str = "%0";

fn encode(out: &mut String, s: &str) {
    // Whole-field tokens: `-` alone means "absent", and the two above.
    match s {
        "" => return out.push_str(EMPTY),
        "\0" => return out.push_str(LONE_NUL),
        "-" => return out.push_str("%2D"),
        _ => {}
    }
    // Printable ASCII but `%` (nearly every path and id) is written as it
    // is: copied whole, not a character at a time.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'%') {
        return out.push_str(s);
    }
    encode_each(out, s);
}

fn encode_each(out: &mut String, s: &str) {
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
    match s {
        EMPTY => return Some(String::new()),
        LONE_NUL => return Some("\0".into()),
        _ => {}
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

    /// 2,000 names of 1 to 7 characters from an alphabet of the characters
    /// each path treats apart (printable, `%`, `-`, controls, NUL).
    fn generated() -> impl Iterator<Item = String> {
        let alphabet: Vec<char> = "a/-%~ é\u{7f}\u{80}\u{9f}\u{a0}\t\n\r\u{0}\u{1f}".chars().collect();
        (0..2000u32).map(move |i| {
            let mut x = i.wrapping_mul(2_654_435_761);
            (0..1 + i % 7)
                .map(|_| {
                    x = x.rotate_left(5) ^ 0x9e37_79b9;
                    alphabet[x as usize % alphabet.len()]
                })
                .collect::<String>()
        })
    }

    /// The whole-copy path writes what the character-at-a-time one does.
    #[test]
    fn names_are_encoded_alike_on_both_paths() {
        let names = ["src/main.rs", "a b~!", "%", "a%b", "\u{7f}x", "\u{85}", "é/ü", "\t", "-x", " ", "", "\0"];
        for name in names.into_iter().map(String::from).chain(generated()) {
            let (mut fast, mut each) = (String::new(), String::new());
            encode(&mut fast, &name);
            if !matches!(name.as_str(), "" | "-" | "\0") {
                encode_each(&mut each, &name);
                assert_eq!(fast, each, "{name:?}");
            }
            assert_eq!(decode(&fast).as_deref(), Some(name.as_str()), "{name:?}");
        }
    }

    /// Two names, two fields: the empty name and a lone NUL were both
    /// written `%00` (and read back as the empty name). Every name read
    /// back as itself, through a whole line too; an older log's `%00` is
    /// still the empty name.
    #[test]
    fn every_name_has_its_own_field() {
        let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        let names = ["", "\0", "%00", "%0", "%", "-", "%2D", "\0\0", "a\0"].map(String::from);
        let all: Vec<String> = names.into_iter().chain(generated()).collect();
        for name in &all {
            let mut field = String::new();
            encode(&mut field, name);
            assert_eq!(decode(&field).as_deref(), Some(name.as_str()), "{name:?} as {field:?}");
            if let Some(other) = seen.insert(field.clone(), name.clone()) {
                assert_eq!(&other, name, "{other:?} and {name:?} are both written {field:?}");
            }
            let s = line(Kind::Whole, Box::leak(name.clone().into_boxed_str()), None);
            assert_eq!(parse(s.trim_end_matches('\n')).map(|l| l.file).as_deref(), Some(name.as_str()), "{s:?}");
        }
        // As many fields as different names (the generated ones repeat).
        assert_eq!(seen.len(), all.iter().collect::<std::collections::HashSet<_>>().len());
        let old = "R\t42\tserve\tcodex\t019a-b\twhole\t-\t%00\t-\t1000";
        assert_eq!(parse(old).map(|l| l.file).as_deref(), Some(""));
    }

    #[test]
    fn long_names_keep_their_tail() {
        let long = format!("{}/end.rs", "d".repeat(5000));
        let s = line(Kind::Whole, Box::leak(long.into_boxed_str()), None);
        let l = parse(s.trim_end()).unwrap();
        assert_eq!(l.file.chars().count(), MAX_FILE_CHARS);
        assert!(l.file.ends_with("/end.rs"));
        // At the bound and one over, in characters of two bytes.
        for (chars, kept) in [(MAX_FILE_CHARS, MAX_FILE_CHARS), (MAX_FILE_CHARS + 1, MAX_FILE_CHARS)] {
            let name: String = "é".repeat(chars);
            assert_eq!(tail(&name).chars().count(), kept, "{chars}");
        }
        assert_eq!(tail(&"d".repeat(MAX_FILE_CHARS)).len(), MAX_FILE_CHARS);
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
