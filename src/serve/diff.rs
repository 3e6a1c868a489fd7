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
//! by the tests below) whenever Myers finishes within its deadline.
//!
//! Bounded: Myers costs O((N+M)·D) and ran without a deadline; a 400 KB file
//! (Claude Code's whole-read limit) rewritten with 66,666 short distinct
//! lines took 61 s, shuffled 104 s (benches/README.md, "Bounds"), and a
//! Codex budget lets serve diff files up to 16 MiB. Now: a diff that cannot
//! be at most `at_most` bytes is not taken at all (`floor`, linear),
//! Myers stops at its deadline ([`MYERS_DEADLINE`], the ranges left are then
//! deleted and inserted whole: still a correct diff, only larger), and the
//! hunks stop being printed once past `at_most`.

use similar::{Algorithm, ChangeTag, DiffOp};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The most time Myers may search for one diff. A one-line change in a
/// 100 KB file takes ~0.02 ms of Myers (callgrind: ~50 k of the diff's
/// 1.56 M instructions); what runs into this bound is a rewrite that would
/// not be clearly smaller anyway (the worst cases in benches/README.md). The rest (splitting, numbering, the bound,
/// printing) is linear in the texts.
pub const MYERS_DEADLINE: Duration = Duration::from_millis(20);

/// Why no diff went out: the file goes whole instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// The lines one text has more often than the other alone print more
    /// than `at_most` bytes: no diff can be smaller, Myers never ran.
    CannotWin,
    /// The diff taken printed more than `at_most` bytes.
    Larger,
}

/// Hunks with `radius` lines of context and no file header, as
/// `similar::TextDiff::from_lines(old, new).unified_diff().context_radius(radius)`
/// prints them (an empty string when nothing changed), when they print in
/// at most `at_most` bytes; Myers searches until `deadline` (`None`: no
/// deadline) and the ranges it has not split by then are replaced whole.
pub fn unified(old: &str, new: &str, radius: usize, at_most: usize, deadline: Option<Instant>) -> Result<String, Skip> {
    let (a, b) = (lines(old), lines(new));
    let (ia, ib, ids) = intern(&a, &b);
    if floor(&a, &b, &ia, &ib, ids, at_most) > at_most {
        return Err(Skip::CannotWin);
    }
    // Myers on line numbers: what `TextDiff` ran on its own numbering (only
    // equality of lines matters to Myers and to the compaction after it, so
    // the operations are the same).
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, &ia, &ib, deadline);
    let mut out = String::new();
    for group in similar::group_diff_ops(ops, radius) {
        if group.is_empty() {
            continue;
        }
        hunk(&mut out, &group, &a, &b, at_most)?;
    }
    Ok(out)
}

/// Numbers compared a block at a time by [`prefix`] and [`suffix`].
const BLOCK: usize = 16;

/// How many numbers `x` and `y` share at the start. Whole blocks compare
/// as slices (a memory compare), not a number at a time: this runs before
/// every diff, on the hot path (a one-line change of a 100 KB file).
fn prefix(x: &[usize], y: &[usize]) -> usize {
    let n = x.len().min(y.len());
    let mut i = 0;
    while i + BLOCK <= n && x[i..i + BLOCK] == y[i..i + BLOCK] {
        i += BLOCK;
    }
    i + x[i..].iter().zip(&y[i..]).take_while(|(p, q)| p == q).count()
}

/// How many numbers `x` and `y` share at the end, as [`prefix`].
fn suffix(x: &[usize], y: &[usize]) -> usize {
    let (n, (lx, ly)) = (x.len().min(y.len()), (x.len(), y.len()));
    let mut i = 0;
    while i + BLOCK <= n && x[lx - i - BLOCK..lx - i] == y[ly - i - BLOCK..ly - i] {
        i += BLOCK;
    }
    i + x[..lx - i].iter().rev().zip(y[..ly - i].iter().rev()).take_while(|(p, q)| p == q).count()
}

/// A lower bound on the bytes any diff of these lines prints, exact enough
/// to be worth it only when the texts differ in most lines; 0 when the
/// changed region alone cannot print more than `at_most`. A diff matches
/// each old line to at most one equal new line, so of a line the new text
/// has k more copies of, k are printed as inserted (and as deleted the
/// other way), each line with its tag. The common prefix and suffix hold
/// the same lines on both sides: counting the region between them counts
/// the same differences.
fn floor(a: &[&str], b: &[&str], ia: &[usize], ib: &[usize], ids: usize, at_most: usize) -> usize {
    let p = prefix(ia, ib);
    let s = suffix(&ia[p..], &ib[p..]);
    let (ra, rb) = (p..a.len() - s, p..b.len() - s);
    let printed = |ls: &[&str]| ls.iter().map(|l| l.len() + 1).sum::<usize>();
    // Every line of the region printed once with its tag: the most the
    // count below can give. Within the bound (a small edit): not counted.
    if printed(&a[ra.clone()]) + printed(&b[rb.clone()]) <= at_most {
        return 0;
    }
    // Old copies minus new copies of each line.
    let mut more = vec![0isize; ids];
    ia[ra.clone()].iter().for_each(|&i| more[i] += 1);
    ib[rb.clone()].iter().for_each(|&i| more[i] -= 1);
    let mut bytes = 0;
    for (&i, l) in ia[ra.clone()].iter().zip(&a[ra]) {
        if more[i] > 0 {
            more[i] -= 1;
            bytes += l.len() + 1;
        }
    }
    for (&i, l) in ib[rb.clone()].iter().zip(&b[rb]) {
        if more[i] < 0 {
            more[i] += 1;
            bytes += l.len() + 1;
        }
    }
    bytes
}

/// One hunk as `similar::udiff::UnifiedDiffHunk` prints a line diff: the
/// header, each line with its tag, and `\ No newline at end of file` after
/// a last line without one.
/// [`Skip::Larger`] as soon as `out` passes `at_most`: a rewrite cut short
/// by the deadline is not printed whole (twice the file) to be thrown away.
fn hunk(out: &mut String, group: &[DiffOp], a: &[&str], b: &[&str], at_most: usize) -> Result<(), Skip> {
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
            if out.len() > at_most {
                return Err(Skip::Larger);
            }
        }
    }
    Ok(())
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
/// sized for both files and hashed with foldhash (seeded per map); with the
/// count of numbers given (they run from 0).
fn intern<'t>(a: &[&'t str], b: &[&'t str]) -> (Vec<usize>, Vec<usize>, usize) {
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
    let ib = number(b);
    (ia, ib, ids.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use similar::DiffableStr;

    /// No bound: the diff Myers finishes, printed whole.
    fn full(old: &str, new: &str, radius: usize) -> String {
        unified(old, new, radius, usize::MAX, None).expect("no bound")
    }

    /// A deadline already passed: Myers takes no step, each range left
    /// after the common prefix and suffix is deleted and inserted whole.
    fn passed() -> Option<Instant> {
        Some(Instant::now().checked_sub(Duration::from_millis(1)).unwrap_or_else(Instant::now))
    }

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
                assert_eq!(full(old, new, radius), reference(old, new, radius), "{old:?} -> {new:?} ({radius})");
            }
        }
        // Over 100 lines `similar` numbers lines before Myers (its other path).
        let big: String = (0..400).map(|i| format!("line {}\n", i % 37)).collect();
        let changed = big.replacen("line 5\n", "five\n", 3).replace("line 36\n", "");
        let d = full(&big, &changed, 1);
        assert_eq!(d, reference(&big, &changed, 1));
        assert_eq!(apply(&big, &d).as_deref(), Some(changed.as_str()));
        // The applier checks what it removes and keeps: not onto another text.
        assert_eq!(apply(&changed, &d), None);
    }

    /// `n` distinct short lines (the most lines a size holds, the most work
    /// for Myers), tagged so two tags share none.
    fn distinct(tag: char, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{tag}{i:04x}\n")).collect()
    }

    /// The largest file a Claude Code read diffs (its whole-read limit), in
    /// lines of 6 bytes: a rewrite with no line in common took 61 s, the
    /// same lines reversed 53 s (release build, before the bound). Now the
    /// first is refused before Myers (the floor: every line printed), the
    /// second searched no further than its deadline. Bounded by
    /// construction: no search at all, or none past a deadline already
    /// passed; not timed.
    #[test]
    fn rewrites_are_refused_without_a_long_search() {
        let limit = crate::hosts::profile::whole_delivery_limit(Some(crate::Host::ClaudeCode), 0) as usize;
        let n = limit / 6;
        let old = distinct('a', n);
        let unrelated = distinct('b', n).concat();
        let (old_text, half) = (old.concat(), unrelated.len() / 2);
        assert_eq!(old_text.len(), unrelated.len());
        assert_eq!(unified(&old_text, &unrelated, 1, half, None), Err(Skip::CannotWin));
        // The floor counts every line of both with its tag: what Myers
        // would have printed but for the headers.
        let (a, b) = (lines(&old_text), lines(&unrelated));
        let (ia, ib, ids) = intern(&a, &b);
        assert_eq!(floor(&a, &b, &ia, &ib, ids, half), old_text.len() + unrelated.len() + 2 * n);
        // Every other line replaced: the replaced half alone is too much.
        let alternate: String =
            (0..n).map(|i| if i % 2 == 1 { format!("b{i:04x}\n") } else { old[i].clone() }).collect();
        assert_eq!(unified(&old_text, &alternate, 1, half, None), Err(Skip::CannotWin));
        // The same lines reversed: nothing for the floor to count (each
        // line on both sides), so Myers runs; past its deadline it deletes
        // and inserts the rest whole: a correct diff, twice the file.
        let reversed: String = old.iter().rev().map(String::as_str).collect();
        assert_eq!(unified(&old_text, &reversed, 1, half, passed()), Err(Skip::Larger));
        let cut = unified(&old_text, &reversed, 1, usize::MAX, passed()).expect("no size bound");
        assert_eq!(cut.matches("\n-").count() + cut.matches("\n+").count(), 2 * n);
        assert_eq!(apply(&old_text, &cut).as_deref(), Some(reversed.as_str()));
        // A one-line change of the same file still goes out as a diff,
        // with or without time left.
        let one: String = (0..n).map(|i| if i == n / 2 { "changed\n".into() } else { old[i].clone() }).collect();
        for deadline in [None, passed()] {
            let d = unified(&old_text, &one, 1, half, deadline).expect("a small diff");
            assert_eq!(d, full(&old_text, &one, 1));
            assert_eq!(apply(&old_text, &d).as_deref(), Some(one.as_str()));
        }
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

        /// Block by block, the same counts as one number at a time, with
        /// common runs across block edges and past the shorter end.
        #[test]
        fn prefix_and_suffix_count_as_one_at_a_time(
            (head, x, y, tail) in (
                prop::collection::vec(0usize..2, 0..40),
                prop::collection::vec(0usize..3, 0..20),
                prop::collection::vec(0usize..3, 0..20),
                prop::collection::vec(0usize..2, 0..40),
            )
        ) {
            let x: Vec<usize> = [&head[..], &x, &tail].concat();
            let y: Vec<usize> = [&head[..], &y, &tail].concat();
            let one = |p: &mut dyn Iterator<Item = (&usize, &usize)>| p.take_while(|(a, b)| a == b).count();
            prop_assert_eq!(prefix(&x, &y), one(&mut x.iter().zip(&y)));
            prop_assert_eq!(suffix(&x, &y), one(&mut x.iter().rev().zip(y.iter().rev())));
        }

        #[test]
        fn lines_split_as_similar_splits_them(s in "[a\r\né\n x]{0,60}") {
            prop_assert_eq!(lines(&s), s.as_str().tokenize_lines());
        }

        /// Byte for byte what the server sent before, for every radius it
        /// might use; and what the model gets applies: the old text with
        /// the diff applied is the new text.
        #[test]
        fn the_diff_is_similars_and_applies((old, new) in edited(), radius in 0usize..4) {
            let d = full(&old, &new, radius);
            prop_assert_eq!(&d, &reference(&old, &new, radius));
            prop_assert_eq!(apply(&old, &d), Some(new.clone()), "{}", d);
            // The bound is exact: the diff at `at_most` = its length, none
            // a byte below; the floor never above what a diff prints
            // (counted even for small edits: `at_most` 0).
            prop_assert_eq!(unified(&old, &new, radius, d.len(), None), Ok(d.clone()));
            if !d.is_empty() {
                prop_assert!(unified(&old, &new, radius, d.len() - 1, None).is_err());
            }
            let (a, b) = (lines(&old), lines(&new));
            let (ia, ib, ids) = intern(&a, &b);
            prop_assert!(floor(&a, &b, &ia, &ib, ids, 0) <= d.len(), "{}", d);
            // Cut short by the deadline: still a diff that applies.
            let cut = unified(&old, &new, radius, usize::MAX, passed()).expect("no size bound");
            prop_assert_eq!(apply(&old, &cut), Some(new.clone()), "{}", cut);
        }
    }
}
