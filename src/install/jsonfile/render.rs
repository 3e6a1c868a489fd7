//! Writing a [`JsonDoc`] back: untouched nodes copied from the original
//! text, changed containers rebuilt from their pieces, new values laid
//! out in the file's own style.

use super::*;

/// How new text is laid out: taken from the file.
struct Style {
    nl: &'static str,
    /// One level of indentation.
    unit: String,
    /// `"a": 1, "b"` rather than `"a":1,"b"` on one line.
    spaced: bool,
    /// The file spans several lines.
    multiline: bool,
}

impl Style {
    fn detect(text: &str) -> Style {
        let nl = match text.find('\n') {
            Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
            _ => "\n",
        };
        let unit = text
            .lines()
            .skip(1)
            .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
            .find(|w| !w.is_empty())
            .unwrap_or("  ")
            .to_string();
        let spaced = match text.find(':') {
            Some(i) => text[i + 1..].starts_with([' ', '\t']),
            None => true,
        };
        Style { nl, unit, spaced, multiline: text.trim_end().contains('\n') }
    }
}

impl JsonDoc {
    /// Where a byte offset is, for messages.
    pub fn pos(&self, offset: usize) -> Pos {
        pos_of(&self.text, offset)
    }

    /// The file as it is now: the original text with the tree's changes
    /// spliced in.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.text.len() + 256);
        if self.bom {
            out.push(BOM);
        }
        match self.root_span {
            Some(span) => {
                let style = Style::detect(&self.text);
                out.push_str(&self.text[..span.start]);
                let indent = line_indent(&self.text, span.start).to_string();
                let r = Render { text: &self.text, style: &style };
                out.push_str(&r.node(&self.root, &indent, style.multiline));
                out.push_str(&self.text[span.end..]);
            }
            None => {
                // A new (or empty) file: pretty, two spaces, final newline;
                // an empty tree stays empty.
                if matches!(&self.root, Node::Object(o) if o.is_empty()) {
                    out.push_str(&self.text);
                } else {
                    let style = Style { nl: "\n", unit: "  ".into(), spaced: true, multiline: true };
                    out.push_str(&fresh(&self.root.to_value(), &style, "", true));
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// The leading whitespace of the line holding `at`.
fn line_indent(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// A value rendered new, at `indent` (pretty) or on one line.
fn fresh(v: &Value, st: &Style, indent: &str, pretty: bool) -> String {
    let mut out = String::new();
    write_fresh(v, st, indent, pretty, &mut out);
    out
}

fn write_fresh(v: &Value, st: &Style, indent: &str, pretty: bool, out: &mut String) {
    let (open, close, n) = match v {
        Value::Object(m) => ('{', '}', m.len()),
        Value::Array(a) => ('[', ']', a.len()),
        scalar => {
            out.push_str(&scalar.to_string());
            return;
        }
    };
    if n == 0 {
        out.push(open);
        out.push(close);
        return;
    }
    let inner = format!("{indent}{}", st.unit);
    out.push(open);
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
        if pretty {
            out.push_str(st.nl);
            out.push_str(&inner);
        } else if !out.ends_with(open) && st.spaced {
            out.push(' ');
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                sep(out);
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(if pretty || st.spaced { ": " } else { ":" });
                write_fresh(x, st, &inner, pretty, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                sep(out);
                write_fresh(x, st, &inner, pretty, out);
            }
        }
        _ => unreachable!(),
    }
    if pretty {
        out.push_str(st.nl);
        out.push_str(indent);
    }
    out.push(close);
}

/// One piece of a container's original text between its brackets.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Ws(String),
    Comment(String),
    Comma,
    /// The original child with this index.
    Child(usize),
    /// A new child (index into the current children).
    New(usize),
}

impl Piece {
    fn is_elem(&self) -> bool {
        matches!(self, Piece::Child(_) | Piece::New(_))
    }
}

/// Split trivia (whitespace, comments, commas) into pieces.
fn trivia(s: &str, out: &mut Vec<Piece>) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        match b[i] {
            b',' => {
                out.push(Piece::Comma);
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
                    i += 1;
                }
                out.push(Piece::Ws(s[start..i].to_string()));
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = s[i + 2..].find("*/").map_or(b.len(), |j| i + 2 + j + 2);
            }
            _ => {
                // A line comment (the parser allows nothing else here).
                i = s[i..].find('\n').map_or(b.len(), |j| i + j);
                if i > 0 && b[i - 1] == b'\r' && i - 1 > start {
                    i -= 1;
                }
            }
        }
        out.push(Piece::Comment(s[start..i].to_string()));
    }
}

struct Render<'a> {
    text: &'a str,
    style: &'a Style,
}

/// A current child of a container: where it came from (an index into the
/// original children) and its text now.
struct Kid {
    orig: Option<usize>,
    text: String,
}

impl Render<'_> {
    /// The text of a node that sits at `indent` in a `pretty` context.
    fn node(&self, n: &Node, indent: &str, pretty: bool) -> String {
        match n {
            Node::Scalar(_, Some(s)) => self.text[s.start..s.end].to_string(),
            Node::Object(Obj { props, orig: Some(o) }) => {
                let ctx = self.ctx(o);
                let kids = props
                    .iter()
                    .map(|p| match p.span {
                        Some((ps, vs)) => {
                            let k = o.children.iter().position(|c| *c == ps);
                            let mut t = self.text[ps.start..vs.start].to_string();
                            t.push_str(&self.node(&p.value, &ctx.inner, ctx.pretty));
                            t.push_str(&self.text[vs.end..ps.end]);
                            Kid { orig: k, text: t }
                        }
                        None => {
                            let mut t = Value::String(p.key.clone()).to_string();
                            t.push_str(if ctx.pretty || self.style.spaced { ": " } else { ":" });
                            t.push_str(&fresh(&p.value.to_value(), self.style, &ctx.inner, ctx.pretty));
                            Kid { orig: None, text: t }
                        }
                    })
                    .collect();
                self.container(o, kids, &ctx)
            }
            Node::Array(Arr { items, orig: Some(o) }) => {
                let ctx = self.ctx(o);
                let kids = items
                    .iter()
                    .map(|x| match x.span() {
                        Some(s) if o.children.contains(&s) => Kid {
                            orig: o.children.iter().position(|c| *c == s),
                            text: self.node(x, &ctx.inner, ctx.pretty),
                        },
                        _ => Kid { orig: None, text: fresh(&x.to_value(), self.style, &ctx.inner, ctx.pretty) },
                    })
                    .collect();
                self.container(o, kids, &ctx)
            }
            n => fresh(&n.to_value(), self.style, indent, pretty),
        }
    }

    fn ctx(&self, o: &Orig) -> Ctx {
        let own = &self.text[o.span.start..o.span.end];
        let pretty = if o.children.is_empty() { self.style.multiline } else { own.contains('\n') };
        let outer = line_indent(self.text, o.span.start).to_string();
        let inner = match o.children.first() {
            Some(c) if self.text[..c.start].trim_end_matches([' ', '\t']).ends_with('\n') => {
                line_indent(self.text, c.start).to_string()
            }
            _ => format!("{outer}{}", self.style.unit),
        };
        let spaced = match own.find(',') {
            Some(i) if !o.children.is_empty() => own[i + 1..].starts_with([' ', '\t']),
            _ => self.style.spaced,
        };
        Ctx { pretty, inner, outer, spaced }
    }

    /// Rebuild a container from its original pieces and its current children.
    fn container(&self, o: &Orig, kids: Vec<Kid>, ctx: &Ctx) -> String {
        let t = self.text;
        let (open, close) = (o.span.start, o.span.end - 1);
        // Unchanged: the original bytes.
        if kids.len() == o.children.len()
            && kids.iter().enumerate().all(|(i, k)| {
                k.orig == Some(i) && {
                    let c = o.children[i];
                    k.text == t[c.start..c.end]
                }
            })
        {
            return t[o.span.start..o.span.end].to_string();
        }
        let mut pieces = Vec::new();
        let mut at = open + 1;
        for (i, c) in o.children.iter().enumerate() {
            trivia(&t[at..c.start], &mut pieces);
            pieces.push(Piece::Child(i));
            at = c.end;
        }
        trivia(&t[at..close], &mut pieces);

        for i in 0..o.children.len() {
            if !kids.iter().any(|k| k.orig == Some(i)) {
                remove(&mut pieces, Piece::Child(i));
            }
        }
        let sep = if ctx.pretty {
            format!("{}{}", self.style.nl, ctx.inner)
        } else if ctx.spaced {
            " ".into()
        } else {
            String::new()
        };
        let mut anchor: Option<Piece> = None;
        for (j, k) in kids.iter().enumerate() {
            match k.orig {
                Some(i) => anchor = Some(Piece::Child(i)),
                None => {
                    insert(&mut pieces, anchor.as_ref(), Piece::New(j), &sep, ctx, self.style.nl);
                    anchor = Some(Piece::New(j));
                }
            }
        }

        let mut out = String::with_capacity(o.span.end - o.span.start + 256);
        out.push_str(&t[open..open + 1]);
        for p in &pieces {
            match p {
                Piece::Ws(s) | Piece::Comment(s) => out.push_str(s),
                Piece::Comma => out.push(','),
                Piece::Child(i) => {
                    out.push_str(&kids.iter().find(|k| k.orig == Some(*i)).expect("kept").text);
                }
                Piece::New(j) => out.push_str(&kids[*j].text),
            }
        }
        out.push_str(&t[close..close + 1]);
        out
    }
}

struct Ctx {
    pretty: bool,
    inner: String,
    outer: String,
    spaced: bool,
}

/// Take an element out with one separator: the comma before it and the
/// whitespace just before it (or, for the first element, the comma after it
/// and the whitespace just after that). An emptied container keeps its
/// comments but no whitespace-only filling.
fn remove(pieces: &mut Vec<Piece>, which: Piece) {
    let Some(i) = pieces.iter().position(|p| *p == which) else { return };
    let prev = pieces[..i].iter().rposition(Piece::is_elem);
    let next = pieces[i + 1..].iter().position(Piece::is_elem).map(|j| i + 1 + j);
    match (prev, next) {
        (Some(p), _) => {
            // [p] … , … [ws] [i]
            let mut end = i + 1;
            let mut start = i;
            if start > 0 && matches!(pieces[start - 1], Piece::Ws(_)) {
                start -= 1;
            }
            pieces.drain(start..end);
            end = start;
            if let Some(c) = pieces[p + 1..end].iter().rposition(|x| *x == Piece::Comma) {
                pieces.remove(p + 1 + c);
            }
        }
        (None, Some(n)) => {
            // [i] , [ws] … [n]
            let mut end = i + 1;
            if let Some(c) = pieces[i + 1..n].iter().position(|x| *x == Piece::Comma) {
                end = i + 1 + c + 1;
                if matches!(pieces.get(end), Some(Piece::Ws(_))) {
                    end += 1;
                }
            }
            pieces.drain(i..end);
        }
        (None, None) => {
            let mut start = i;
            if start > 0 && matches!(pieces[start - 1], Piece::Ws(_)) {
                start -= 1;
            }
            pieces.drain(start..i + 1);
            if pieces.iter().all(|p| matches!(p, Piece::Ws(_))) {
                pieces.clear();
            }
        }
    }
    merge_ws(pieces);
}

fn merge_ws(pieces: &mut Vec<Piece>) {
    let mut i = 1;
    while i < pieces.len() {
        if let (Piece::Ws(a), Piece::Ws(b)) = (&pieces[i - 1], &pieces[i]) {
            let joined = format!("{a}{b}");
            pieces[i - 1] = Piece::Ws(joined);
            pieces.remove(i);
        } else {
            i += 1;
        }
    }
}

/// Put a new element after `anchor` (an element), or first when `None`,
/// with the separators it needs; the exact inverse of [`remove`].
fn insert(pieces: &mut Vec<Piece>, anchor: Option<&Piece>, new: Piece, sep: &str, ctx: &Ctx, nl: &str) {
    // Comments only, or nothing: the new element goes before the
    // whitespace that closes the container (see the match below).
    let a = anchor.and_then(|a| pieces.iter().position(|p| p == a));
    match a {
        Some(i) => {
            let next = pieces[i + 1..].iter().position(Piece::is_elem).map(|j| i + 1 + j);
            if next.is_some() {
                // A, X ,B: comma right after A, then the separator and X.
                pieces.splice(i + 1..i + 1, [Piece::Comma, Piece::Ws(sep.into()), new]);
            } else {
                // Last: comma after A; X before the whitespace that closes
                // the container (so a comment after A stays on A's line).
                let tail = match pieces.last() {
                    Some(Piece::Ws(_)) if pieces.len() - 1 > i => pieces.len() - 1,
                    _ => pieces.len(),
                };
                pieces.splice(tail..tail, [Piece::Ws(sep.into()), new]);
                pieces.insert(i + 1, Piece::Comma);
            }
        }
        None => match pieces.iter().position(Piece::is_elem) {
            Some(n) => {
                pieces.splice(n..n, [new, Piece::Comma, Piece::Ws(sep.into())]);
            }
            None if pieces.iter().all(|p| matches!(p, Piece::Ws(_))) => {
                pieces.clear();
                if ctx.pretty {
                    pieces.extend([Piece::Ws(sep.into()), new, Piece::Ws(format!("{nl}{}", ctx.outer))]);
                } else {
                    pieces.push(new);
                }
            }
            None => {
                let tail = match pieces.last() {
                    Some(Piece::Ws(_)) => pieces.len() - 1,
                    _ => pieces.len(),
                };
                pieces.splice(tail..tail, [Piece::Ws(sep.into()), new]);
            }
        },
    }
    merge_ws(pieces);
}
