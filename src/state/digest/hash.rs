//! The digest's index keys: a 64-bit FNV-1a of the key's parts. A collision
//! only adds lines to a bucket; every answer is checked on the parsed line.
//! And the hasher of its maps keyed by conversation ([`ByStr`]).

use std::collections::HashMap;

#[cfg(test)]
thread_local! {
    /// Tests: every key hashes alike, so each index bucket holds every line
    /// of its kind and only the checks on the parsed lines tell them apart.
    pub(super) static COLLIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub(super) fn hash_of(parts: &[&str]) -> u64 {
    #[cfg(test)]
    if COLLIDE.get() {
        return 7;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.as_bytes().iter().chain(&[0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Maps keyed by [`hash_of`] values: the key is already a hash.
pub(super) type ByHash<V> = HashMap<u64, V, std::hash::BuildHasherDefault<KeyIsHash>>;

#[derive(Default)]
pub(super) struct KeyIsHash(u64);

impl std::hash::Hasher for KeyIsHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Maps keyed by a conversation id (or another short string of the
/// journal), hashed eight bytes at a time ([`Words`]).
///
/// Why not std's default (SipHash-1-3, randomly keyed): a one-shot CLI
/// process folds the whole journal, and every sighting and compaction line
/// looked its conversation up twice: SipHash of a 36-byte id was ~250
/// instructions, ~250k of a `stub` question's 1.13M at a journal of 77 KB
/// (callgrind, benches/README.md). A collision only costs a key compare
/// (the map compares keys); the keys are the journal's own, written by the
/// user's hooks and bounded by the trim, so flooding one bucket is not a
/// threat worth SipHash's price here. Iteration order was random per process
/// with std's keys already: nothing may depend on it.
pub(super) type ByStr<V> = HashMap<String, V, std::hash::BuildHasherDefault<Words>>;

/// A multiply-rotate hash over 64-bit words with a final mix (the finish
/// spreads every input bit to the low bits, which pick the bucket, and the
/// high ones, which the table compares first).
#[derive(Default)]
pub(super) struct Words(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Words {
    fn word(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(26) ^ w).wrapping_mul(K);
    }
}

impl std::hash::Hasher for Words {
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in chunks.by_ref() {
            self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            // The length tells "ab" from "ab\0".
            self.word(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }
    fn write_u8(&mut self, b: u8) {
        self.word(u64::from(b) | 0x100);
    }
}
