//! A state file's [`Track`] read by hand: its ids are most of the file
//! (up to 256 prompts and 2,048 tool uses), and serde's walk of them (a
//! string, a tuple and a push each, after `flatten` had copied each one)
//! was two fifths of a one-shot `leanctx stub`'s instructions with a full
//! state (callgrind, benches/README.md). It reads only the shape the
//! writer gives (no spaces, strings without escapes, `pending` null);
//! anything else is left to serde. Each id is copied straight into its
//! list's one arena ([`Ids`]), with no allocation of its own. The state's own fields are left to
//! serde too: they are copied, as they stand, into an object of their
//! own, so serde neither walks past the ids nor sees a byte this reader
//! did not check or pass on. The tests hold the two to the same answers.

use super::super::exact_json::Cur;
use super::super::ids::Ids;
use super::super::scan::{MAX_TOOL_USES, MAX_WITHDRAWN, Track};

/// The track in `json`, and the object's other members as an object of
/// their own (for serde: the state's fields); `None`: let serde read all.
///
/// Sound on any input: every byte is either read here by the strict
/// grammar (the track's members, the separators, the keys) or passed on
/// verbatim, one member's value at a time, inside `{"key":…}` for serde,
/// which refuses the whole if one such value is not exactly one JSON value.
pub(super) fn split(json: &[u8]) -> Option<(Track, Vec<u8>)> {
    let mut c = Cur::new(json)?;
    c.lit(b"{")?;
    let (mut prompts, mut tools, mut withdrawn, mut pending) = (None, None, None, None);
    let mut rest = Vec::with_capacity(1024);
    rest.push(b'{');
    loop {
        let start = c.i;
        let key = c.raw_string()?;
        c.lit(b":")?;
        // A key twice: serde refuses it (for the track's own keys).
        match key {
            b"prompts" if prompts.is_none() => prompts = Some(pairs(&mut c)?),
            b"tools" if tools.is_none() => tools = Some(pairs(&mut c)?),
            b"withdrawn" if withdrawn.is_none() => withdrawn = Some(strings(&mut c)?),
            b"pending" if pending.is_none() => {
                c.lit(b"null")?;
                pending = Some(None);
            }
            b"prompts" | b"tools" | b"withdrawn" | b"pending" => return None,
            // The state's own fields, for serde.
            _ => {
                c.skip_value()?;
                if rest.len() > 1 {
                    rest.push(b',');
                }
                rest.extend_from_slice(&json[start..c.i]);
            }
        }
        if c.lit(b"}").is_some() {
            break;
        }
        c.lit(b",")?;
    }
    if !c.at_end() {
        return None;
    }
    rest.push(b'}');
    // Every field of Track, named: a field added there fails to compile
    // here until this reader reads it.
    let track = Track { prompts: prompts?, tools: tools?, withdrawn: withdrawn?, pending: pending.unwrap_or(None) };
    Some((track, rest))
}

/// Room for the ids of a list at `c`, at most what is left of the input
/// (`min`: the fewest bytes one item takes, `max`: the most ids the
/// witness keeps), so that the arena and the deque grow only once.
fn room<T: Copy>(c: &Cur<'_>, min: usize, max: usize) -> Ids<T> {
    let left = c.left();
    Ids::with_capacity((left / min).min(max), left.min(max * 64))
}

/// `[["id",offset],…]`, each id copied into the one arena.
fn pairs(c: &mut Cur<'_>) -> Option<Ids<u64>> {
    let mut ids = if c.lit(b"[]").is_some() { return Some(Ids::new()) } else { room(c, 8, MAX_TOOL_USES) };
    c.each(|c| {
        c.byte(b'[')?;
        let s = c.str()?;
        c.byte(b',')?;
        let n = c.num()?;
        c.byte(b']')?;
        ids.push_back(s, n);
        Some(())
    })?;
    Some(ids)
}

/// `["id",…]`
fn strings(c: &mut Cur<'_>) -> Option<Ids<()>> {
    let mut ids = if c.lit(b"[]").is_some() { return Some(Ids::new()) } else { room(c, 4, MAX_WITHDRAWN) };
    c.each(|c| {
        ids.push_back(c.str()?, ());
        Some(())
    })?;
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::super::State;
    use crate::witness::ids::Ids;
    use crate::witness::scan::{Pending, Track};
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9_-]{0,24}", any::<String>(), "[\"\\\\\u{0}\u{1f}é{}\\[\\],:]{0,6}"]
    }

    fn ids<T: Copy>(v: Vec<(String, T)>) -> Ids<T> {
        let mut ids = Ids::new();
        for (i, t) in v {
            ids.push_back(&i, t);
        }
        ids
    }

    fn track() -> impl Strategy<Value = Track> {
        let pairs = || proptest::collection::vec((text(), any::<u64>()), 0..6);
        let pending = prop_oneof![
            3 => Just(None),
            1 => (any::<u64>(), any::<u32>()).prop_map(|(from, pid)| Some(Pending { from, pid, ..Default::default() })),
        ];
        (pairs(), pairs(), proptest::collection::vec(text(), 0..4), pending).prop_map(|(p, t, w, pending)| Track {
            prompts: ids(p),
            tools: ids(t),
            withdrawn: ids(w.into_iter().map(|w| (w, ())).collect()),
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

    /// What serde makes of `json` as a whole: the state's fields and the track.
    fn serde(json: &[u8]) -> Option<(State, Track)> {
        Some((serde_json::from_slice(json).ok()?, serde_json::from_slice(json).ok()?))
    }

    /// What `split` makes of it, serde reading the rest: `None` when the
    /// hand reader left it to serde; `Some(None)` when serde refused the rest.
    fn hand(json: &[u8]) -> Option<Option<(State, Track)>> {
        let (track, rest) = super::split(json)?;
        Some(serde_json::from_slice::<State>(&rest).ok().map(|st| (st, track)))
    }

    proptest! {
        /// What the writer writes reads back whole, by hand unless a
        /// string of the track has an escape or an idle return is pending.
        #[test]
        fn the_writers_state_reads_back(st in state()) {
            let json = serde_json::to_vec(&st).unwrap();
            let t = &st.track;
            let ids = t.prompts.iter().map(|p| p.0).chain(t.tools.iter().map(|p| p.0)).chain(t.withdrawn.iter().map(|w| w.0));
            let plain = t.pending.is_none() && ids.map(|s| serde_json::to_string(s).unwrap()).all(|s| !s.contains('\\'));
            let got = hand(&json);
            prop_assert_eq!(got.is_some(), plain);
            prop_assert!(got.is_none() || got == Some(serde(&json)));
            prop_assert_eq!(&State::from_json(&json).unwrap(), &st);
        }

        /// On any bytes (mutated states), whatever the hand reader accepts
        /// reads as serde reads it whole, refusals included.
        #[test]
        fn what_it_accepts_serde_reads_alike(
            st in state(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
        ) {
            let mut json = serde_json::to_vec(&st).unwrap();
            for (at, byte, kind) in edits {
                let i = at.index(json.len() + 1);
                let byte = b"[]{}\",:0123456789\\ anlu\xff"[byte as usize % 24];
                match kind {
                    0 if i < json.len() => json[i] = byte,
                    1 if i < json.len() => { json.remove(i); }
                    _ => json.insert(i, byte),
                }
            }
            if let Some(got) = hand(&json) {
                prop_assert_eq!(got, serde(&json), "{}", String::from_utf8_lossy(&json));
            }
        }
    }

    #[test]
    fn duplicate_or_missing_keys_and_bad_values_are_serdes_to_refuse() {
        // (the JSON, whether the hand reader takes it, whether it is a state at all)
        for (json, by_hand, ok) in [
            (&br#"{"transcript":"t","file":[1,2],"offset":3,"skipping":false,"last_turn_ms":0,"since_ms":0,"prompts":[],"tools":[],"withdrawn":[],"pending":null}"#[..], true, true),
            (br#"{"prompts":[],"tools":[],"withdrawn":[]}"#, true, false),
            (br#"{"prompts":[],"tools":[],"withdrawn":[],"prompts":[]}"#, false, false),
            (br#"{"prompts":[],"tools":[]}"#, false, false),
            (br#"{"transcript":"t","file":[1,2],"offset":3,"skipping":false,"last_turn_ms":0,"since_ms":0,"x":{"a":[1,"]}"]},"prompts":[["a",1]],"tools":[],"withdrawn":["b"]}"#, true, true),
            (br#"{"x":"\"}","prompts":[["a",01]],"tools":[],"withdrawn":[]}"#, false, false),
            // A value that is not one JSON value: passed on, and refused.
            (br#"{"transcript":"t","file":[1,2],"offset":3 7,"skipping":false,"last_turn_ms":0,"since_ms":0,"prompts":[],"tools":[],"withdrawn":[]}"#, true, false),
            (br#"{"transcript":"t","file":[1,2,"offset":3,"skipping":false,"last_turn_ms":0,"since_ms":0,"prompts":[],"tools":[],"withdrawn":[]}"#, false, false),
        ] {
            let got = hand(json);
            assert_eq!(got.is_some(), by_hand, "{}", String::from_utf8_lossy(json));
            assert_eq!(serde(json).is_some(), ok, "{}", String::from_utf8_lossy(json));
            if let Some(got) = got {
                assert_eq!(got, serde(json), "{}", String::from_utf8_lossy(json));
            }
        }
    }
}
