//! The digest's index keys: a 64-bit FNV-1a of the key's parts. A collision
//! only adds lines to a bucket; every answer is checked on the parsed line.

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
