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

    /// One byte (a slice compare of one byte is a call to `bcmp`).
    pub(super) fn byte(&mut self, c: u8) -> Option<()> {
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    pub(super) fn lit(&mut self, s: &[u8]) -> Option<()> {
        let end = self.i.checked_add(s.len())?;
        (self.b.get(self.i..end)? == s).then(|| self.i = end)
    }

    /// A string's bytes, when it has no escape and no control character.
    pub(super) fn raw_string(&mut self) -> Option<&'a [u8]> {
        self.byte(b'"')?;
        let rest = self.b.get(self.i..)?;
        let n = string_end(rest)?;
        if rest[n] != b'"' {
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
        self.byte(b'[')?;
        if self.byte(b']').is_some() {
            return Some(());
        }
        loop {
            item(self)?;
            if self.byte(b']').is_some() {
                return Some(());
            }
            self.byte(b',')?;
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

/// Where a string's text in `b` ends: the first `"`, `\` or control
/// character (`None`: none). Eight bytes at a time, as serde_json's own
/// string scan: the ids it reads are short, and a vector search's set-up
/// (the `memchr` crate's) cost more than its scan, ~190 instructions an id
/// of a state file's 256 prompts (callgrind, benches/README.md). A borrow
/// can mark a byte after a true match, never one before it: the lowest
/// mark is the first match.
pub(super) fn string_end(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let mut i = 0;
    while let Some(c) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let ctrl = w.wrapping_sub(ONES * 0x20) & !w;
        let q = w ^ (ONES * u64::from(b'"'));
        let q = q.wrapping_sub(ONES) & !q;
        let e = w ^ (ONES * u64::from(b'\\'));
        let e = e.wrapping_sub(ONES) & !e;
        let m = (ctrl | q | e) & HIGH;
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    b[i..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map(|p| i + p)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The eight-at-a-time scan finds what a byte loop finds, on bytes
        /// dense in the three it looks for and in their neighbours.
        #[test]
        fn string_end_is_the_first_quote_backslash_or_control(
            b in proptest::collection::vec(
                prop_oneof![
                    Just(b'"'), Just(b'\\'), Just(0x1f_u8), Just(0x20_u8), Just(0x21_u8), Just(0x5b_u8),
                    Just(0x5d_u8), Just(0x7f_u8), Just(0x80_u8), Just(0x9f_u8), Just(0xa0_u8), Just(0xff_u8),
                    Just(0_u8), any::<u8>(), b'a'..=b'z',
                ],
                0..40,
            )
        ) {
            let want = b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            prop_assert_eq!(super::string_end(&b), want);
        }
    }
}
