//! Which lines of a file one `read` answers, and how they are shown: pure
//! (no files, no ledger), so the table below pins every edge.

use serde_json::Value;

/// Room kept for a range's header and footer lines within the limit.
const FRAME_BYTES: usize = 256;

/// The arguments of `read`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadArgs {
    pub path: String,
    /// First line, 1-based.
    pub offset: Option<usize>,
    /// How many lines.
    pub limit: Option<usize>,
}

/// Read `read`'s arguments; a bad one is named.
pub fn parse_args(v: &Value) -> Result<ReadArgs, String> {
    let Some(o) = v.as_object() else { return Err("arguments: expected an object with \"path\"".into()) };
    let path = match o.get("path") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) => return Err("path: empty".into()),
        Some(_) => return Err("path: expected a string".into()),
        None => return Err("path: missing".into()),
    };
    let line_no = |name: &str| -> Result<Option<usize>, String> {
        match o.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(n) => match n.as_u64() {
                Some(k) if k >= 1 => Ok(Some(usize::try_from(k).unwrap_or(usize::MAX))),
                _ => Err(format!("{name}: expected a whole number, at least 1 (got {n})")),
            },
        }
    };
    let (offset, limit) = (line_no("offset")?, line_no("limit")?);
    if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "path" | "offset" | "limit")) {
        return Err(format!("{k}: unknown argument (read takes path, offset, limit)"));
    }
    Ok(ReadArgs { path, offset, limit })
}

/// The lines one answer covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// First and last line, 1-based, inclusive (0, 0 for an empty file).
    pub first: usize,
    pub last: usize,
    pub total: usize,
    /// The whole file: its text is the file's, byte for byte.
    pub whole: bool,
    /// Byte range of the lines in the file's text.
    pub bytes: (usize, usize),
}

/// The lines asked for, cut to at most `cap` bytes of text (at least one
/// line, however long: a line is never cut).
pub fn page(text: &str, offset: Option<usize>, limit: Option<usize>, cap: usize) -> Result<Page, String> {
    // Line start offsets; a last line without its newline is a line.
    let mut starts = vec![0usize];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1).filter(|&i| i < text.len()));
    let total = if text.is_empty() { 0 } else { starts.len() };
    let first = offset.unwrap_or(1);
    if total == 0 {
        return match first {
            1 => Ok(Page { first: 0, last: 0, total, whole: true, bytes: (0, 0) }),
            _ => Err(format!("offset: {first} is past the end (the file is empty)")),
        };
    }
    if first > total {
        return Err(format!("offset: {first} is past the end ({total} lines)"));
    }
    let end_of = |line: usize| if line >= total { text.len() } else { starts[line] };
    let mut last = limit.map_or(total, |l| first.saturating_add(l - 1).min(total));
    let begin = starts[first - 1];
    if end_of(last) - begin > cap {
        let room = cap.saturating_sub(FRAME_BYTES);
        // The last line that still fits; never fewer than one.
        let fits = starts[first..].partition_point(|&s| s - begin <= room);
        last = (first - 1 + fits).max(first).min(last);
    }
    let whole = first == 1 && last == total;
    Ok(Page { first, last, total, whole, bytes: (begin, end_of(last)) })
}

/// The text of one answer: the file itself when whole; otherwise the lines
/// between a header naming them and, when more follow, how to get them.
pub fn render(shown: &str, text: &str, p: &Page) -> String {
    let body = &text[p.bytes.0..p.bytes.1];
    if p.whole {
        return body.to_string();
    }
    let mut s = format!("[{shown}: lines {}-{} of {}]\n{body}", p.first, p.last, p.total);
    if !body.ends_with('\n') {
        s.push('\n');
    }
    if p.last < p.total {
        s.push_str(&format!("[{} more lines: read with offset={}]\n", p.total - p.last, p.last + 1));
    }
    s
}

/// The pieces (first and last line, inclusive) that together hold every
/// line of `want`, as indices into `pieces`; `None` when some line lies in
/// none. Greedy: from each line not yet held, the piece that starts at or
/// before it and reaches furthest.
pub fn cover(want: (usize, usize), pieces: &[(usize, usize)]) -> Option<Vec<usize>> {
    let mut chosen = Vec::new();
    let mut next = want.0;
    while next <= want.1 {
        let (i, &(_, last)) =
            pieces.iter().enumerate().filter(|(_, (f, l))| *f <= next && *l >= next).max_by_key(|(_, (_, l))| *l)?;
        chosen.push(i);
        if last >= want.1 {
            break;
        }
        next = last + 1;
    }
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn args_name_the_bad_field() {
        assert_eq!(
            parse_args(&json!({"path": "a", "offset": 2, "limit": 3})),
            Ok(ReadArgs { path: "a".into(), offset: Some(2), limit: Some(3) })
        );
        assert_eq!(parse_args(&json!({"path": "a", "offset": null})).unwrap().offset, None);
        for (v, field) in [
            (json!(null), "arguments"),
            (json!({}), "path"),
            (json!({"path": ""}), "path"),
            (json!({"path": 3}), "path"),
            (json!({"path": "a", "offset": 0}), "offset"),
            (json!({"path": "a", "offset": -1}), "offset"),
            (json!({"path": "a", "offset": 1.5}), "offset"),
            (json!({"path": "a", "limit": "3"}), "limit"),
            (json!({"path": "a", "lines": 3}), "lines"),
        ] {
            let e = parse_args(&v).unwrap_err();
            assert!(e.starts_with(&format!("{field}:")), "{v}: {e}");
        }
    }

    #[test]
    fn pages() {
        let t = "a\nbb\nccc\n";
        let p = |o, l, cap| page(t, o, l, cap).map(|p| (p.first, p.last, p.total, p.whole, &t[p.bytes.0..p.bytes.1]));
        assert_eq!(p(None, None, 100), Ok((1, 3, 3, true, t)));
        assert_eq!(p(Some(2), None, 100), Ok((2, 3, 3, false, "bb\nccc\n")));
        assert_eq!(p(Some(2), Some(1), 100), Ok((2, 2, 3, false, "bb\n")));
        assert_eq!(p(Some(1), Some(99), 100), Ok((1, 3, 3, true, t)));
        assert_eq!(p(Some(3), Some(usize::MAX), 100), Ok((3, 3, 3, false, "ccc\n")));
        assert!(p(Some(4), None, 100).unwrap_err().starts_with("offset:"));
        // No trailing newline: the last line still counts.
        assert_eq!(page("a\nb", None, None, 100).unwrap().total, 2);
        assert_eq!(
            page("", None, None, 100).unwrap(),
            Page { first: 0, last: 0, total: 0, whole: true, bytes: (0, 0) }
        );
        assert!(page("", Some(2), None, 100).is_err());
        // Over the cap: cut at a line end with room for the frame; one line at least.
        let big: String = (0..100).map(|i| format!("line {i:04}\n")).collect();
        let q = page(&big, None, None, FRAME_BYTES + 30).unwrap();
        assert_eq!((q.first, q.last, q.whole), (1, 3, false));
        assert!(q.bytes.1 - q.bytes.0 <= 30);
        let q = page(&big, Some(99), None, FRAME_BYTES + 30).unwrap();
        assert_eq!((q.first, q.last), (99, 100));
        let q = page(&big, None, None, 3).unwrap();
        assert_eq!((q.first, q.last), (1, 1));
        // Exactly at the cap: whole.
        assert!(page(&big, None, None, big.len()).unwrap().whole);
        assert!(!page(&big, None, None, big.len() - 1).unwrap().whole);
    }

    #[test]
    fn covering() {
        type Row = ((usize, usize), Vec<(usize, usize)>, Option<Vec<usize>>);
        let c = |want, pieces: &[(usize, usize)]| cover(want, pieces);
        #[rustfmt::skip]
        let rows: Vec<Row> = vec![
            ((1, 10), vec![(1, 10)], Some(vec![0])),
            ((3, 5), vec![(1, 10)], Some(vec![0])),
            // Two pieces meeting, overlapping, or out of order.
            ((1, 10), vec![(1, 5), (6, 10)], Some(vec![0, 1])),
            ((1, 10), vec![(6, 10), (1, 5)], Some(vec![1, 0])),
            ((2, 9), vec![(1, 6), (4, 12)], Some(vec![0, 1])),
            // The piece that reaches furthest, not the first found.
            ((1, 10), vec![(1, 3), (1, 8), (2, 4), (8, 10)], Some(vec![1, 3])),
            // A gap, a short end, a late start, nothing.
            ((1, 10), vec![(1, 5), (7, 10)], None),
            ((1, 10), vec![(1, 9)], None),
            ((1, 10), vec![(2, 10)], None),
            ((1, 1), vec![], None),
            ((5, 5), vec![(5, 5)], Some(vec![0])),
            ((1, usize::MAX), vec![(1, usize::MAX)], Some(vec![0])),
        ];
        for (want, pieces, got) in rows {
            assert_eq!(c(want, &pieces), got, "{want:?} {pieces:?}");
        }
    }

    #[test]
    fn rendering() {
        let t = "a\nbb\nccc";
        let whole = page(t, None, None, 100).unwrap();
        assert_eq!(render("f", t, &whole), t);
        assert_eq!(
            render("f", t, &page(t, Some(1), Some(1), 100).unwrap()),
            "[f: lines 1-1 of 3]\na\n[2 more lines: read with offset=2]\n"
        );
        assert_eq!(render("f", t, &page(t, Some(3), None, 100).unwrap()), "[f: lines 3-3 of 3]\nccc\n");
    }
}
