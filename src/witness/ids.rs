//! A bounded FIFO of ids (prompt uuids, tool-use ids) held in one byte
//! arena, not one `String` each: a one-shot `leanctx stub` reads up to
//! 256 prompts and 2,048 tool uses from the witness's state file, and one
//! allocation and copy per id was most of that read (callgrind,
//! benches/README.md "Sixth pass").
//!
//! [`Ids<u64>`] (an id and where it was seen) is written as serde wrote a
//! `VecDeque<(String, u64)>`, `[["id",123],…]`; [`Ids<()>`] as a
//! `VecDeque<String>`, `["id",…]`: older binaries and older state files
//! read the same. Equality is of the ids in order, not of the arena.

use serde::de::{SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;

/// Ids, oldest first, each with a `T` (`u64`: an offset; `()`: nothing).
#[derive(Clone, Default)]
pub struct Ids<T> {
    /// Every live id's bytes, and the dead ones before them (popped, not
    /// yet compacted away).
    arena: String,
    /// Each id: its start in `arena`, its length, its `T`.
    spans: VecDeque<(usize, usize, T)>,
}

impl<T: Copy> Ids<T> {
    pub fn new() -> Self {
        Ids { arena: String::new(), spans: VecDeque::new() }
    }

    /// Room for `n` ids of `bytes` bytes in all.
    pub fn with_capacity(n: usize, bytes: usize) -> Self {
        Ids { arena: String::with_capacity(bytes), spans: VecDeque::with_capacity(n) }
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub fn clear(&mut self) {
        self.arena.clear();
        self.spans.clear();
    }

    pub fn push_back(&mut self, id: &str, t: T) {
        self.spans.push_back((self.arena.len(), id.len(), t));
        self.arena.push_str(id);
    }

    /// Push, dropping the oldest first when `max` are held.
    pub fn push_bounded(&mut self, id: &str, t: T, max: usize) {
        if self.len() >= max {
            self.pop_front();
        }
        self.push_back(id, t);
    }

    pub fn pop_front(&mut self) {
        if self.spans.pop_front().is_none() {
            return;
        }
        let live = self.spans.front().map_or(self.arena.len(), |s| s.0);
        // The dead prefix is dropped once it is most of the arena: each
        // byte is moved at most about once per id pushed (amortized O(1)).
        if live * 2 > self.arena.len() {
            self.arena.drain(..live);
            for s in &mut self.spans {
                s.0 -= live;
            }
        }
    }

    /// Keep the ids for which `keep` says so, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, T) -> bool) {
        let mut out = Ids::with_capacity(self.len(), self.arena.len());
        for (id, t) in self.iter() {
            if keep(id, t) {
                out.push_back(id, t);
            }
        }
        *self = out;
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, T)> + ExactSizeIterator + '_ {
        self.spans.iter().map(|&(at, n, t)| (&self.arena[at..at + n], t))
    }

    /// The `T` of the oldest `id` held.
    pub fn find(&self, id: &str) -> Option<T> {
        self.iter().find(|(i, _)| *i == id).map(|(_, t)| t)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.iter().any(|(i, _)| i == id)
    }
}

impl<T: Copy + PartialEq> PartialEq for Ids<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<T: Copy + Eq> Eq for Ids<T> {}

impl<T: Copy + fmt::Debug> fmt::Debug for Ids<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Ids<u64> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for pair in self.iter() {
            seq.serialize_element(&pair)?;
        }
        seq.end()
    }
}

impl Serialize for Ids<()> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for (id, ()) in self.iter() {
            seq.serialize_element(id)?;
        }
        seq.end()
    }
}

/// Reads a sequence of `E`, each made an id by `F`, as serde read the
/// `VecDeque` it replaces (the same elements accepted and refused).
struct SeqOf<E, T>(PhantomData<(E, T)>);

trait Element<'de, T>: Deserialize<'de> {
    fn push(self, ids: &mut Ids<T>);
}

impl<'de> Element<'de, u64> for (String, u64) {
    fn push(self, ids: &mut Ids<u64>) {
        ids.push_back(&self.0, self.1);
    }
}

impl<'de> Element<'de, ()> for String {
    fn push(self, ids: &mut Ids<()>) {
        ids.push_back(&self, ());
    }
}

impl<'de, E: Element<'de, T>, T: Copy> Visitor<'de> for SeqOf<E, T> {
    type Value = Ids<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ids<T>, A::Error> {
        let mut ids = Ids::new();
        while let Some(e) = seq.next_element::<E>()? {
            e.push(&mut ids);
        }
        Ok(ids)
    }
}

impl<'de> Deserialize<'de> for Ids<u64> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(SeqOf::<(String, u64), u64>(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Ids<()> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(SeqOf::<String, ()>(PhantomData))
    }
}

#[cfg(test)]
mod tests;
