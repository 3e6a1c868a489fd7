//! A state file's [`Track`] read by hand: its ids are most of the file
//! (up to 256 prompts and 2,048 tool uses), and serde's walk of them (a
//! string, a tuple and a push each) was a third of a one-shot `leanctx
//! stub`'s instructions with a full state (callgrind, benches/README.md).
//! It reads only the shape the writer gives (no spaces, strings without
//! escapes, `pending` null) from bytes serde has already read as a
//! `State` (so they are one JSON object); anything else is left to serde,
//! and the tests hold the two to the same answers.

use super::super::scan::Track;
use std::collections::VecDeque;

/// The track in `json`, or `None`: let serde read it.
pub(super) fn track(json: &[u8]) -> Option<Track> {
    let mut c = Cur { b: json, i: 0 };
    c.lit(b"{")?;
    let (mut prompts, mut tools, mut withdrawn, mut pending) = (None, None, None, None);
    loop {
        let key = c.raw_string()?;
        c.lit(b":")?;
        // A key twice: serde refuses it (for the track's own keys).
        match key {
            b"prompts" if prompts.is_none() => prompts = Some(c.pairs()?),
            b"tools" if tools.is_none() => tools = Some(c.pairs()?),
            b"withdrawn" if withdrawn.is_none() => withdrawn = Some(c.strings()?),
            b"pending" if pending.is_none() => {
                c.lit(b"null")?;
                pending = Some(None);
            }
            b"prompts" | b"tools" | b"withdrawn" | b"pending" => return None,
            // The state's own fields, skipped.
            _ => c.skip_value()?,
        }
        if c.lit(b"}").is_some() {
            break;
        }
        c.lit(b",")?;
    }
    if c.i != json.len() {
        return None;
    }
    // Every field of Track, named: a field added there fails to compile
    // here until this reader reads it.
    Some(Track { prompts: prompts?, tools: tools?, withdrawn: withdrawn?, pending: pending.unwrap_or(None) })
}

struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn lit(&mut self, s: &[u8]) -> Option<()> {
        let end = self.i.checked_add(s.len())?;
        (self.b.get(self.i..end)? == s).then(|| self.i = end)
    }

    /// A string's bytes, when it has no escape and no control character.
    fn raw_string(&mut self) -> Option<&'a [u8]> {
        self.lit(b"\"")?;
        let rest = self.b.get(self.i..)?;
        let n = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[n] != b'"' || rest[..n].iter().any(|&b| b < 0x20) {
            return None;
        }
        self.i += n + 1;
        Some(&rest[..n])
    }

    fn string(&mut self) -> Option<String> {
        std::str::from_utf8(self.raw_string()?).ok().map(str::to_owned)
    }

    /// A u64 as serde writes one (digits, no leading zero), within range.
    fn num(&mut self) -> Option<u64> {
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(d) = self.b.get(self.i).filter(|d| d.is_ascii_digit()) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let len = self.i - start;
        (len == 1 || (len > 1 && self.b[start] != b'0')).then_some(n)
    }

    /// `[["id",offset],…]`
    fn pairs(&mut self) -> Option<VecDeque<(String, u64)>> {
        self.list(|c| {
            c.lit(b"[")?;
            let s = c.string()?;
            c.lit(b",")?;
            let n = c.num()?;
            c.lit(b"]")?;
            Some((s, n))
        })
    }

    /// `["id",…]`
    fn strings(&mut self) -> Option<VecDeque<String>> {
        self.list(Cur::string)
    }

    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<VecDeque<T>> {
        self.lit(b"[")?;
        let mut out = VecDeque::new();
        if self.lit(b"]").is_some() {
            return Some(out);
        }
        loop {
            out.push_back(item(self)?);
            if self.lit(b"]").is_some() {
                return Some(out);
            }
            self.lit(b",")?;
        }
    }

    /// Past one value of JSON serde has read already (valid): a scalar up
    /// to the next `,` or `}`, or a string, array or object to its end.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    loop {
                        let n = memchr::memchr2(b'"', b'\\', self.b.get(self.i..)?)?;
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

#[cfg(test)]
mod tests {
    use super::super::State;
    use crate::witness::scan::{Pending, Track};
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9_-]{0,24}", any::<String>(), "[\"\\\\\u{0}\u{1f}é{}\\[\\],:]{0,6}"]
    }

    fn track() -> impl Strategy<Value = Track> {
        let pairs = || proptest::collection::vec((text(), any::<u64>()), 0..6);
        let pending = prop_oneof![
            3 => Just(None),
            1 => (any::<u64>(), any::<u32>()).prop_map(|(from, pid)| Some(Pending { from, pid, ..Default::default() })),
        ];
        (pairs(), pairs(), proptest::collection::vec(text(), 0..4), pending).prop_map(|(p, t, w, pending)| Track {
            prompts: p.into(),
            tools: t.into(),
            withdrawn: w.into(),
            pending,
        })
    }

    fn state() -> impl Strategy<Value = State> {
        (
            text(),
            any::<(u64, u64)>(),
            any::<u64>(),
            any::<bool>(),
            proptest::collection::vec(any::<(u32, u64)>(), 0..3),
            track(),
        )
            .prop_map(|(transcript, file, offset, skipping, procs, track)| State {
                transcript,
                file,
                offset,
                skipping,
                procs,
                track,
                ..State::default()
            })
    }

    proptest! {
        /// What the writer writes reads back whole, by hand unless a
        /// string of the track has an escape or an idle return is pending.
        #[test]
        fn the_writers_state_reads_back(st in state()) {
            let json = serde_json::to_vec(&st).unwrap();
            let fast = super::track(&json);
            let t = &st.track;
            let ids = t.prompts.iter().map(|p| &p.0).chain(t.tools.iter().map(|p| &p.0)).chain(t.withdrawn.iter());
            let plain = t.pending.is_none() && ids.map(|s| serde_json::to_string(s).unwrap()).all(|s| !s.contains('\\'));
            prop_assert_eq!(fast.is_some(), plain);
            prop_assert!(fast.is_none() || fast.as_ref() == Some(t));
            prop_assert_eq!(&State::from_json(&json).unwrap(), &st);
        }

        /// On bytes serde reads as a state, whatever the hand reader
        /// accepts serde reads as the same track.
        #[test]
        fn what_it_accepts_serde_reads_alike(
            st in state(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
        ) {
            let mut json = serde_json::to_vec(&st).unwrap();
            for (at, byte, kind) in edits {
                let i = at.index(json.len() + 1);
                let byte = b"[]{}\",:0123456789\\ anlu"[byte as usize % 23];
                match kind {
                    0 if i < json.len() => json[i] = byte,
                    1 if i < json.len() => { json.remove(i); }
                    _ => json.insert(i, byte),
                }
            }
            if serde_json::from_slice::<State>(&json).is_ok() && let Some(fast) = super::track(&json) {
                let slow: Result<Track, _> = serde_json::from_slice(&json);
                prop_assert_eq!(slow.ok(), Some(fast), "{}", String::from_utf8_lossy(&json));
            }
        }
    }

    #[test]
    fn duplicate_or_missing_keys_are_serdes_to_refuse() {
        for (json, fast) in [
            (&br#"{"transcript":"t","prompts":[],"tools":[],"withdrawn":[],"pending":null}"#[..], true),
            (br#"{"prompts":[],"tools":[],"withdrawn":[]}"#, true),
            (br#"{"prompts":[],"tools":[],"withdrawn":[],"prompts":[]}"#, false),
            (br#"{"prompts":[],"tools":[]}"#, false),
            (br#"{"x":{"a":[1,"]}"]},"prompts":[["a",1]],"tools":[],"withdrawn":["b"]}"#, true),
            (br#"{"x":"\"}","prompts":[["a",01]],"tools":[],"withdrawn":[]}"#, false),
        ] {
            let got = super::track(json);
            assert_eq!(got.is_some(), fast, "{}", String::from_utf8_lossy(json));
            if let Some(t) = got {
                assert_eq!(serde_json::from_slice::<Track>(json).unwrap(), t);
            }
        }
    }
}
