//! Keyed BLAKE3 of inputs that fit one chunk (1 KiB), in plain Rust. The
//! `blake3` crate picks its SIMD code by asking the CPU (`cpuid`, three
//! times) on its first use in a process: under a hypervisor each one traps
//! to it (~5 µs here on KVM, ~10 µs at bench load), and every gated hook
//! and CLI read seals a few short strings with the data dir's secret
//! (`state::secret`), where SIMD buys nothing. Longer inputs go to the
//! crate. A test holds both to the same digests.

/// Inputs up to this many bytes (one BLAKE3 chunk) are hashed here.
pub const SHORT_MAX: usize = 1024;

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const PERMUTE: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
const CHUNK_START: u32 = 1;
const CHUNK_END: u32 = 2;
const ROOT: u32 = 8;
const KEYED_HASH: u32 = 16;

/// `blake3::keyed_hash(key, input)` for `input` of at most [`SHORT_MAX`]
/// bytes; `None` for a longer one.
pub fn keyed_hash(key: &[u8; 32], input: &[u8]) -> Option<[u8; 32]> {
    if input.len() > SHORT_MAX {
        return None;
    }
    let mut cv = words(key);
    let n = input.len().div_ceil(64).max(1);
    let mut out = [0u32; 16];
    for i in 0..n {
        let part = &input[(i * 64).min(input.len())..((i + 1) * 64).min(input.len())];
        let mut block = [0u8; 64];
        block[..part.len()].copy_from_slice(part);
        let mut flags = KEYED_HASH;
        if i == 0 {
            flags |= CHUNK_START;
        }
        if i == n - 1 {
            flags |= CHUNK_END | ROOT;
        }
        out = compress(&cv, &block, part.len() as u32, flags);
        cv.copy_from_slice(&out[..8]);
    }
    let mut digest = [0u8; 32];
    for (d, w) in digest.chunks_exact_mut(4).zip(&out[..8]) {
        d.copy_from_slice(&w.to_le_bytes());
    }
    Some(digest)
}

/// `blake3::keyed_hash(key, input)` for any length: here when it fits one
/// chunk, else by the crate (whose probe is then paid once).
pub fn keyed(key: &[u8; 32], input: &[u8]) -> [u8; 32] {
    keyed_hash(key, input).unwrap_or_else(|| *blake3::keyed_hash(key, input).as_bytes())
}

fn words<const N: usize>(bytes: &[u8]) -> [u32; N] {
    let mut w = [0u32; N];
    for (w, c) in w.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes(c.try_into().expect("4 bytes"));
    }
    w
}

/// The compression function, chunk counter 0 (one chunk only).
fn compress(cv: &[u32; 8], block: &[u8; 64], len: u32, flags: u32) -> [u32; 16] {
    let mut m: [u32; 16] = words(block);
    let mut s = [cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7], IV[0], IV[1], IV[2], IV[3], 0, 0, len, flags];
    for r in 0..7 {
        g(&mut s, 0, 4, 8, 12, m[0], m[1]);
        g(&mut s, 1, 5, 9, 13, m[2], m[3]);
        g(&mut s, 2, 6, 10, 14, m[4], m[5]);
        g(&mut s, 3, 7, 11, 15, m[6], m[7]);
        g(&mut s, 0, 5, 10, 15, m[8], m[9]);
        g(&mut s, 1, 6, 11, 12, m[10], m[11]);
        g(&mut s, 2, 7, 8, 13, m[12], m[13]);
        g(&mut s, 3, 4, 9, 14, m[14], m[15]);
        if r < 6 {
            m = PERMUTE.map(|i| m[i]);
        }
    }
    for i in 0..8 {
        s[i] ^= s[i + 8];
        s[i + 8] ^= cv[i];
    }
    s
}

fn g(s: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize, x: u32, y: u32) {
    s[a] = s[a].wrapping_add(s[b]).wrapping_add(x);
    s[d] = (s[d] ^ s[a]).rotate_right(16);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_right(12);
    s[a] = s[a].wrapping_add(s[b]).wrapping_add(y);
    s[d] = (s[d] ^ s[a]).rotate_right(8);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_right(7);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_length_of_a_chunk_agrees_with_blake3() {
        let key: [u8; 32] = std::array::from_fn(|i| (i * 7 + 1) as u8);
        let data: Vec<u8> = (0..SHORT_MAX + 64).map(|i| (i * 131 % 251) as u8).collect();
        for n in 0..=SHORT_MAX {
            assert_eq!(keyed_hash(&key, &data[..n]), Some(*blake3::keyed_hash(&key, &data[..n]).as_bytes()), "{n}");
        }
        assert_eq!(keyed_hash(&key, &data[..SHORT_MAX + 1]), None);
        // `keyed` is the same function on both sides of the bound.
        for n in [0, SHORT_MAX, SHORT_MAX + 1, SHORT_MAX + 64] {
            assert_eq!(keyed(&key, &data[..n]), *blake3::keyed_hash(&key, &data[..n]).as_bytes(), "{n}");
        }
    }

    proptest! {
        #[test]
        fn random_keys_and_inputs_agree_with_blake3(
            key in proptest::array::uniform32(any::<u8>()),
            input in proptest::collection::vec(any::<u8>(), 0..=SHORT_MAX),
        ) {
            prop_assert_eq!(keyed_hash(&key, &input), Some(*blake3::keyed_hash(&key, &input).as_bytes()));
        }
    }
}
