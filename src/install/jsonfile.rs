//! Reading and writing a host's JSON config without losing anything.
//!
//! Plain JSON only. A file with comments (JSONC) is refused, not rewritten:
//! serde_json cannot keep comments, and silently dropping a user's notes is
//! exactly the kind of damage this installer exists to avoid. Duplicate
//! keys are refused too (serde_json would keep only the last). Key order is
//! kept (`preserve_order`), and so are the file's indentation and final
//! newline, so an install followed by an uninstall gives back an equivalent
//! file.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

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

/// One step into a JSON document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Parse a config. Empty (or all-whitespace) text reads as `{}`.
pub fn parse(text: &str) -> Result<Value, ParseError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    if text.starts_with('\u{feff}') {
        return Err(ParseError {
            pos: Pos { line: 1, col: 1 },
            msg: "the file starts with a byte-order mark; JSON files must not (remove it)".into(),
        });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = StrictSeed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    parsed.map_err(|e| {
        if let Some(pos) = find_comment(text) {
            return ParseError {
                pos,
                msg: "the file has comments (JSONC); leanctx edits plain JSON only, because rewriting would drop \
                      the comments. Remove them, or add the entries from hooks/ by hand"
                    .into(),
            };
        }
        let msg = e.to_string();
        // serde_json appends " at line L column C"; we print the position first.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        ParseError { pos: Pos { line: e.line().max(1), col: e.column().max(1) }, msg: format!("not valid JSON: {msg}") }
    })
}

/// A `Value` that refuses duplicate object keys.
struct StrictSeed;

impl<'de> DeserializeSeed<'de> for StrictSeed {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element_seed(StrictSeed)? {
            v.push(x);
        }
        Ok(Value::Array(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.contains_key(&k) {
                return Err(de::Error::custom(format_args!(
                    "duplicate key {k:?} (the host would see only one of them; leanctx will not guess which)"
                )));
            }
            let v = map.next_value_seed(StrictSeed)?;
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}

/// The first `//` or `/*` outside a string, if any.
fn find_comment(text: &str) -> Option<Pos> {
    let b = text.as_bytes();
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && matches!(b.get(i + 1), Some(b'/' | b'*')) => return Some(pos_of(text, i)),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Line and column (in characters) of a byte offset.
pub fn pos_of(text: &str, offset: usize) -> Pos {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Pos { line, col: before[line_start..].chars().count() + 1 }
}

/// Where the value at `path` starts in `text` (which must parse). Used to
/// point at a wrong-shaped value, since `Value` carries no positions.
pub fn locate(text: &str, path: &[Seg]) -> Option<Pos> {
    let mut s = Scanner { b: text.as_bytes(), i: 0 };
    s.ws();
    for seg in path {
        match (seg, s.peek()?) {
            (Seg::Key(k), b'{') => {
                s.i += 1;
                loop {
                    s.ws();
                    if s.peek()? == b'}' {
                        return None;
                    }
                    let key_start = s.i;
                    s.skip_string()?;
                    let key: String = serde_json::from_str(&text[key_start..s.i]).ok()?;
                    s.ws();
                    s.expect(b':')?;
                    s.ws();
                    if &key == k {
                        break;
                    }
                    s.skip_value()?;
                    s.ws();
                    if s.peek()? == b',' {
                        s.i += 1;
                    }
                }
            }
            (Seg::Index(n), b'[') => {
                s.i += 1;
                for _ in 0..*n {
                    s.ws();
                    s.skip_value()?;
                    s.ws();
                    s.expect(b',')?;
                }
                s.ws();
                if s.peek()? == b']' {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(pos_of(text, s.i))
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }
    fn skip_string(&mut self) -> Option<()> {
        self.expect(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                _ => self.i += 1,
            }
        }
    }
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.i += 1;
                loop {
                    self.ws();
                    match self.peek()? {
                        c if c == close => {
                            self.i += 1;
                            return Some(());
                        }
                        b',' | b':' => self.i += 1,
                        _ => self.skip_value()?,
                    }
                }
            }
            _ => {
                while !matches!(self.peek(), None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                    self.i += 1;
                }
                Some(())
            }
        }
    }
}

/// How a file was laid out, so a rewrite looks like the original.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Style {
    /// `None` = compact (one line); else the indent unit.
    pub indent: Option<String>,
    pub final_newline: bool,
}

impl Style {
    /// Two spaces and a final newline: what a new file gets.
    pub fn default_pretty() -> Style {
        Style { indent: Some("  ".into()), final_newline: true }
    }

    pub fn detect(text: &str) -> Style {
        if text.trim().is_empty() {
            return Style::default_pretty();
        }
        let final_newline = text.ends_with('\n');
        if !text.trim_end().contains('\n') {
            // A short one-liner (`{}`, `{"a": 1}`) says nothing about taste;
            // a long one was minified on purpose.
            let indent = if text.trim().len() < 80 { Some("  ".to_string()) } else { None };
            return Style { indent, final_newline };
        }
        // The first indented line's leading whitespace is one level deep.
        let indent = text
            .lines()
            .skip(1)
            .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
            .find(|w| !w.is_empty())
            .unwrap_or("  ");
        Style { indent: Some(indent.to_string()), final_newline }
    }
}

/// Serialise in the file's style.
pub fn render(v: &Value, style: &Style) -> String {
    let mut out = match &style.indent {
        None => serde_json::to_string(v).expect("a Value always serialises"),
        Some(ind) => {
            let mut buf = Vec::new();
            let fmt = serde_json::ser::PrettyFormatter::with_indent(ind.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
            serde::Serialize::serialize(v, &mut ser).expect("a Value always serialises");
            String::from_utf8(buf).expect("serde_json writes UTF-8")
        }
    };
    if style.final_newline {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_refused_at_their_position() {
        let e = parse("{\n  \"a\": 1, // note\n  \"b\": 2\n}\n").unwrap_err();
        assert_eq!(e.pos, Pos { line: 2, col: 11 });
        assert!(e.msg.contains("comments"), "{}", e.msg);
        let e = parse("{\"a\": \"http://x\" /* c */}").unwrap_err();
        assert_eq!(e.pos, Pos { line: 1, col: 18 });
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let e = parse("{\n  \"a\": 1,\n  \"b\": ,\n}").unwrap_err();
        assert_eq!(e.pos.line, 3);
        assert!(e.msg.starts_with("not valid JSON"), "{}", e.msg);
        assert!(!e.msg.contains(" at line "), "{}", e.msg);
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let e = parse("{\"hooks\": {}, \"hooks\": []}").unwrap_err();
        assert!(e.msg.contains("duplicate key \"hooks\""), "{}", e.msg);
        assert!(parse("{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}}").is_ok(), "same key in two objects is fine");
    }

    #[test]
    fn empty_text_is_an_empty_object_and_order_is_kept() {
        assert_eq!(parse(" \n").unwrap(), serde_json::json!({}));
        let v = parse("{\"z\": 1, \"a\": 2, \"m\": [1.5, -3, null, true]}").unwrap();
        assert_eq!(
            render(&v, &Style { indent: None, final_newline: false }),
            "{\"z\":1,\"a\":2,\"m\":[1.5,-3,null,true]}"
        );
    }

    #[test]
    fn locate_points_at_a_value() {
        let text = "{\n  \"x\": {\"hooks\": 1},\n  \"hooks\": [\n    {\"a\": \"}\"}, 7\n  ]\n}";
        assert_eq!(locate(text, &[Seg::Key("hooks".into())]), Some(Pos { line: 3, col: 12 }));
        assert_eq!(locate(text, &[Seg::Key("hooks".into()), Seg::Index(1)]), Some(Pos { line: 4, col: 17 }));
        assert_eq!(locate(text, &[Seg::Key("nope".into())]), None);
        assert_eq!(locate(text, &[Seg::Key("x".into()), Seg::Key("hooks".into())]), Some(Pos { line: 2, col: 18 }));
    }

    #[test]
    fn a_short_one_liner_is_written_pretty() {
        assert_eq!(Style::detect("{}"), Style { indent: Some("  ".into()), final_newline: false });
        assert_eq!(render(&parse("{}").unwrap(), &Style::detect("{}")), "{}");
    }

    #[test]
    fn style_is_detected_and_reproduced() {
        for text in [
            "{\n    \"a\": [\n        1\n    ]\n}\n",
            "{\n\t\"a\": {\n\t\t\"b\": true\n\t}\n}",
            "{\"a\":{\"b\":true},\"list\":[1,2,3],\"more\":\"a long enough minified line, more than eighty characters\"}",
            "{\n  \"a\": \"é\"\n}\n",
        ] {
            let v = parse(text).unwrap();
            assert_eq!(render(&v, &Style::detect(text)), text);
        }
    }
}
