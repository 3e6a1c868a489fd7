//! Byte search with no CPU probe. The `memchr` crate's top-level functions
//! (`memchr::memchr`, `memchr2`, `memchr_iter`, …) choose AVX2 or SSE2 by
//! asking the CPU on their first call in a process, through std's feature
//! detection: nine `cpuid`, each a trap to the hypervisor under a VM
//! (5–25 µs each here, benches/README.md), more than the witness's whole
//! read of 100 KB of transcript in a one-shot `leanctx stub`. SSE2 is part
//! of every x86_64 CPU, so its searcher needs no probe; on other
//! architectures the crate's choice is made at compile time. Every byte
//! search of the hot paths goes through here (a test in tests/it/startup.rs
//! holds the source to it).

/// The first `needle` in `hay`.
#[inline]
pub fn find(needle: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        match memchr::arch::x86_64::sse2::memchr::One::new(needle) {
            Some(s) => s.find(hay),
            // Only when built without SSE2: the portable search.
            None => memchr::arch::all::memchr::One::new(needle).find(hay),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        memchr::memchr(needle, hay)
    }
}

/// The last `needle` in `hay`.
#[inline]
pub fn rfind(needle: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        match memchr::arch::x86_64::sse2::memchr::One::new(needle) {
            Some(s) => s.rfind(hay),
            None => memchr::arch::all::memchr::One::new(needle).rfind(hay),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        memchr::memrchr(needle, hay)
    }
}

/// The first `a` or `b` in `hay`.
#[inline]
pub fn find2(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        match memchr::arch::x86_64::sse2::memchr::Two::new(a, b) {
            Some(s) => s.find(hay),
            None => memchr::arch::all::memchr::Two::new(a, b).find(hay),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        memchr::memchr2(a, b, hay)
    }
}

/// Every position of `needle` in `hay`, in order.
pub fn positions(needle: u8, hay: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let i = at + find(needle, hay.get(at..)?)?;
        at = i + 1;
        Some(i)
    })
}

/// `text.lines()` (each line without its `\n` or `\r\n`; no empty last
/// line after a final newline; a last line with neither kept whole), its
/// line ends found by [`find`]: std's `str::lines` searches a word at a
/// time, ~2.3 instructions a byte, a third of a one-shot reader's fold of
/// a 50 KB journal (callgrind, benches/README.md).
pub fn lines(text: &str) -> impl Iterator<Item = &str> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match find(b'\n', rest.as_bytes()) {
            // A '\n' is ASCII: both cuts are on char boundaries. As std,
            // a '\r' goes only with the '\n' after it.
            Some(i) => {
                let line = &rest[..i];
                rest = &rest[i + 1..];
                Some(line.strip_suffix('\r').unwrap_or(line))
            }
            None => Some(std::mem::take(&mut rest)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held to a byte loop at every length and needle position up to past
    /// two SSE2 blocks' unrolled loop (64 bytes), and on random input.
    #[test]
    fn agrees_with_a_byte_loop() {
        let naive = |hay: &[u8], set: &[u8]| hay.iter().position(|b| set.contains(b));
        let all = |hay: &[u8], n: u8| {
            hay.iter().enumerate().filter(|(_, b)| **b == n).map(|(i, _)| i).collect::<Vec<usize>>()
        };
        let mut hays: Vec<Vec<u8>> = Vec::new();
        for len in 0..200 {
            hays.push(vec![b'x'; len]);
            for at in 0..len {
                let mut h = vec![b'x'; len];
                h[at] = b'"';
                hays.push(h.clone());
                h[len - 1 - at] = b'\\';
                hays.push(h);
            }
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 40) as usize % 700;
            let h: Vec<u8> = (0..len)
                .map(|i| {
                    let r = seed.rotate_left(i as u32 % 64) ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
                    [b'"', b'\\', b'\n', 0, b'a', 0xff][(r >> 7) as usize % 6]
                })
                .collect();
            hays.push(h);
        }
        for h in &hays {
            for n in [b'"', b'\\', b'\n', 0, 0xff, b'q'] {
                assert_eq!(find(n, h), naive(h, &[n]), "{n} in {h:?}");
                assert_eq!(rfind(n, h), h.iter().rposition(|b| *b == n), "{n} in {h:?}");
                assert_eq!(positions(n, h).collect::<Vec<_>>(), all(h, n), "{n} in {h:?}");
            }
            assert_eq!(find2(b'"', b'\\', h), naive(h, b"\"\\"), "{h:?}");
            assert_eq!(find2(b'\n', 0, h), naive(h, b"\n\0"), "{h:?}");
        }
    }

    /// The same lines as `str::lines`, on the edge cases and random text of
    /// line ends, carriage returns and multi-byte chars.
    #[test]
    fn lines_agree_with_str_lines() {
        let mut texts: Vec<String> =
            ["", "\n", "\n\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "\r", "\r\n", "a\r", "\r\r\n", "é\nü\r\n"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 40) as usize % 200;
            texts.push(
                (0..len)
                    .map(|i| ['\n', '\r', 'a', '\t', 'é', ' '][(seed.rotate_left(i as u32 % 64) >> 5) as usize % 6])
                    .collect(),
            );
        }
        for t in &texts {
            assert_eq!(lines(t).collect::<Vec<_>>(), t.lines().collect::<Vec<_>>(), "{t:?}");
        }
    }
}
