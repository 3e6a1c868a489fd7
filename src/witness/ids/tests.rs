//! [`Ids`] against a `VecDeque` of owned ids (what it replaced): the same
//! ids after any run of operations, and the same JSON both ways.

use super::Ids;
use proptest::prelude::*;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
enum Op {
    Push(String, u64),
    Bounded(String, u64, usize),
    Pop,
    Clear,
    /// Keep the ids whose `T` is below this.
    RetainBelow(u64),
}

fn id() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9_-]{0,40}", any::<String>(), "[\"\\\\\u{0}é]{0,4}"]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (id(), 0u64..50).prop_map(|(i, t)| Op::Push(i, t)),
        4 => (id(), 0u64..50, 1usize..6).prop_map(|(i, t, m)| Op::Bounded(i, t, m)),
        3 => Just(Op::Pop),
        1 => Just(Op::Clear),
        1 => (0u64..50).prop_map(Op::RetainBelow),
    ]
}

fn run(ops: &[Op]) -> (Ids<u64>, VecDeque<(String, u64)>) {
    let (mut ids, mut model) = (Ids::new(), VecDeque::new());
    for op in ops {
        match op.clone() {
            Op::Push(i, t) => {
                ids.push_back(&i, t);
                model.push_back((i, t));
            }
            Op::Bounded(i, t, max) => {
                ids.push_bounded(&i, t, max);
                if model.len() >= max {
                    model.pop_front();
                }
                model.push_back((i, t));
            }
            Op::Pop => {
                ids.pop_front();
                model.pop_front();
            }
            Op::Clear => {
                ids.clear();
                model.clear();
            }
            Op::RetainBelow(n) => {
                ids.retain(|_, t| t < n);
                model.retain(|(_, t)| *t < n);
            }
        }
    }
    (ids, model)
}

proptest! {
    #[test]
    fn holds_what_a_deque_holds(ops in proptest::collection::vec(op(), 0..60), probe in id()) {
        let (ids, model) = run(&ops);
        prop_assert_eq!(ids.len(), model.len());
        prop_assert_eq!(ids.is_empty(), model.is_empty());
        let got: Vec<(&str, u64)> = ids.iter().collect();
        let want: Vec<(&str, u64)> = model.iter().map(|(i, t)| (i.as_str(), *t)).collect();
        prop_assert_eq!(&got, &want);
        let back: Vec<(&str, u64)> = ids.iter().rev().collect();
        prop_assert_eq!(back, want.iter().rev().copied().collect::<Vec<_>>());
        for (i, _) in model.iter().map(|(i, t)| (i.as_str(), t)).chain([(probe.as_str(), &0)]) {
            prop_assert_eq!(ids.contains(i), model.iter().any(|(m, _)| m == i));
            prop_assert_eq!(ids.find(i), model.iter().find(|(m, _)| m == i).map(|(_, t)| *t));
        }
        // Compaction keeps the arena within twice the live bytes (plus
        // the newest id, pushed after the last pop).
        let live: usize = model.iter().map(|(i, _)| i.len()).sum();
        prop_assert!(ids.arena.len() <= 2 * live + model.back().map_or(0, |(i, _)| i.len()) + 1);
    }

    /// Written as the deque was, byte for byte, and read back alike.
    #[test]
    fn its_json_is_the_deques(ops in proptest::collection::vec(op(), 0..30)) {
        let (ids, model) = run(&ops);
        let json = serde_json::to_string(&ids).unwrap();
        prop_assert_eq!(&json, &serde_json::to_string(&model).unwrap());
        prop_assert_eq!(&serde_json::from_str::<Ids<u64>>(&json).unwrap(), &ids);
        let names: VecDeque<String> = model.iter().map(|(i, _)| i.clone()).collect();
        let mut plain = Ids::<()>::new();
        for i in &names {
            plain.push_back(i, ());
        }
        let json = serde_json::to_string(&plain).unwrap();
        prop_assert_eq!(&json, &serde_json::to_string(&names).unwrap());
        prop_assert_eq!(&serde_json::from_str::<Ids<()>>(&json).unwrap(), &plain);
    }

    /// On any bytes, serde reads an `Ids` where it read the deque, the same.
    #[test]
    fn serde_accepts_and_refuses_as_for_the_deque(
        ops in proptest::collection::vec(op(), 0..8),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..16, 0u8..3), 0..3),
    ) {
        let (_, model) = run(&ops);
        let mut json = serde_json::to_vec(&model).unwrap();
        for (at, byte, kind) in edits {
            let i = at.index(json.len() + 1);
            let byte = b"[]{}\",:019\\ anul"[byte];
            match kind {
                0 if i < json.len() => json[i] = byte,
                1 if i < json.len() => { json.remove(i); }
                _ => json.insert(i, byte),
            }
        }
        let want = serde_json::from_slice::<VecDeque<(String, u64)>>(&json).ok();
        let got = serde_json::from_slice::<Ids<u64>>(&json).ok();
        prop_assert_eq!(got.map(|g| g.iter().map(|(i, t)| (i.to_string(), t)).collect::<VecDeque<_>>()), want);
        let want = serde_json::from_slice::<VecDeque<String>>(&json).ok();
        let got = serde_json::from_slice::<Ids<()>>(&json).ok();
        prop_assert_eq!(got.map(|g| g.iter().map(|(i, ())| i.to_string()).collect::<VecDeque<_>>()), want);
    }
}

#[test]
fn a_full_fifo_compacts_and_keeps_the_newest() {
    let mut ids = Ids::new();
    for n in 0..10_000u64 {
        ids.push_bounded(&format!("id-{n}"), n, 256);
    }
    assert_eq!(ids.len(), 256);
    assert_eq!(ids.iter().next(), Some(("id-9744", 9744)));
    assert_eq!(ids.iter().next_back(), Some(("id-9999", 9999)));
    assert!(ids.arena.len() <= 2 * 256 * 7 + 7);
}
