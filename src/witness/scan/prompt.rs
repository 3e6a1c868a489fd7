//! A prompt line read by hand: its `type` and `uuid`, and every other byte
//! checked as JSON exactly as serde_json checks what it skips, walked from
//! quote to quote (a vector search) instead of byte by byte. serde's walk
//! of the few prompt lines was the largest share of a growing `leanctx
//! stub` question's instructions (callgrind, benches/README.md). It answers
//! only for a line with no control character (whitespace is then a space
//! only, and no string can hold one), and leaves to serde (`None`) a key or
//! a `type`/`uuid` value with an escape (serde unescapes them before
//! matching). Whatever it answers is what serde answers: the tests hold the
//! two to it, on written and on mutated lines.

use super::Fact;
use crate::base::bytes;

/// The fact of a prompt line without control characters, as
/// `serde_json::from_slice` into `{type, uuid}` would make it (`None`:
/// ask serde).
pub(super) fn fact(line: &[u8]) -> Option<Fact> {
    let mut w = Walk { b: line, i: 0 };
    Some(match w.top() {
        Ok((Some(Some(t)), Some(Some(u)))) if t == b"user" => Fact::Prompt(std::str::from_utf8(u).ok()?.to_owned()),
        Ok(_) => Fact::Nothing,
        Err(Stop::Invalid) => Fact::NotJson,
        Err(Stop::Escaped) => return None,
    })
}

/// Why a walk stopped.
enum Stop {
    /// serde refuses the line.
    Invalid,
    /// A string serde would unescape: left to it.
    Escaped,
}

use Stop::{Escaped, Invalid};

/// A field: not seen, `null`, or a string's text.
type Field<'a> = Option<Option<&'a [u8]>>;

struct Walk<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Walk<'a> {
    /// serde's whitespace, in a line without control characters.
    fn ws(&mut self) -> Option<u8> {
        while self.b.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Result<(), Stop> {
        if self.ws() != Some(c) {
            return Err(Invalid);
        }
        self.i += 1;
        Ok(())
    }

    /// The top-level object (serde's struct from a map, then `end`).
    fn top(&mut self) -> Result<(Field<'a>, Field<'a>), Stop> {
        let (mut ty, mut uuid): (Field<'a>, Field<'a>) = (None, None);
        self.eat(b'{')?;
        let mut first = true;
        loop {
            // serde_json's `has_next_key`.
            match self.ws() {
                Some(b'}') => break,
                Some(b'"') if first => {}
                Some(b',') if !first => {
                    self.i += 1;
                    if self.ws() != Some(b'"') {
                        return Err(Invalid);
                    }
                }
                _ => return Err(Invalid),
            }
            first = false;
            let key = self.plain_string()?;
            self.eat(b':')?;
            let slot = match key {
                b"type" => &mut ty,
                b"uuid" => &mut uuid,
                _ => {
                    self.skip_value()?;
                    continue;
                }
            };
            // The derive refuses a field twice, `null` included.
            if slot.is_some() {
                return Err(Invalid);
            }
            *slot = Some(self.opt_str()?);
        }
        self.i += 1;
        // Nothing but whitespace after it.
        if self.ws().is_some() {
            return Err(Invalid);
        }
        Ok((ty, uuid))
    }

    /// A string at the cursor (its opening quote) with no escape: its text.
    fn plain_string(&mut self) -> Result<&'a [u8], Stop> {
        self.i += 1;
        let rest = &self.b[self.i..];
        let n = bytes::find2(b'"', b'\\', rest).ok_or(Invalid)?;
        if rest[n] == b'\\' {
            return Err(Escaped);
        }
        self.i += n + 1;
        Ok(&rest[..n])
    }

    /// `Option<Cow<str>>`: `null`, else a string (anything else: refused).
    fn opt_str(&mut self) -> Result<Option<&'a [u8]>, Stop> {
        match self.ws() {
            Some(b'n') => {
                self.i += 1;
                self.ident(b"ull")?;
                Ok(None)
            }
            Some(b'"') => self.plain_string().map(Some),
            _ => Err(Invalid),
        }
    }

    fn ident(&mut self, rest: &[u8]) -> Result<(), Stop> {
        if !self.b[self.i..].starts_with(rest) {
            return Err(Invalid);
        }
        self.i += rest.len();
        Ok(())
    }

    /// A skipped string (serde's `ignore_str`), the cursor past its
    /// opening quote: escapes are checked, not decoded.
    fn skip_string(&mut self) -> Result<(), Stop> {
        loop {
            let n = bytes::find2(b'"', b'\\', &self.b[self.i..]).ok_or(Invalid)?;
            self.i += n + 1;
            if self.b[self.i - 1] == b'"' {
                return Ok(());
            }
            match self.b.get(self.i) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                Some(b'u') => {
                    let hex = self.b.get(self.i + 1..self.i + 5).ok_or(Invalid)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return Err(Invalid);
                    }
                    self.i += 5;
                }
                _ => return Err(Invalid),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let n = self.b[self.i..].iter().take_while(|d| d.is_ascii_digit()).count();
        self.i += n;
        n
    }

    /// serde's `ignore_integer` (and the fraction and exponent after it).
    fn skip_number(&mut self) -> Result<(), Stop> {
        match self.b.get(self.i) {
            Some(b'0') => {
                self.i += 1;
                if self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    return Err(Invalid);
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Invalid),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(Invalid);
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(Invalid);
            }
        }
        Ok(())
    }

    /// One value skipped, as serde_json's `ignore_value`: its own stack of
    /// open arrays and objects (no depth limit), a trailing comma refused.
    fn skip_value(&mut self) -> Result<(), Stop> {
        let mut open: Vec<u8> = Vec::new();
        loop {
            let c = self.ws().ok_or(Invalid)?;
            self.i += 1;
            match c {
                b'n' => self.ident(b"ull")?,
                b't' => self.ident(b"rue")?,
                b'f' => self.ident(b"alse")?,
                b'-' => self.skip_number()?,
                b'0'..=b'9' => {
                    self.i -= 1;
                    self.skip_number()?;
                }
                b'"' => self.skip_string()?,
                b'[' | b'{' => open.push(c),
                _ => return Err(Invalid),
            }
            if open.is_empty() {
                return Ok(());
            }
            // Just opened: it may close at once; else a comma or its end.
            let mut comma = !matches!(c, b'[' | b'{');
            loop {
                let frame = *open.last().expect("an open frame");
                match self.ws() {
                    Some(b',') if comma => {
                        self.i += 1;
                        break;
                    }
                    Some(b']') if frame == b'[' => {}
                    Some(b'}') if frame == b'{' => {}
                    Some(_) if !comma => break,
                    _ => return Err(Invalid),
                }
                self.i += 1;
                open.pop();
                if open.is_empty() {
                    return Ok(());
                }
                comma = true;
            }
            if open.last() == Some(&b'{') {
                if self.ws() != Some(b'"') {
                    return Err(Invalid);
                }
                self.i += 1;
                self.skip_string()?;
                self.eat(b':')?;
            }
        }
    }
}
