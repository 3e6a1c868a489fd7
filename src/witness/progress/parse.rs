//! A progress record's JSON read by hand, in the one shape
//! `serde_json::to_vec` writes it (no spaces, its fields in order, strings
//! without escapes), else not at all: then serde reads it. A fresh
//! `leanctx stub` reads every record of the log, and serde's generic walk
//! (field names matched, the enum's map, each string validated in two
//! passes) was a quarter of such a question's instructions (callgrind,
//! benches/README.md). Whatever this reader accepts, serde reads the same
//! way (the tests hold the two to it, mutated records included), so the
//! records mean what they meant.

use super::super::exact_json::Cur;
use super::{Rec, Seen};

/// The record `json` holds, if it has exactly the shape the writer gives it.
pub(super) fn rec(json: &[u8]) -> Option<Rec> {
    let mut c = Cur::new(json)?;
    c.lit(b"{\"g\":")?;
    let g = c.num()?;
    c.lit(b",\"from\":")?;
    let from = c.num()?;
    c.lit(b",\"to\":")?;
    let to = c.num()?;
    c.lit(b",\"skip\":")?;
    let skip = if c.lit(b"true").is_some() {
        true
    } else {
        c.lit(b"false")?;
        false
    };
    c.lit(b",\"tail\":")?;
    let tail = c.string()?;
    c.lit(b",\"seen\":[")?;
    let mut seen = Vec::new();
    if c.lit(b"]").is_none() {
        loop {
            seen.push(self::seen(&mut c)?);
            if c.lit(b"]").is_some() {
                break;
            }
            c.lit(b",")?;
        }
    }
    c.lit(b"}")?;
    c.at_end().then_some(Rec { g, from, to, skip, tail, seen })
}

/// `{"p":[offset,"uuid"]}` or `{"t":[offset,["id",…]]}`.
fn seen(c: &mut Cur<'_>) -> Option<Seen> {
    if c.lit(b"{\"p\":[").is_some() {
        let at = c.num()?;
        c.lit(b",")?;
        let u = c.string()?;
        c.lit(b"]}")?;
        return Some(Seen::Prompt(at, u));
    }
    c.lit(b"{\"t\":[")?;
    let at = c.num()?;
    c.lit(b",")?;
    let ids = Vec::from(c.list(Cur::string)?);
    c.lit(b"]}")?;
    Some(Seen::Tools(at, ids))
}

#[cfg(test)]
mod tests {
    use super::super::{Rec, Seen};
    use proptest::prelude::*;

    fn serde(json: &[u8]) -> Option<Rec> {
        serde_json::from_slice(json).ok()
    }

    fn same(a: &Option<Rec>, b: &Option<Rec>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => {
                (a.g, a.from, a.to, a.skip, &a.tail, &a.seen) == (b.g, b.from, b.to, b.skip, &b.tail, &b.seen)
            }
            (None, None) => true,
            _ => false,
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9_-]{0,24}",
            // Escapes, quotes, control characters, non-ASCII: serde's.
            any::<String>(),
            "[\"\\\\\u{0}\u{1f}é\u{10ffff}a]{0,6}",
        ]
    }

    fn seen() -> impl Strategy<Value = Seen> {
        prop_oneof![
            (any::<u64>(), text()).prop_map(|(a, u)| Seen::Prompt(a, u)),
            (any::<u64>(), proptest::collection::vec(text(), 0..4)).prop_map(|(a, t)| Seen::Tools(a, t)),
        ]
    }

    fn record() -> impl Strategy<Value = Rec> {
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<bool>(), text(), proptest::collection::vec(seen(), 0..5))
            .prop_map(|(g, from, to, skip, tail, seen)| Rec { g, from, to, skip, tail, seen })
    }

    proptest! {
        /// Every record the writer makes reads back whole, by hand when it
        /// has no escapes, else by serde, the same either way.
        #[test]
        fn the_writers_records_read_back(r in record()) {
            let json = serde_json::to_vec(&r).unwrap();
            let fast = super::rec(&json);
            let escaped = json.windows(1).any(|w| w[0] == b'\\');
            prop_assert_eq!(fast.is_some(), !escaped);
            prop_assert!(fast.is_none() || same(&fast, &serde(&json)));
            let back = fast.or_else(|| serde(&json));
            prop_assert!(same(&back, &Some(r)));
        }

        /// Whatever the hand reader accepts, serde reads the same: records
        /// with bytes changed, cut, or inserted.
        #[test]
        fn what_it_accepts_serde_reads_alike(
            r in record(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
        ) {
            let mut json = serde_json::to_vec(&r).unwrap();
            for (at, byte, kind) in edits {
                let i = at.index(json.len() + 1);
                match kind {
                    0 if i < json.len() => json[i] = byte,
                    1 if i < json.len() => { json.remove(i); }
                    _ => json.insert(i, byte),
                }
            }
            let fast = super::rec(&json);
            prop_assert!(fast.is_none() || same(&fast, &serde(&json)), "{}", String::from_utf8_lossy(&json));
        }
    }

    #[test]
    fn numbers_and_literals_as_serde_has_them() {
        let ok = br#"{"g":0,"from":18446744073709551615,"to":10,"skip":true,"tail":"","seen":[{"t":[1,[]]}]}"#;
        assert!(same(&super::rec(ok), &serde(ok)) && super::rec(ok).is_some());
        for bad in [
            &br#"{"g":01,"from":1,"to":1,"skip":false,"tail":"","seen":[]}"#[..],
            br#"{"g":18446744073709551616,"from":1,"to":1,"skip":false,"tail":"","seen":[]}"#,
            br#"{"g":1.0,"from":1,"to":1,"skip":false,"tail":"","seen":[]}"#,
            br#"{"g":-1,"from":1,"to":1,"skip":false,"tail":"","seen":[]}"#,
            br#"{"g":1,"from":1,"to":1,"skip":false,"tail":"","seen":[],}"#,
            br#"{"g":1,"from":1,"to":1,"skip":false,"tail":"","seen":[]} "#,
            br#"{"g":1,"from":1,"to":1,"skip":0,"tail":"","seen":[]}"#,
            b"{\"g\":1,\"from\":1,\"to\":1,\"skip\":false,\"tail\":\"\xff\",\"seen\":[]}",
        ] {
            assert!(super::rec(bad).is_none(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
