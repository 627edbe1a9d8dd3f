//! What veballoc's benchmark kernels (`entry.rs`, on the GPU) and the host harness (`bench/`,
//! and its CPU model of the same tests) must agree on: the check pattern, the per-thread random
//! draws, the probability scale, the counter layouts and the churn's size law. One definition,
//! so that the CPU model and the GPU cannot drift apart.

use crate::mix;

/// Multiplier of the check pattern's tag.
pub const PATTERN_MUL: u32 = 0x9e37_79b9;

/// The word thread `i` writes (and later checks) in its allocation, for `tag` (a round, or the
/// allocation's size).
#[inline(always)]
pub const fn pattern(i: u64, tag: u64) -> u32 {
    (i as u32) ^ (tag as u32).wrapping_mul(PATTERN_MUL)
}

/// Bits of the round (or batch) in a per-thread seed: rounds never collide with thread
/// indices below 2^40.
pub const ROUND_SEED_SHIFT: u32 = 40;

/// Thread `i`'s random bits in round `round` of a run seeded with `seed`.
#[inline(always)]
pub fn round_draw(seed: u64, i: u64, round: u64) -> u64 {
    mix(seed ^ mix(i ^ (round << ROUND_SEED_SHIFT)))
}

/// Probabilities are thresholds on this many random bits.
pub const PROB_BITS: u32 = 32;
/// The threshold that always passes.
pub const PROB_ONE: u64 = 1 << PROB_BITS;
/// The random bits compared with a threshold.
pub const PROB_MASK: u64 = PROB_ONE - 1;

/// Words between two per-multiprocessor counters of the floors: 128 bytes, one L2 line each,
/// so that no two multiprocessors' atomics meet on a line.
pub const FLOOR_COUNTER_STRIDE: u64 = 16;

/// `util_fill`'s counters: bytes served, requests served, nulls.
pub mod util_counter {
    pub const BYTES: usize = 0;
    pub const SERVED: usize = 1;
    pub const NULLS: usize = 2;
    /// Number of counters.
    pub const COUNT: usize = 3;
}

/// `churn_round`'s counters (u64 words): live requested bytes and live allocations (wrapping
/// sums of + on malloc and - on free), nulls, bad words, segment runs served, and the live
/// bytes when the first null came (the host sets it to `NO_NULL`; the first null writes it).
pub mod churn_counter {
    pub const LIVE_BYTES: usize = 0;
    pub const LIVE_COUNT: usize = 1;
    pub const NULLS: usize = 2;
    pub const BAD_WORDS: usize = 3;
    pub const RUNS: usize = 4;
    pub const FIRST_NULL_LIVE: usize = 5;
    /// Number of counters.
    pub const COUNT: usize = 6;
    /// `FIRST_NULL_LIVE` before any null.
    pub const NO_NULL: u64 = u64::MAX;
}

/// The churn's size law, as the words `churn_round` reads: smallest exponent, number of
/// exponents (a request of the main law is uniform in [2^e, 2^(e+1)) with e uniform in
/// e0..e0+exponents), odds (one request in `odds` is a segment run), run bounds.
pub mod churn_law {
    pub const E0: usize = 0;
    pub const EXPONENTS: usize = 1;
    pub const RUN_ODDS: usize = 2;
    pub const RUN_LO: usize = 3;
    pub const RUN_HI: usize = 4;
    /// Number of words.
    pub const WORDS: usize = 5;
}

/// The churn's request size from random bits `r` and the law's words (`exponents > 0`,
/// `odds > 0`, `run_lo <= run_hi`).
#[inline(always)]
pub fn churn_size(r: u64, law: &[u64; churn_law::WORDS]) -> u64 {
    use churn_law::*;
    if r.is_multiple_of(law[RUN_ODDS]) {
        law[RUN_LO] + (r >> 20) % (law[RUN_HI] - law[RUN_LO] + 1)
    } else {
        let e = law[E0] + (r >> 16) % law[EXPONENTS];
        (1u64 << e) + (r >> 24) % (1u64 << e)
    }
}
