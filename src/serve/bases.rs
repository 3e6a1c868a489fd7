//! The versions a diff can be taken against: file texts the server sent,
//! in its memory only (never on disk: README's promise), bounded in count
//! and bytes, least recently used out.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// At most this many texts are kept.
pub const MAX_BASES: usize = 1024;
/// At most this many bytes of text are kept.
pub const MAX_BASE_BYTES: usize = 64 * 1024 * 1024;
/// The versions of one key a read tries as a base, newest first.
pub const MAX_TRIES: usize = 3;

#[derive(Debug)]
pub struct Bases {
    /// (key, version) → text and when last used.
    map: HashMap<(String, String), (Arc<str>, u64)>,
    /// Last use → (key, version): the order of eviction.
    order: BTreeMap<u64, (String, String)>,
    bytes: usize,
    tick: u64,
    max_count: usize,
    max_bytes: usize,
}

impl Default for Bases {
    fn default() -> Bases {
        Bases::with_caps(MAX_BASES, MAX_BASE_BYTES)
    }
}

impl Bases {
    pub fn with_caps(max_count: usize, max_bytes: usize) -> Bases {
        Bases { map: HashMap::new(), order: BTreeMap::new(), bytes: 0, tick: 0, max_count, max_bytes }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keep `text` as `version` of `key` (or mark it used).
    pub fn put(&mut self, key: &str, version: &str, text: &str) {
        if text.len() > self.max_bytes {
            return;
        }
        self.tick += 1;
        let k = (key.to_string(), version.to_string());
        match self.map.get_mut(&k) {
            Some((_, used)) => {
                self.order.remove(used);
                *used = self.tick;
            }
            None => {
                self.bytes += text.len();
                self.map.insert(k.clone(), (Arc::from(text), self.tick));
            }
        }
        self.order.insert(self.tick, k);
        while self.map.len() > self.max_count || self.bytes > self.max_bytes {
            let Some((_, old)) = self.order.pop_first() else { break };
            if let Some((t, _)) = self.map.remove(&old) {
                self.bytes -= t.len();
            }
        }
    }

    /// Other versions of `key` kept, most recently used first, at most
    /// [`MAX_TRIES`].
    pub fn candidates(&self, key: &str, except: &str) -> Vec<(String, Arc<str>)> {
        let mut v: Vec<(u64, String, Arc<str>)> = self
            .map
            .iter()
            .filter(|((k, ver), _)| k == key && ver != except)
            .map(|((_, ver), (t, used))| (*used, ver.clone(), t.clone()))
            .collect();
        v.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
        v.into_iter().take(MAX_TRIES).map(|(_, ver, t)| (ver, t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_within_count_and_bytes() {
        let mut b = Bases::with_caps(3, 100);
        b.put("a", "1", "x");
        b.put("a", "2", "yy");
        b.put("b", "1", "z");
        b.put("a", "1", "x"); // used again: b/1 is now the oldest but a/2
        b.put("c", "1", "w");
        assert_eq!(b.len(), 3);
        assert!(b.candidates("a", "-").iter().all(|(v, _)| v == "1"), "a/2 was least recently used");
        assert_eq!(b.candidates("a", "1").len(), 0);
        // Bytes: a big text pushes out the oldest until it fits.
        b.put("d", "1", &"q".repeat(99));
        assert!(b.bytes() <= 100);
        assert_eq!(b.candidates("d", "-")[0].1.len(), 99);
        // Larger than the whole cap: not kept at all.
        b.put("e", "1", &"q".repeat(101));
        assert!(b.candidates("e", "-").is_empty());
        // Newest first, at most MAX_TRIES.
        let mut b = Bases::default();
        for v in 0..10 {
            b.put("k", &v.to_string(), "t");
        }
        let c: Vec<String> = b.candidates("k", "9").into_iter().map(|(v, _)| v).collect();
        assert_eq!(c, ["8", "7", "6"]);
    }

    #[test]
    fn the_cap_holds_with_ten_thousand_files() {
        let mut b = Bases::default();
        let text = "fn f() {}\n".repeat(50);
        for i in 0..10_000 {
            b.put(&format!("/ws/f{i}.rs"), "v1", &text);
            assert!(b.len() <= MAX_BASES && b.bytes() <= MAX_BASE_BYTES);
        }
        assert_eq!(b.len(), MAX_BASES);
        assert_eq!(b.bytes(), MAX_BASES * text.len());
        // The newest are the ones kept.
        assert_eq!(b.candidates("/ws/f9999.rs", "-").len(), 1);
        assert!(b.candidates("/ws/f0.rs", "-").is_empty());
        assert_eq!(b.map.len(), b.order.len());
    }
}
