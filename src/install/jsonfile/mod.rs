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

mod render;
#[cfg(test)]
mod tests;
