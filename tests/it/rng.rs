//! A small seeded random generator for the randomized suites (crash, sim,
//! sim_ledger, security's generated names; fuzz seeds proptest from here),
//! so a failing run can be replayed from the seed it prints.

#![allow(dead_code)]

/// SplitMix64: tiny, fast, good enough to drive test schedules.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// A base seed: `LEANCTX_SEED` if set (to replay), else from the clock.
/// Printed, so every run says how to reproduce it.
pub fn base_seed(suite: &str) -> u64 {
    let seed = std::env::var("LEANCTX_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    println!("{suite}: seed {seed} (replay with LEANCTX_SEED={seed})");
    seed
}

/// The seeds of a randomized suite: the `fixed` ones (CI's runs are
/// reproducible) and one fresh seed from the clock, printed; with
/// `LEANCTX_SEED=S` set, S alone (a replay).
pub fn seeds(suite: &str, fixed: &[u64]) -> Vec<u64> {
    if let Some(s) = std::env::var("LEANCTX_SEED").ok().and_then(|s| s.trim().parse().ok()) {
        println!("{suite}: replaying seed {s}");
        return vec![s];
    }
    let fresh = base_seed(suite);
    println!("{suite}: fixed seeds {fixed:?} and fresh seed {fresh}");
    fixed.iter().copied().chain(std::iter::once(fresh)).collect()
}

/// `true` when the big runs are asked for (`LEANCTX_STRESS=1`).
pub fn stress() -> bool {
    std::env::var("LEANCTX_STRESS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// A count: `var` if set, else `big` under `LEANCTX_STRESS=1`, else `small`.
pub fn count(var: &str, small: u64, big: u64) -> u64 {
    std::env::var(var).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(if stress() { big } else { small })
}
