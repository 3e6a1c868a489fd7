//! The unified diff a changed read sends: `similar`'s Myers diff, its hunk
//! grouping and hunk headers, fed lines split and interned here.
//!
//! Why not `TextDiff::from_lines(..).unified_diff()` as before: for a 100 KB
//! file with one line changed it cost ~1.2 ms, ~8.2 M instructions a diff
//! (callgrind), most of it before the diff itself: `similar` splits lines a
//! `char` at a time (55 %) and numbers them in a SipHash map grown from
//! empty (40 %). The same diff through these parts costs ~0.5 M
//! (benches/README.md). Same algorithm, same equality of lines, same
//! grouping: the text is byte for byte what `TextDiff` printed (held to it
//! by the tests below).

use similar::{Algorithm, ChangeTag, DiffOp};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Hunks with `radius` lines of context and no file header, as
/// `similar::TextDiff::from_lines(old, new).unified_diff().context_radius(radius)`
/// prints them (an empty string when nothing changed).
pub fn unified(old: &str, new: &str, radius: usize) -> String {
    let (a, b) = (lines(old), lines(new));
    let (ia, ib) = intern(&a, &b);
    // Myers on line numbers, no deadline: what `TextDiff` ran on its own
    // numbering (only equality of lines matters to Myers and to the
    // compaction after it, so the operations are the same).
    let ops = similar::capture_diff_slices(Algorithm::Myers, &ia, &ib);
    let mut out = String::new();
    for group in similar::group_diff_ops(ops, radius) {
        if group.is_empty() {
            continue;
        }
        hunk(&mut out, &group, &a, &b);
    }
    out
}

/// One hunk as `similar::udiff::UnifiedDiffHunk` prints a line diff: the
/// header, each line with its tag, and `\ No newline at end of file` after
/// a last line without one.
fn hunk(out: &mut String, group: &[DiffOp], a: &[&str], b: &[&str]) {
    let _ = writeln!(out, "{}", similar::udiff::UnifiedHunkHeader::new(group));
    for op in group {
        for change in op.iter_changes(a, b) {
            out.push(match change.tag() {
                ChangeTag::Equal => ' ',
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
            });
            out.push_str(change.value());
            if change.missing_newline() {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
}

/// The text's lines as `similar` splits them (`DiffableStr::tokenize_lines`):
/// each with its end, `\n`, `\r\n` or a lone `\r`; a last line without one
/// kept whole. Line ends found with SSE2 (`base::bytes`), not a `char` at a
/// time.
fn lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 32 + 1);
    let mut at = 0;
    while at < bytes.len() {
        let end = match crate::base::bytes::find2(b'\n', b'\r', &bytes[at..]) {
            Some(i) if bytes[at + i] == b'\r' && bytes.get(at + i + 1) == Some(&b'\n') => at + i + 2,
            Some(i) => at + i + 1,
            None => bytes.len(),
        };
        // Both ends are ASCII: cuts on char boundaries.
        out.push(&text[at..end]);
        at = end;
    }
    out
}

/// Each line numbered by its text (equal lines, equal numbers), in one map
/// sized for both files and hashed with foldhash (seeded per map).
fn intern<'t>(a: &[&'t str], b: &[&'t str]) -> (Vec<usize>, Vec<usize>) {
    let mut ids: HashMap<&'t str, usize, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(a.len().max(b.len()), foldhash::fast::RandomState::default());
    let mut number = |ls: &[&'t str]| -> Vec<usize> {
        ls.iter()
            .map(|l| {
                let next = ids.len();
                *ids.entry(*l).or_insert(next)
            })
            .collect()
    };
    let ia = number(a);
    (ia, number(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use similar::DiffableStr;

    /// What the server sent before: the reference for every text.
    fn reference(old: &str, new: &str, radius: usize) -> String {
        similar::TextDiff::from_lines(old, new).unified_diff().context_radius(radius).to_string()
    }

    /// Apply a diff printed by [`unified`] (any radius) to `old`; `None`
    /// when a context or deleted line does not match `old`.
    fn apply(old: &str, diff: &str) -> Option<String> {
        let src = lines(old);
        let mut out = String::new();
        let mut at = 0;
        // The diff's lines split as the texts' are: a line ending in a lone
        // `\r` is printed with that end alone.
        let mut d = lines(diff).into_iter().peekable();
        while let Some(h) = d.next() {
            let h = h.strip_prefix("@@ -")?;
            let start: usize = h.split([',', ' ']).next()?.parse().ok()?;
            let len: usize = match h.split(' ').next()?.split_once(',') {
                Some((_, n)) => n.parse().ok()?,
                None => 1,
            };
            // An empty range names the line before it.
            let first = if len == 0 { start } else { start - 1 };
            if first < at {
                return None;
            }
            src.get(at..first)?.iter().for_each(|l| out.push_str(l));
            at = first;
            let mut pending: Option<String> = None;
            while let Some(l) = d.next_if(|l| !l.starts_with("@@ -")) {
                if l == "\\ No newline at end of file\n" {
                    // The line before had no end: take back the '\n' printed
                    // after it (a deleted one was not kept).
                    if let Some(p) = pending.as_mut() {
                        p.pop();
                    }
                    continue;
                }
                if let Some(p) = pending.take() {
                    out.push_str(&p);
                }
                let (tag, body) = l.split_at(1);
                match tag {
                    " " | "-" => {
                        let want = src.get(at)?;
                        let unended = !want.ends_with(['\n', '\r']) && body.strip_suffix('\n') == Some(want);
                        if body != *want && !unended {
                            return None;
                        }
                        at += 1;
                        if tag == " " {
                            pending = Some(body.to_string());
                        }
                    }
                    "+" => pending = Some(body.to_string()),
                    _ => return None,
                }
            }
            if let Some(p) = pending.take() {
                out.push_str(&p);
            }
        }
        src.get(at..)?.iter().for_each(|l| out.push_str(l));
        Some(out)
    }

    #[test]
    fn the_same_text_as_similars_unified_diff() {
        let cases = [
            ("", ""),
            ("a\n", "a\n"),
            ("", "a\n"),
            ("a\n", ""),
            ("a\n", "b"),
            ("a", "a\n"),
            ("a\r\nb\rc\n", "a\r\nB\rc\n"),
            ("x\ny\nz", "x\nY\nz"),
            ("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\nthree\n4\n5\n6\nseven\n8\nnine\n"),
            ("é\nü\n", "é\nû\n"),
        ];
        for (old, new) in cases {
            for radius in [0, 1, 3] {
                assert_eq!(unified(old, new, radius), reference(old, new, radius), "{old:?} -> {new:?} ({radius})");
            }
        }
        // Over 100 lines `similar` numbers lines before Myers (its other path).
        let big: String = (0..400).map(|i| format!("line {}\n", i % 37)).collect();
        let changed = big.replacen("line 5\n", "five\n", 3).replace("line 36\n", "");
        let d = unified(&big, &changed, 1);
        assert_eq!(d, reference(&big, &changed, 1));
        assert_eq!(apply(&big, &d).as_deref(), Some(changed.as_str()));
        // The applier checks what it removes and keeps: not onto another text.
        assert_eq!(apply(&changed, &d), None);
    }

    /// Lines from a small alphabet (so lines repeat and Myers has choices),
    /// with every line end `similar` knows and none at the end now and then.
    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "é", "", " x", "a\r", "b\r\n", "c\rd"]), 0..40)
            .prop_map(|ls| {
                let mut s = String::new();
                for (i, l) in ls.iter().enumerate() {
                    s.push_str(l);
                    if i + 1 < ls.len() || i % 3 != 0 {
                        s.push('\n');
                    }
                }
                s
            })
    }

    /// `old` edited: lines replaced, inserted and removed at random places.
    fn edited() -> impl Strategy<Value = (String, String)> {
        (text(), prop::collection::vec((0usize..50, 0u8..3, text()), 0..6)).prop_map(|(old, edits)| {
            let mut ls: Vec<String> = old.split_inclusive('\n').map(str::to_string).collect();
            for (at, what, t) in edits {
                let at = at % (ls.len() + 1);
                match what {
                    0 if at < ls.len() => {
                        ls.remove(at);
                    }
                    1 if at < ls.len() => ls[at] = t,
                    _ => ls.insert(at, t),
                }
            }
            (old, ls.concat())
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn lines_split_as_similar_splits_them(s in "[a\r\né\n x]{0,60}") {
            prop_assert_eq!(lines(&s), s.as_str().tokenize_lines());
        }

        /// Byte for byte what the server sent before, for every radius it
        /// might use; and what the model gets applies: the old text with
        /// the diff applied is the new text.
        #[test]
        fn the_diff_is_similars_and_applies((old, new) in edited(), radius in 0usize..4) {
            let d = unified(&old, &new, radius);
            prop_assert_eq!(&d, &reference(&old, &new, radius));
            prop_assert_eq!(apply(&old, &d), Some(new.clone()), "{}", d);
        }
    }
}
