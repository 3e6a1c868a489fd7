//! Reading and editing a host's JSON config without losing a byte.
//!
//! The file is parsed by `jsonc-parser` into an AST that knows the byte
//! range of every value, property and comment. [`Node`] is that tree in a
//! mutable form: each node that came from the file keeps its range, each one
//! leanctx adds has none. [`JsonDoc::render`] then writes the file back by
//! splicing: an untouched node is copied from the original text, a container
//! whose children changed is rebuilt from its original pieces (whitespace,
//! comments, commas, children) with only the removed children and their
//! separators cut out and the new ones put in. So an install changes only
//! the bytes of our entries (plus the comma and line break a list needs), and
//! an uninstall cuts exactly those bytes out again: install then uninstall
//! gives the original file back, whatever its indentation, line endings,
//! byte-order mark or comments.
//!
//! Strict where it matters: duplicate keys are refused (the host would see
//! only one of them), so is anything serde_json would not read (the hosts
//! that read these files use strict JSON parsers), and comments are refused
//! unless the caller says the host accepts them.

use jsonc_parser::ast;
use jsonc_parser::common::Ranged;
use serde_json::{Map, Value};

/// Where something is in a file: 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// Why a config cannot be edited, and where.
#[derive(Debug, PartialEq, Eq)]
pub struct ParseError {
    pub pos: Pos,
    pub msg: String,
}

/// A byte range of the original text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl From<jsonc_parser::common::Range> for Span {
    fn from(r: jsonc_parser::common::Range) -> Span {
        Span { start: r.start, end: r.end }
    }
}

/// A JSON value that remembers where it came from.
#[derive(Clone, Debug)]
pub enum Node {
    Object(Obj),
    Array(Arr),
    Scalar(Value, Option<Span>),
}

/// An object: its properties in order, and (when it came from the file)
/// its range and the ranges of the properties it had.
#[derive(Clone, Debug, Default)]
pub struct Obj {
    props: Vec<Prop>,
    orig: Option<Orig>,
}

#[derive(Clone, Debug)]
struct Prop {
    key: String,
    value: Node,
    /// The whole property (key to value) and the value as first read.
    span: Option<(Span, Span)>,
}

/// An array: its items in order, and where it came from.
#[derive(Clone, Debug, Default)]
pub struct Arr {
    pub items: Vec<Node>,
    orig: Option<Orig>,
}

#[derive(Clone, Debug)]
struct Orig {
    span: Span,
    /// The children's ranges as read (property ranges for an object).
    children: Vec<Span>,
}

impl Node {
    /// A new node (it has no place in the file yet).
    pub fn from_value(v: &Value) -> Node {
        match v {
            Value::Object(m) => Node::Object(Obj {
                props: m.iter().map(|(k, v)| Prop { key: k.clone(), value: Node::from_value(v), span: None }).collect(),
                orig: None,
            }),
            Value::Array(a) => Node::Array(Arr { items: a.iter().map(Node::from_value).collect(), orig: None }),
            v => Node::Scalar(v.clone(), None),
        }
    }

    /// A scalar read from another file format, `at` (a byte offset there,
    /// or any number unique among its siblings) being its identity.
    pub fn scalar_at(v: Value, at: usize) -> Node {
        Node::Scalar(v, Some(Span { start: at, end: at + 1 }))
    }

    /// An object read from another format (see [`Node::scalar_at`]).
    pub fn object_at(props: Vec<(String, Node)>, at: usize) -> Node {
        let span = Span { start: at, end: at + 1 };
        let props: Vec<Prop> = props
            .into_iter()
            .map(|(key, value)| {
                let s = value.span().unwrap_or(span);
                Prop { key, value, span: Some((s, s)) }
            })
            .collect();
        let children = props.iter().filter_map(|p| p.span.map(|s| s.0)).collect();
        Node::Object(Obj { props, orig: Some(Orig { span, children }) })
    }

    /// An array read from another format (see [`Node::scalar_at`]).
    pub fn array_at(items: Vec<Node>, at: usize) -> Node {
        let span = Span { start: at, end: at + 1 };
        let children = items.iter().filter_map(Node::span).collect();
        Node::Array(Arr { items, orig: Some(Orig { span, children }) })
    }

    /// The identity of a node that was read (its offset), `None` for a new one.
    pub fn origin(&self) -> Option<usize> {
        self.span().map(|s| s.start)
    }

    /// Make this node equal `v`, keeping what it has: an object keeps its
    /// properties (and their places) that `v` has and gets the others at
    /// the end, an array of the same length is assigned item by item, an
    /// equal scalar stays. So an upgraded entry changes only the bytes of
    /// the values that differ.
    pub fn assign(&mut self, v: &Value) {
        match (&mut *self, v) {
            (Node::Object(o), Value::Object(m)) => {
                o.props.retain(|p| m.contains_key(&p.key));
                for (k, x) in m {
                    match o.get_mut(k) {
                        Some(n) => n.assign(x),
                        None => o.props.push(Prop { key: k.clone(), value: Node::from_value(x), span: None }),
                    }
                }
                // The new order must be v's for keys it adds; keys already
                // there keep theirs (the merge never reorders).
            }
            (Node::Array(a), Value::Array(xs)) if a.items.len() == xs.len() => {
                for (n, x) in a.items.iter_mut().zip(xs) {
                    n.assign(x);
                }
            }
            (n, v) if *n == *v => {}
            (n, v) => *n = Node::from_value(v),
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            Node::Object(o) => {
                Value::Object(o.props.iter().map(|p| (p.key.clone(), p.value.to_value())).collect::<Map<_, _>>())
            }
            Node::Array(a) => Value::Array(a.items.iter().map(Node::to_value).collect()),
            Node::Scalar(v, _) => v.clone(),
        }
    }

    /// Byte offset of the node in the original text (0 for a new node).
    pub fn at(&self) -> usize {
        self.span().map_or(0, |s| s.start)
    }

    fn span(&self) -> Option<Span> {
        match self {
            Node::Object(o) => o.orig.as_ref().map(|o| o.span),
            Node::Array(a) => a.orig.as_ref().map(|o| o.span),
            Node::Scalar(_, s) => *s,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Node::Object(_) => "an object",
            Node::Array(_) => "an array",
            Node::Scalar(Value::Null, _) => "null",
            Node::Scalar(Value::Bool(_), _) => "a boolean",
            Node::Scalar(Value::Number(_), _) => "a number",
            Node::Scalar(Value::String(_), _) => "a string",
            Node::Scalar(..) => "a value",
        }
    }

    pub fn as_obj(&self) -> Option<&Obj> {
        if let Node::Object(o) = self { Some(o) } else { None }
    }
    pub fn as_obj_mut(&mut self) -> Option<&mut Obj> {
        if let Node::Object(o) = self { Some(o) } else { None }
    }
    pub fn as_arr(&self) -> Option<&Vec<Node>> {
        if let Node::Array(a) = self { Some(&a.items) } else { None }
    }
    pub fn as_arr_mut(&mut self) -> Option<&mut Vec<Node>> {
        if let Node::Array(a) = self { Some(&mut a.items) } else { None }
    }
    pub fn as_str(&self) -> Option<&str> {
        if let Node::Scalar(Value::String(s), _) = self { Some(s) } else { None }
    }
    pub fn is_array(&self) -> bool {
        matches!(self, Node::Array(_))
    }
    /// A property of an object.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_obj()?.get(key)
    }
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.as_obj_mut()?.get_mut(key)
    }
}

impl PartialEq<Value> for Node {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl Obj {
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.props.iter().find(|p| p.key == key).map(|p| &p.value)
    }
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.props.iter_mut().find(|p| p.key == key).map(|p| &mut p.value)
    }
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.props.iter().map(|p| p.key.as_str())
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.props.iter().map(|p| (p.key.as_str(), &p.value))
    }
    pub fn is_empty(&self) -> bool {
        self.props.is_empty()
    }
    /// Set `key`: an existing property keeps its place, a new one goes last.
    pub fn insert(&mut self, key: &str, value: Node) {
        match self.get_mut(key) {
            Some(v) => *v = value,
            None => self.props.push(Prop { key: key.to_string(), value, span: None }),
        }
    }
    /// Add a new property at `index`.
    pub fn insert_at(&mut self, index: usize, key: &str, value: Node) {
        self.remove(key);
        let index = index.min(self.props.len());
        self.props.insert(index, Prop { key: key.to_string(), value, span: None });
    }
    pub fn remove(&mut self, key: &str) -> Option<Node> {
        let i = self.props.iter().position(|p| p.key == key)?;
        Some(self.props.remove(i).value)
    }
}

/// A parsed config: the text as read (less a byte-order mark) and its tree.
#[derive(Clone, Debug)]
pub struct JsonDoc {
    text: String,
    bom: bool,
    /// `None`: an empty (or all-whitespace) file, read as `{}`.
    root_span: Option<Span>,
    pub root: Node,
}

const BOM: char = '\u{feff}';

/// Parse a config. Empty (or all-whitespace) text reads as `{}`.
/// `comments`: whether the host reads JSONC (else a comment is refused).
pub fn parse(text: &str, comments: bool) -> Result<JsonDoc, ParseError> {
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if body.trim().is_empty() {
        return Ok(JsonDoc { text: body.to_string(), bom, root_span: None, root: Node::Object(Obj::default()) });
    }
    let opts = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let collect =
        jsonc_parser::CollectOptions { comments: jsonc_parser::CommentCollectionStrategy::Separate, tokens: false };
    let parsed = jsonc_parser::parse_to_ast(body, &collect, &opts).map_err(|e| {
        // For plain JSON serde_json's message and position are the ones
        // users know (the end of the file for an unclosed object).
        match (comments, serde_strict(body)) {
            (false, Err(e)) => e,
            _ => ParseError { pos: pos_of(body, e.range().start), msg: format!("not valid JSON: {}", e.kind()) },
        }
    })?;
    let first_comment =
        parsed.comments.iter().flat_map(|m| m.values()).flat_map(|v| v.iter()).map(|c| c.range().start).min();
    match first_comment {
        Some(at) if !comments => {
            return Err(ParseError {
                pos: pos_of(body, at),
                msg: "the file has comments, and this host reads plain JSON only (it would reject the file); \
                      remove them, or add the entries from hooks/ by hand"
                    .into(),
            });
        }
        Some(_) => {}
        // Plain JSON: also exactly what serde_json (the strictest reader
        // among the hosts) accepts.
        None => serde_strict(body)?,
    }
    let Some(value) = parsed.value else {
        return Ok(JsonDoc { text: body.to_string(), bom, root_span: None, root: Node::Object(Obj::default()) });
    };
    let root = build(&value, body)?;
    Ok(JsonDoc { text: body.to_string(), bom, root_span: Some(value.range().into()), root })
}

/// Whether serde_json reads `text`, with its position when not.
fn serde_strict(text: &str) -> Result<(), ParseError> {
    serde_json::from_str::<serde::de::IgnoredAny>(text).map(|_| ()).map_err(|e| {
        let msg = e.to_string();
        // serde_json appends " at line L column C"; we print the position first.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        ParseError { pos: Pos { line: e.line().max(1), col: e.column().max(1) }, msg: format!("not valid JSON: {msg}") }
    })
}

fn build(v: &ast::Value, text: &str) -> Result<Node, ParseError> {
    let span: Span = v.range().into();
    Ok(match v {
        ast::Value::StringLit(s) => Node::Scalar(Value::String(s.value.to_string()), Some(span)),
        ast::Value::NumberLit(n) => {
            let num: Value = serde_json::from_str(n.value).map_err(|_| ParseError {
                pos: pos_of(text, span.start),
                msg: "not valid JSON: a bad number".into(),
            })?;
            Node::Scalar(num, Some(span))
        }
        ast::Value::BooleanLit(b) => Node::Scalar(Value::Bool(b.value), Some(span)),
        ast::Value::NullKeyword(_) => Node::Scalar(Value::Null, Some(span)),
        ast::Value::Array(a) => {
            let items = a.elements.iter().map(|e| build(e, text)).collect::<Result<Vec<_>, _>>()?;
            let children = a.elements.iter().map(|e| e.range().into()).collect();
            Node::Array(Arr { items, orig: Some(Orig { span, children }) })
        }
        ast::Value::Object(o) => {
            let mut props: Vec<Prop> = Vec::with_capacity(o.properties.len());
            for p in &o.properties {
                let key = p.name.as_str().to_string();
                if props.iter().any(|q| q.key == key) {
                    return Err(ParseError {
                        pos: pos_of(text, p.range.start),
                        msg: format!(
                            "duplicate key {key:?} (the host would see only one of them; leanctx will not guess which)"
                        ),
                    });
                }
                let value = build(&p.value, text)?;
                props.push(Prop { key, value, span: Some((p.range.into(), p.value.range().into())) });
            }
            let children = o.properties.iter().map(|p| p.range.into()).collect();
            Node::Object(Obj { props, orig: Some(Orig { span, children }) })
        }
    })
}

/// Line and column (in characters) of a byte offset.
pub fn pos_of(text: &str, offset: usize) -> Pos {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Pos { line, col: before[line_start..].chars().count() + 1 }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(text: &str, comments: bool, f: impl FnOnce(&mut Node)) -> String {
        let mut d = parse(text, comments).unwrap();
        f(&mut d.root);
        d.render()
    }

    fn add_hooks(n: &mut Node) {
        n.as_obj_mut().unwrap().insert("hooks", Node::from_value(&json!({"Stop": [{"command": "x", "timeout": 5}]})));
    }

    #[test]
    fn comments_are_refused_at_their_position_unless_allowed() {
        let e = parse("{\n  \"a\": 1, // note\n  \"b\": 2\n}\n", false).unwrap_err();
        assert_eq!(e.pos, Pos { line: 2, col: 11 });
        assert!(e.msg.contains("comments"), "{}", e.msg);
        let e = parse("{\"a\": \"http://x\" /* c */}", false).unwrap_err();
        assert_eq!(e.pos, Pos { line: 1, col: 18 });
        assert!(parse("{\"a\": \"http://x\" /* c */}", true).is_ok());
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let e = parse("{\n  \"a\": 1,\n  \"b\": ,\n}", false).unwrap_err();
        assert_eq!(e.pos.line, 3);
        assert!(e.msg.starts_with("not valid JSON"), "{}", e.msg);
        assert!(parse("{\"a\": 1,}", false).is_err(), "no trailing commas");
        assert!(parse("{a: 1}", false).is_err());
        assert!(parse("{\"a\": 'x'}", false).is_err());
        assert!(parse("{\"a\": 0x10}", false).is_err());
        assert!(parse("{\"a\": \"\u{1}\"}", false).is_err(), "a raw control character");
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let e = parse("{\"hooks\": {}, \"hooks\": []}", false).unwrap_err();
        assert!(e.msg.contains("duplicate key \"hooks\""), "{}", e.msg);
        assert_eq!(e.pos, Pos { line: 1, col: 15 });
        assert!(parse("{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}}", false).is_ok(), "same key in two objects is fine");
    }

    #[test]
    fn empty_text_is_an_empty_object_and_renders_as_itself() {
        let d = parse(" \n", false).unwrap();
        assert_eq!(d.root.to_value(), json!({}));
        assert_eq!(d.render(), " \n");
        assert_eq!(
            edit("", false, add_hooks),
            "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"command\": \"x\",\n        \"timeout\": 5\n      }\n    ]\n  }\n}\n"
        );
    }

    #[test]
    fn an_untouched_file_renders_byte_for_byte() {
        for text in ["{\"z\": 1, \"a\": 2, \"m\": [1.5e3, -3, null, true]}", "\u{feff}{\r\n\t\"a\": 1 // x\r\n}\r\n"] {
            assert_eq!(parse(text, true).unwrap().render(), text);
        }
    }

    #[test]
    fn a_property_goes_in_and_out_leaving_the_rest() {
        for text in [
            "{}",
            "{\"a\":1}",
            "{\"a\": 1, \"b\": [1,2,3]}",
            "{\n  \"a\": [1,2,3]\n}\n",
            "{\n\t\"a\": {\n\t\t\"b\": true\n\t}\n}",
            "\u{feff}{\r\n    \"a\": 1\r\n}\r\n",
            "{\n  \"a\": 1 // about a\n}\n",
            "{\n  // nothing yet\n}\n",
            "{ /* x */ }",
            "  {\"a\" : 1 , \"b\":2}  \n",
        ] {
            let installed = edit(text, true, add_hooks);
            assert_ne!(installed, text);
            let d = parse(&installed, true).unwrap_or_else(|e| panic!("{text:?} -> {installed:?}: {e:?}"));
            assert_eq!(d.root.get("hooks").unwrap().to_value()["Stop"][0]["timeout"], 5);
            let back = edit(&installed, true, |n| {
                n.as_obj_mut().unwrap().remove("hooks");
            });
            assert_eq!(back, text, "installed: {installed}");
        }
    }

    #[test]
    fn new_text_follows_the_files_layout() {
        let t = edit("{\n\t\"a\": 1\n}", false, add_hooks);
        assert!(t.starts_with("{\n\t\"a\": 1,\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\n"), "{t}");
        let t = edit("{\"a\":[1,2]}", false, add_hooks);
        assert_eq!(t, "{\"a\":[1,2],\"hooks\":{\"Stop\":[{\"command\":\"x\",\"timeout\":5}]}}");
        let t = edit("{\r\n  \"a\": 1\r\n}\r\n", false, add_hooks);
        assert!(!t.replace("\r\n", "").contains('\n'), "CRLF throughout: {t:?}");
    }

    #[test]
    fn elements_are_added_and_removed_anywhere() {
        let text = "{\"l\": [\n  1, // one\n  2\n]}";
        let mut d = parse(text, true).unwrap();
        let l = d.root.get_mut("l").unwrap().as_arr_mut().unwrap();
        l.push(Node::from_value(&json!(3)));
        l.insert(0, Node::from_value(&json!(0)));
        let out = d.render();
        assert_eq!(out, "{\"l\": [\n  0,\n  1, // one\n  2,\n  3\n]}");
        let mut d = parse(&out, true).unwrap();
        let l = d.root.get_mut("l").unwrap().as_arr_mut().unwrap();
        l.remove(3);
        l.remove(0);
        assert_eq!(d.render(), text);
        // The middle one, and the last one after a commented element.
        let mut d = parse("[1, 2, 3]", true).unwrap();
        d.root.as_arr_mut().unwrap().remove(1);
        assert_eq!(d.render(), "[1, 3]");
        let mut d = parse("[\n  1, // c\n  2\n]", true).unwrap();
        d.root.as_arr_mut().unwrap().remove(1);
        assert_eq!(d.render(), "[\n  1 // c\n]");
    }

    #[test]
    fn a_replaced_value_is_written_in_its_place() {
        let mut d = parse("{\"a\": {\"x\": 1}, \"b\": 2}", false).unwrap();
        d.root.as_obj_mut().unwrap().insert("a", Node::from_value(&json!({"y": 2})));
        assert_eq!(d.render(), "{\"a\": {\"y\": 2}, \"b\": 2}");
    }
}
