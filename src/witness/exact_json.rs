//! A cursor over JSON in the one shape leanctx's own writer gives it
//! (`serde_json::to_vec`: no spaces, fields in order, strings without
//! escapes), for the witness's two hot readers (the state file's track,
//! `file/track_json.rs`, and the progress records, `progress/parse.rs`).
//! Each read either matches that shape exactly or returns `None`, and the
//! caller then leaves the input to serde; their tests hold both readers to
//! serde's answers.

use std::collections::VecDeque;

pub(super) struct Cur<'a> {
    t: &'a str,
    b: &'a [u8],
    /// Where the next read starts.
    pub(super) i: usize,
}

impl<'a> Cur<'a> {
    /// A cursor at the start of `b`, which must be valid UTF-8 (checked
    /// once here: each string is then a slice at two quotes); `None` if not.
    pub(super) fn new(b: &'a [u8]) -> Option<Self> {
        Some(Cur { t: std::str::from_utf8(b).ok()?, b, i: 0 })
    }

    /// How many bytes are left to read.
    pub(super) fn left(&self) -> usize {
        self.b.len() - self.i
    }

    /// Whether everything was read.
    pub(super) fn at_end(&self) -> bool {
        self.i == self.b.len()
    }

    pub(super) fn lit(&mut self, s: &[u8]) -> Option<()> {
        let end = self.i.checked_add(s.len())?;
        (self.b.get(self.i..end)? == s).then(|| self.i = end)
    }

    /// A string's bytes, when it has no escape and no control character.
    pub(super) fn raw_string(&mut self) -> Option<&'a [u8]> {
        self.lit(b"\"")?;
        let rest = self.b.get(self.i..)?;
        let n = crate::base::bytes::find2(b'"', b'\\', rest)?;
        if rest[n] != b'"' || rest[..n].iter().any(|&b| b < 0x20) {
            return None;
        }
        self.i += n + 1;
        Some(&rest[..n])
    }

    pub(super) fn string(&mut self) -> Option<String> {
        self.str().map(str::to_owned)
    }

    /// [`Self::string`], borrowed from the input.
    pub(super) fn str(&mut self) -> Option<&'a str> {
        let end = self.raw_string()?.len();
        // Between two quotes (ASCII): char boundaries of the checked text.
        self.t.get(self.i - 1 - end..self.i - 1)
    }

    /// A u64 as serde writes one (digits, no leading zero), within range.
    pub(super) fn num(&mut self) -> Option<u64> {
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(d) = self.b.get(self.i).filter(|d| d.is_ascii_digit()) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let len = self.i - start;
        (len == 1 || (len > 1 && self.b[start] != b'0')).then_some(n)
    }

    pub(super) fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<VecDeque<T>> {
        let mut out = VecDeque::new();
        self.each(|c| {
            out.push_back(item(c)?);
            Some(())
        })?;
        Some(out)
    }

    /// A list, each item read by `item`, which keeps what it reads.
    pub(super) fn each(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.lit(b"[")?;
        if self.lit(b"]").is_some() {
            return Some(());
        }
        loop {
            item(self)?;
            if self.lit(b"]").is_some() {
                return Some(());
            }
            self.lit(b",")?;
        }
    }

    /// Past one JSON value: a scalar up to the next `,` or `}`, or a
    /// string, array or object to its end (on invalid JSON somewhere else,
    /// or nowhere: what it passes over goes to serde, which then refuses it).
    pub(super) fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    loop {
                        let n = crate::base::bytes::find2(b'"', b'\\', self.b.get(self.i..)?)?;
                        self.i += n + 1;
                        if self.b[self.i - 1] == b'"' {
                            break;
                        }
                        // An escape: the next byte is part of it.
                        self.i += 1;
                    }
                    if depth == 0 {
                        return Some(());
                    }
                }
                b'[' | b'{' => {
                    depth += 1;
                    self.i += 1;
                }
                b']' | b'}' if depth == 0 => return Some(()),
                b']' | b'}' => {
                    depth -= 1;
                    self.i += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
                b',' if depth == 0 => return Some(()),
                _ => self.i += 1,
            }
        }
    }
}
