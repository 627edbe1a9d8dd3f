//! A van Emde Boas-style tree of 64-bit words: the free set of segments, and of each class's
//! blocks.
//!
//! Level 0 holds one bit per index (set = free). A bit of level L+1 summarises one word of
//! level L (set = that word may be non-zero). Every node is one word updated with one atomic,
//! so there is no lock and no min/max field to keep coherent. Successor search walks up and
//! down the summaries and always finds the lowest free index at or after `x`, which is what
//! keeps the heap packed at low addresses.
//!
//! Concurrency contract: summaries may hold stale *positives* (a set bit over an empty word;
//! the search steps past them) but never a lasting false *negative*: a remover that empties a
//! word clears the parent bit and then re-reads the word, and sets the bit again if an insert
//! raced with it. Between that clear and that re-set (a "clear window") a summary can hide an
//! index that an insert has already made free, so every window is counted (started, ended):
//! a search that finds nothing through the summaries while a window may have overlapped it
//! repeats itself over the leaves, which are always exact. So "nothing free" means that every
//! index was seen taken, and an index freed before a search began is never missed.

use crate::atomic::{Atom32, Atom64};

/// Bits in one node.
pub const WORD_BITS: u64 = 64;
/// Enough levels for 64^6 = 2^36 indices (one segment per 16 MiB of 1 EiB).
pub const MAX_LEVELS: usize = 6;
/// Lost races within one leaf word (another claimer took the bit first) before a claim moves
/// on to the next word: each loss means some bit of the word was taken, so this bounds the
/// work per word without ever giving up on the words after it.
pub const WORD_CLAIM_TRIES: u32 = WORD_BITS as u32;
/// Leaf words `insert_range` updates before it looks at their old values (their RMWs overlap).
pub const INSERT_BATCH_WORDS: usize = 4;
/// Lost races for a run at one start index before a run claim moves past that start.
pub const RUN_CLAIM_TRIES: u32 = 8;
/// Words after the levels: the clear-window counters (started, ended).
pub const WINDOW_WORDS: u32 = 2;
/// Searches through the summaries that a clear window may overlap before a search falls back
/// to scanning the leaves (which costs a load per 64 indices: 2048 loads for the 16-byte
/// class of an 8 GiB heap). Each retry first waits for the windows open at that moment to end.
pub const QUIET_SEARCH_TRIES: u32 = 4;
/// Sleeps a search waits for open clear windows to end (each is a few atomics) before it
/// searches again anyway.
pub const WINDOW_WAIT_ROUNDS: u32 = 16;

/// Where each level of a tree lives, in words from the tree's first word.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VebLayout {
    /// Number of indices (bits of level 0).
    pub universe: u64,
    /// Levels in use; the top one is a single word.
    pub levels: u32,
    /// Words in the whole tree.
    pub total_words: u32,
    /// Word offset of each level (level 0 = leaves).
    pub offset: [u32; MAX_LEVELS],
    /// Words in each level.
    pub words: [u32; MAX_LEVELS],
}

impl VebLayout {
    /// Layout for `universe` indices.
    pub const fn new(universe: u64) -> Self {
        let mut offset = [0u32; MAX_LEVELS];
        let mut words = [0u32; MAX_LEVELS];
        let mut n = universe;
        let mut level = 0;
        let mut total = 0u32;
        loop {
            let w = n.div_ceil(WORD_BITS) as u32;
            offset[level] = total;
            words[level] = w;
            total += w;
            level += 1;
            if w <= 1 || level == MAX_LEVELS {
                break;
            }
            n = w as u64;
        }
        assert!(words[level - 1] <= 1, "universe too large for MAX_LEVELS");
        Self { universe, levels: level as u32, total_words: total + WINDOW_WORDS, offset, words }
    }

    /// Word offset of the clear-window counters (after the last level).
    #[inline(always)]
    pub const fn window_off(&self) -> u32 {
        self.total_words - WINDOW_WORDS
    }

    /// Layout for `universe` indices, or `None` when `MAX_LEVELS` levels of 64-bit words
    /// cannot summarise that many (more than 64^6 = 2^36), where `new` panics.
    pub const fn try_new(universe: u64) -> Option<Self> {
        if universe > WORD_BITS.pow(MAX_LEVELS as u32) {
            None
        } else {
            Some(Self::new(universe))
        }
    }

    /// Number of bits at `level`.
    #[inline(always)]
    pub const fn bits(&self, level: u32) -> u64 {
        if level == 0 {
            self.universe
        } else {
            self.words[level as usize - 1] as u64
        }
    }
}

/// Mask of the bits of word `w` that fall in `[start, end)`.
#[inline(always)]
fn range_mask(w: u64, start: u64, end: u64) -> u64 {
    let lo = start.max(w * WORD_BITS) - w * WORD_BITS;
    let hi = end.min((w + 1) * WORD_BITS) - w * WORD_BITS;
    let upper = if hi == WORD_BITS { !0 } else { (1u64 << hi) - 1 };
    upper & !((1u64 << lo) - 1)
}

/// One set bit of `avail` (non-zero): the first at or after position `spread`, wrapping.
#[inline(always)]
fn pick_bit(avail: u64, spread: u32) -> u64 {
    let rotated = avail.rotate_right(spread);
    1u64 << ((rotated.trailing_zeros() + spread) % WORD_BITS as u32)
}

/// Up to `k` consecutive set bits of `avail` (non-zero): from the first at or after position
/// `spread` (wrapping) up, never past bit 63 (`pick_bit` for `k == 1`). Consecutive, so that
/// a slot can take them as one run of blocks.
#[inline(always)]
fn pick_bits(avail: u64, spread: u32, k: u32) -> u64 {
    run_from(avail, pick_bit(avail, spread).trailing_zeros(), k)
}

/// Up to `k` consecutive set bits of `avail` from its set bit `first` up, never past bit 63.
#[inline(always)]
fn run_from(avail: u64, first: u32, k: u32) -> u64 {
    let ones = (!(avail >> first)).trailing_zeros().min(k);
    let run = if ones >= 64 { u64::MAX } else { (1u64 << ones) - 1 };
    run << first
}

/// The `n`-th set bit of `x` (from 0, lowest first), `n` below `x.count_ones()`: a binary
/// search over halves, six steps.
#[inline(always)]
fn nth_set_bit(x: u64, n: u32) -> u32 {
    let (mut x, mut n, mut pos) = (x, n, 0);
    let mut width = WORD_BITS as u32 / 2;
    while width > 0 {
        let low = x & ((1u64 << width) - 1);
        let c = low.count_ones();
        if n >= c {
            (n, x, pos) = (n - c, x >> width, pos + width);
        } else {
            x = low;
        }
        width /= 2;
    }
    pos
}

/// Up to `k` consecutive set bits of `avail` (non-zero) from its `skip`-th set bit (lowest
/// first, wrapping round the set bits), never past bit 63: racers that drew `skip`s of
/// consecutive ranks times `k` take the lowest bits side by side (see `try_claim_ranked`).
#[inline(always)]
fn pick_ranked(avail: u64, skip: u32, k: u32) -> u64 {
    let free = avail.count_ones();
    // A remainder by a variable, on the claim path only (not `free`'s).
    run_from(avail, nth_set_bit(avail, if skip < free { skip } else { skip % free }), k)
}

/// Racers of a ranked claim (`Veb::try_claim_ranked`) draw ranks modulo this: a claim of `k`
/// bits skips at most `(RANK_SPAN - 1) * k` free bits (wrapping round the word's free bits),
/// and up to this many racers that saw one word take distinct bits of it. Claims that come one
/// after another, not racing, take every other free bit until the ranks wrap; the skipped ones
/// go to the ranks after (16 such claims in a fresh word: its lowest 31 bits).
pub const RANK_SPAN: u32 = 16;

/// A tree over borrowed words.
#[derive(Clone, Copy)]
pub struct Veb<'a> {
    words: &'a [Atom64],
    layout: VebLayout,
    /// Trace builds only: a counter of the claims' RMWs on a leaf word that took nothing
    /// (racers took the bits first), see `with_lost_counter`.
    #[cfg(feature = "trace")]
    lost: Option<&'a Atom64>,
}

impl<'a> Veb<'a> {
    /// A tree over `words` (at least `layout.total_words` of them).
    pub fn new(words: &'a [Atom64], layout: VebLayout) -> Self {
        debug_assert!(words.len() >= layout.total_words as usize);
        Self {
            words,
            layout,
            #[cfg(feature = "trace")]
            lost: None,
        }
    }

    /// This tree, counting in `counter` every claim's `fetch_and` on a leaf word that took
    /// none of its bits (trace builds: how often a burst's claimers lose their races).
    #[cfg(feature = "trace")]
    pub fn with_lost_counter(self, counter: &'a Atom64) -> Self {
        Self { lost: Some(counter), ..self }
    }

    pub fn layout(&self) -> &VebLayout {
        &self.layout
    }

    #[inline(always)]
    fn word(&self, level: u32, i: u64) -> &Atom64 {
        &self.words[self.layout.offset[level as usize] as usize + i as usize]
    }

    /// Marks index `i` free. Returns whether it was not free before. Always an acq_rel RMW on
    /// the leaf word, also when the bit is set already: the partial-block marks rely on it
    /// (a remover that reads this insert's value sees what the inserter wrote before it, see
    /// `Slots::take_partial`), so no "already set, skip the RMW" shortcut.
    #[inline(never)]
    pub fn insert(&self, i: u64) -> bool {
        debug_assert!(i < self.layout.universe);
        self.set_bits(0, i / WORD_BITS, 1 << (i % WORD_BITS)) & (1 << (i % WORD_BITS)) == 0
    }

    /// Sets `mask` in word `w` of `level` and propagates to the summaries; returns the old word.
    fn set_bits(&self, level: u32, w: u64, mask: u64) -> u64 {
        // AcqRel: the release half publishes what the inserter wrote about the freed items
        // (block metadata, segment tables) to the claimer whose fetch_and reads this value.
        let old = self.word(level, w).fetch_or_acq_rel(mask);
        if old == 0 && level + 1 < self.layout.levels {
            self.set_up(level + 1, w);
        }
        old
    }

    /// Sets the summary bit for child word `idx` at `level` and above, stopping where a
    /// summary word was already non-zero (its own parent bit is then set, or being re-set by
    /// a remover's re-check).
    #[inline(never)]
    fn set_up(&self, mut level: u32, mut idx: u64) {
        while level < self.layout.levels {
            let w = idx / WORD_BITS;
            // AcqRel: pairs with the remover's clear-then-recheck in `clear_up`.
            let old = self.word(level, w).fetch_or_acq_rel(1 << (idx % WORD_BITS));
            if old != 0 {
                return;
            }
            level += 1;
            idx = w;
        }
    }

    /// Sets `mask` (bits for child words that became non-empty) in summary word `w` of
    /// `level`, and above it if that word was empty: `set_up` for several children at once.
    #[inline(never)]
    fn set_summary_bits(&self, level: u32, w: u64, mask: u64) {
        // AcqRel: as in set_up (pairs with the remover's clear-then-recheck in clear_up).
        let old = self.word(level, w).fetch_or_acq_rel(mask);
        if old == 0 {
            self.set_up(level + 1, w);
        }
    }

    /// The clear-window counters: windows started, windows ended.
    #[inline(always)]
    fn windows(&self) -> (&Atom64, &Atom64) {
        let o = self.layout.window_off() as usize;
        (&self.words[o], &self.words[o + 1])
    }

    /// Clears the summary bit for child word `idx` (found empty) at `level` and above, inside
    /// a counted clear window (see the module docs).
    #[inline(never)]
    fn clear_up(&self, level: u32, idx: u64) {
        let (started, ended) = self.windows();
        // AcqRel: sequenced before our summary clears (release RMWs), so a search that reads a
        // clear of ours and then fences also reads this count.
        started.fetch_add_acq_rel(1);
        self.clear_up_window(level, idx);
        // Release: our re-sets happen-before a search that acquires this count.
        ended.fetch_add_release(1);
    }

    fn clear_up_window(&self, mut level: u32, mut idx: u64) {
        while level < self.layout.levels {
            let w = idx / WORD_BITS;
            let bit = 1u64 << (idx % WORD_BITS);
            // AcqRel: if an inserter's summary set precedes this clear, we synchronise with it
            // and the re-read below sees its child bit.
            let old = self.word(level, w).fetch_and_acq_rel(!bit);
            // Acquire: re-read the child; an insert may have raced with the clear.
            if self.word(level - 1, idx).load_acquire() != 0 {
                self.set_up(level, idx);
                return;
            }
            if old & bit == 0 || old & !bit != 0 {
                return;
            }
            level += 1;
            idx = w;
        }
    }

    /// Marks index `i` used. Returns whether it was free.
    #[inline(never)]
    pub fn remove(&self, i: u64) -> bool {
        let w = i / WORD_BITS;
        let bit = 1u64 << (i % WORD_BITS);
        // AcqRel: acquire what the inserter published; release is harmless.
        let old = self.word(0, w).fetch_and_acq_rel(!bit);
        if old & bit == 0 {
            return false;
        }
        if old & !bit == 0 {
            self.clear_up(1, w);
        }
        true
    }

    /// Whether index `i` is free (a snapshot).
    pub fn contains(&self, i: u64) -> bool {
        i < self.layout.universe
            // Acquire: callers act on what a set bit promises.
            && self.word(0, i / WORD_BITS).load_acquire() & (1 << (i % WORD_BITS)) != 0
    }

    /// The clear-window counts before a search: (ended, started).
    #[inline(always)]
    fn quiet_snapshot(&self) -> (u64, u64) {
        let (started, ended) = self.windows();
        // Acquire: the re-sets of every window that had ended are visible to the search.
        let e = ended.load_acquire();
        // Acquire: read after `ended`, so equal counts mean no window was open at this point.
        (e, started.load_acquire())
    }

    /// Whether no clear window overlapped the search since `snap`: none was open at the
    /// snapshot and none started since. Then the summaries hid nothing from the search.
    #[inline(always)]
    fn stayed_quiet(&self, snap: (u64, u64)) -> bool {
        // Acquire fence: the search read summaries with relaxed loads; a clear it read was a
        // release RMW sequenced after its window's start, which this makes visible below.
        crate::arch::fence_acq_rel_gpu();
        // Relaxed: ordered by the fence above.
        snap.0 == snap.1 && self.windows().0.load_relaxed() == snap.1
    }

    /// Runs `search` through the summaries. What it finds is good at once (the common case
    /// costs nothing more). If it found nothing, that answer counts only from a search that no
    /// clear window overlapped: it searches again between two looks at the window counts,
    /// waiting for the windows open at each try to end (their re-sets are visible after that),
    /// up to `QUIET_SEARCH_TRIES` times; then once over the exact leaves.
    #[inline(always)]
    fn search_exactly<T>(&self, search: impl Fn(bool) -> Option<T>) -> Option<T> {
        if let Some(r) = search(false) {
            return Some(r);
        }
        let mut snap = self.quiet_snapshot();
        for _ in 0..QUIET_SEARCH_TRIES {
            match search(false) {
                Some(r) => return Some(r),
                None if self.stayed_quiet(snap) => return None,
                None => {}
            }
            self.wait_for_open_windows();
            snap = self.quiet_snapshot();
        }
        search(true)
    }

    /// Waits (briefly, bounded) until the clear windows open now have ended.
    #[inline(never)]
    fn wait_for_open_windows(&self) {
        let (started, ended) = self.windows();
        // Acquire: as in quiet_snapshot.
        let open = started.load_acquire();
        let mut ns = crate::BACKOFF_MIN_NS;
        for _ in 0..WINDOW_WAIT_ROUNDS {
            // Acquire: the ended windows' re-sets are visible to the next search.
            if ended.load_acquire() >= open {
                return;
            }
            crate::arch::nanosleep(ns);
            ns = (ns * 2).min(crate::BACKOFF_MAX_NS);
        }
    }

    /// Lowest free index at or after `x`: through the summaries (a hint: stale positives are
    /// stepped over) or, with `exact`, by scanning the leaves.
    #[inline(always)]
    fn next_free(&self, x: u64, exact: bool) -> Option<u64> {
        self.next_free_bits(x, exact).map(|(s, _)| s)
    }

    /// `next_free`, with the leaf word it found the index in, as loaded, from the index's
    /// bit up: a claim picks its bits from these instead of loading the word again (one
    /// dependent load less on every install's claim).
    #[inline(always)]
    fn next_free_bits(&self, x: u64, exact: bool) -> Option<(u64, u64)> {
        if exact {
            self.successor_in_leaves(x)
        } else {
            self.successor_by_summaries(x)
        }
    }

    /// Lowest free index at or after `x` (a snapshot; a claim must still win it). `None` only
    /// if every index from `x` on was seen taken (see the module docs).
    pub fn successor(&self, x: u64) -> Option<u64> {
        self.search_exactly(|exact| self.next_free(x, exact))
    }

    /// `successor` by one pass through the summaries: `None` may be transient (a remover's
    /// summary clear hides an index for a moment). For hints, where a miss costs little (a
    /// mask class's take looks for partly free blocks this way, then takes from its slot).
    pub fn successor_hint(&self, x: u64) -> Option<u64> {
        self.next_free(x, false)
    }

    /// `successor` by a linear scan of the leaf words, which are always exact.
    fn successor_in_leaves(&self, x: u64) -> Option<(u64, u64)> {
        let l = &self.layout;
        let mut w = x / WORD_BITS;
        let mut mask = !0u64 << (x % WORD_BITS);
        while w < l.words[0] as u64 {
            // Relaxed: a snapshot; an insert that happened before this search is seen by
            // coherence, and the claiming RMW re-checks with acquire.
            let bits = self.word(0, w).load_relaxed() & mask;
            if bits != 0 {
                let found = w * WORD_BITS + bits.trailing_zeros() as u64;
                return (found < l.universe).then_some((found, bits));
            }
            w += 1;
            mask = !0;
        }
        None
    }

    /// `successor` through the summaries.
    fn successor_by_summaries(&self, x: u64) -> Option<(u64, u64)> {
        let l = &self.layout;
        let mut level = 0u32;
        let mut pos = x;
        if x == 0 && l.levels > 1 {
            // The lowest-first search of every claim: the first leaf word and the top summary
            // are loaded together, so that an empty tree costs one load latency, not one per
            // level. Relaxed: hints, as below.
            let first = self.word(0, 0).load_relaxed();
            let top = self.word(l.levels - 1, 0).load_relaxed();
            if first != 0 {
                return Some((first.trailing_zeros() as u64, first));
            }
            if top == 0 {
                return None;
            }
            // Word 0 of the leaves is empty: go on from its parent, as the walk would.
            (level, pos) = (1, 1);
        }
        loop {
            if pos >= l.bits(level) {
                return None;
            }
            let w = pos / WORD_BITS;
            // Relaxed: a hint; the claiming RMW re-checks with acquire.
            let bits = self.word(level, w).load_relaxed() & (!0u64 << (pos % WORD_BITS));
            if bits != 0 {
                let found = w * WORD_BITS + bits.trailing_zeros() as u64;
                if level == 0 {
                    return Some((found, bits));
                }
                level -= 1;
                pos = found * WORD_BITS;
            } else {
                if level + 1 >= l.levels {
                    return None;
                }
                level += 1;
                pos = w + 1;
            }
        }
    }

    /// Atomically takes the lowest free index at or after `x`; `None` only when every index
    /// from `x` on was seen taken (lost races move the claim on, never end it).
    pub fn claim_from(&self, x: u64) -> Option<u64> {
        self.claim_spread(x, 0)
    }

    /// Like `claim_from`, but within the lowest word that has a free index this thread tries
    /// the bits from position `spread` on (wrapping), so that racers for one word do not all
    /// fight over its lowest bit. For the block trees, where a word spans a few MiB.
    #[inline(never)]
    pub fn claim_spread(&self, x: u64, spread: u32) -> Option<u64> {
        self.search_exactly(|exact| self.claim_pass(x, spread, exact))
    }

    /// One pass of `claim_spread` through the summaries, for callers that retry anyway: its
    /// `None` may be transient (a clear window), so a caller that acts on it (reports out of
    /// memory) must confirm it with `successor`, which is exact.
    #[inline(never)]
    pub fn try_claim_spread(&self, x: u64, spread: u32) -> Option<u64> {
        self.claim_pass(x, spread, false)
    }

    /// One pass of `claim_spread`. Bounded: every word is visited once, with at most
    /// `WORD_CLAIM_TRIES` lost races in it.
    fn claim_pass(&self, x: u64, spread: u32, exact: bool) -> Option<u64> {
        self.claim_bits_pass(x, spread, 1, exact)
            .map(|(w, bits)| w * WORD_BITS + bits.trailing_zeros() as u64)
    }

    /// Like `try_claim_spread`, but takes up to `k` (1..=64) consecutive free indices of the
    /// lowest leaf word that has one at or after `x`, with one atomic: returns that word's
    /// number and the bits taken (at least one; fewer than `k` when the word had fewer in a
    /// row, or racers took some, which can split what is taken).
    /// For claimers that want several blocks at once (one tree operation instead of `k`).
    #[inline(never)]
    pub fn try_claim_bits(&self, x: u64, spread: u32, k: u32) -> Option<(u64, u64)> {
        self.claim_bits_pass(x, spread, k, false)
    }

    /// Like `try_claim_bits`, but racers draw a rank from `ticket` (any counter the racers
    /// share) instead of a spread: rank `r` takes up to `k` consecutive free bits from the
    /// `r * k`-th free bit of the word (`r` modulo `RANK_SPAN`). Racers that draw in a row
    /// take the word's lowest bits side by side, where spreads scattered them over all 64
    /// (a burst's blocks then reached a segment's end while its middle stayed free); the
    /// ticket's RMW is issued before the search's loads, so it adds no latency of its own.
    /// (Spreading the tries lost to a racer of the same rank, so that a wave of more racers
    /// than ranks would not meet again, lost the range gained at 48 B and saved none of the
    /// cost, r35.)
    #[inline(never)]
    pub fn try_claim_ranked(&self, x: u64, ticket: &Atom32, k: u32) -> Option<(u64, u64)> {
        // Relaxed: a counter that only spreads racers' picks; nothing is published through it.
        let t = ticket.fetch_add_relaxed(1);
        self.claim_rank_pass(x, t % RANK_SPAN, k)
    }

    /// Like `try_claim_ranked`, but with a rank the caller draws (no ticket): rank `r` takes up
    /// to `k` consecutive free bits from the word's `r * k`-th free bit (wrapping round its free
    /// bits; `r * k` must not overflow). Racers that draw ranks below some `n` take bits among
    /// the word's lowest `n * k` free ones, however full the word is: where a spread
    /// (`try_claim_bits`) draws a position, racers that find the low bits taken pile onto the
    /// next free one, or scatter to the word's end.
    #[inline(never)]
    pub fn try_claim_rank(&self, x: u64, r: u32, k: u32) -> Option<(u64, u64)> {
        self.claim_rank_pass(x, r, k)
    }

    /// One pass of a ranked claim (`try_claim_ranked`, `try_claim_rank`).
    #[inline(always)]
    fn claim_rank_pass(&self, x: u64, r: u32, k: u32) -> Option<(u64, u64)> {
        self.claim_bits_pass_with(x, false, |avail| pick_ranked(avail, r * k, k))
    }

    /// One pass of `try_claim_bits` (`exact`: search the leaves, see `next_free`).
    #[inline(always)]
    fn claim_bits_pass(&self, x: u64, spread: u32, k: u32, exact: bool) -> Option<(u64, u64)> {
        self.claim_bits_pass_with(x, exact, |avail| {
            if k == 1 {
                pick_bit(avail, spread)
            } else {
                pick_bits(avail, spread, k)
            }
        })
    }

    /// One pass of a claim whose bits `pick` chooses among the free ones of a word it is given.
    #[inline(always)]
    fn claim_bits_pass_with(&self, x: u64, exact: bool, pick: impl Fn(u64) -> u64) -> Option<(u64, u64)> {
        let mut from = x;
        loop {
            // The leaf word as the search loaded it (relaxed): a hint for which bits to try;
            // the RMW decides.
            let (s, mut avail) = self.next_free_bits(from, exact)?;
            let w = s / WORD_BITS;
            let at_or_after = !0u64 << (s % WORD_BITS);
            let mut tries = 0;
            while avail != 0 && tries < WORD_CLAIM_TRIES {
                let want = pick(avail);
                // Acquire: acquire the inserters' writes about these items (their fence and
                // RMW head a release sequence that every later RMW of the word continues).
                // Nothing before a claim needs publishing through the word: the release
                // fence of an acq_rel RMW made every install 10-17% slower to allocate with
                // many classes (mixed sizes up to 4 KiB, H200, NOTES r33). A claim is never
                // the first removal of a reclaim window or of a summary clear (those are
                // `remove_range_exact`, slot swaps, `clear_up`), whose arguments need a
                // release RMW there.
                let old = self.word(0, w).fetch_and_acquire(!want);
                let got = old & want;
                if got != 0 {
                    if old & !want == 0 {
                        self.clear_up(1, w);
                    }
                    return Some((w, got));
                }
                #[cfg(feature = "trace")]
                if let Some(c) = self.lost {
                    // Relaxed: a statistic, read by the host after the kernel.
                    c.fetch_add_relaxed(1);
                }
                avail = old & at_or_after;
                tries += 1;
            }
            from = (w + 1) * WORD_BITS;
        }
    }

    /// Marks `[start, start + k)` free.
    #[inline(never)]
    pub fn insert_range(&self, start: u64, k: u64) {
        if k == 0 {
            return;
        }
        let end = start + k;
        debug_assert!(end <= self.layout.universe);
        // Release (fence): publishes what the inserter wrote about the items to whoever claims
        // them; each relaxed RMW below after it forms a release pattern (PTX ISA, memory
        // consistency model; fence-to-atomic synchronisation on the host). One fence for all
        // the words instead of an acq_rel RMW each, so that their RMWs overlap (a segment's
        // format inserts up to four words).
        crate::arch::fence_acq_rel_gpu();
        let last = (end - 1) / WORD_BITS;
        let mut w = start / WORD_BITS;
        while w <= last {
            let mut olds = [!0u64; INSERT_BATCH_WORDS];
            for (i, old) in olds.iter_mut().enumerate() {
                let wi = w + i as u64;
                if wi <= last {
                    // Relaxed: ordered by the fence above (release); nothing to acquire.
                    *old = self.word(0, wi).fetch_or_relaxed(range_mask(wi, start, end));
                }
            }
            if self.layout.levels > 1 {
                // The words that were empty get their summary bits (as in set_bits), with one
                // RMW per summary word (the batch's words fall in at most two).
                let first = w / WORD_BITS;
                let mut masks = [0u64; 2];
                for (i, &old) in olds.iter().enumerate() {
                    let child = w + i as u64;
                    if old == 0 {
                        masks[(child / WORD_BITS - first) as usize] |= 1 << (child % WORD_BITS);
                    }
                }
                for (j, &mask) in masks.iter().enumerate() {
                    if mask != 0 {
                        self.set_summary_bits(1, first + j as u64, mask);
                    }
                }
            }
            w += INSERT_BATCH_WORDS as u64;
        }
    }

    /// Takes all of `[start, start + k)` if every index in it is free; otherwise takes none
    /// (puts back what it took) and returns false.
    #[inline(never)]
    pub fn remove_range_exact(&self, start: u64, k: u64) -> bool {
        let end = start + k;
        if end > self.layout.universe {
            return false;
        }
        let first = start / WORD_BITS;
        let mut w = first;
        while w * WORD_BITS < end {
            let mask = range_mask(w, start, end);
            // AcqRel: acquire the inserters' writes about these items.
            let old = self.word(0, w).fetch_and_acq_rel(!mask);
            if old & mask != mask {
                // Put back what this word gave us, then the whole words before it.
                if old & mask != 0 {
                    self.set_bits(0, w, old & mask);
                }
                let mut v = first;
                while v < w {
                    self.set_bits(0, v, range_mask(v, start, end));
                    v += 1;
                }
                return false;
            }
            if old & !mask == 0 {
                self.clear_up(1, w);
            }
            w += 1;
        }
        true
    }

    /// First index in `[s, min(s + k, universe))` that is not free, or that bound.
    fn run_end(&self, s: u64, k: u64) -> u64 {
        let end = (s + k).min(self.layout.universe);
        let mut i = s;
        while i < end {
            let w = i / WORD_BITS;
            // Relaxed: a hint; `remove_range_exact` decides.
            let clear = !self.word(0, w).load_relaxed() & (!0u64 << (i % WORD_BITS));
            if clear != 0 {
                return (w * WORD_BITS + clear.trailing_zeros() as u64).min(end);
            }
            i = (w + 1) * WORD_BITS;
        }
        end
    }

    /// How many indices right below `x` are free, counting down from `x - 1`, at most `max`
    /// (a snapshot of the leaves: a hint for a claimer, which decides with a claim).
    pub fn free_before(&self, x: u64, max: u64) -> u64 {
        let mut n = 0;
        let mut i = x;
        while i > 0 && n < max {
            let w = (i - 1) / WORD_BITS;
            let top = ((i - 1) % WORD_BITS) as u32;
            // Relaxed: a hint (see above).
            let ones = (self.word(0, w).load_relaxed() << (WORD_BITS as u32 - 1 - top)).leading_ones();
            n += ones as u64;
            if ones <= top {
                break;
            }
            i = w * WORD_BITS;
        }
        n.min(max)
    }

    /// Atomically takes the lowest run of `k` contiguous free indices; `None` only when no
    /// run was seen free.
    #[inline(never)]
    pub fn claim_run(&self, k: u64) -> Option<u64> {
        if k == 0 || k > self.layout.universe {
            return None;
        }
        if k == 1 {
            return self.claim_from(0);
        }
        self.search_exactly(|exact| self.run_pass(k, exact, u64::MAX))
    }

    /// As `claim_run`, for the lowest run of `k` contiguous free indices whose start `s` has
    /// `ok(s)`: a caller that needs more than the run itself (a run of fresh segments that the
    /// free blocks right before it make up to a block run, `Blocks::fresh_run`). `ok` is a
    /// hint, called with no claim held; the caller decides again after the claim.
    #[inline(never)]
    pub fn claim_run_where(&self, k: u64, ok: impl Fn(u64) -> bool) -> Option<u64> {
        if k == 0 || k > self.layout.universe {
            return None;
        }
        self.search_exactly(|exact| self.run_pass_with(k, exact, u64::MAX, &ok))
    }

    /// As `claim_run`, for a run that does not cross a multiple of `window` (a power of two,
    /// at least `k`): a run of blocks in one segment, for a group whose blocks fill all
    /// `MAX_BLOCKS_PER_SEGMENT` ids of a segment (so that nothing else keeps runs apart).
    #[inline(never)]
    pub fn claim_run_within(&self, k: u64, window: u64) -> Option<u64> {
        if k == 0 || k > self.layout.universe || k > window {
            return None;
        }
        self.search_exactly(|exact| self.run_pass(k, exact, window))
    }

    /// One pass of `claim_run_within` through the summaries, for callers that fall back on
    /// something else (and confirm "none" with `claim_run_within` before they report out of
    /// memory): its `None` may be transient (a clear window).
    #[inline(never)]
    pub fn try_claim_run_within(&self, k: u64, window: u64) -> Option<u64> {
        if k == 0 || k > self.layout.universe || k > window {
            return None;
        }
        self.run_pass(k, false, window)
    }

    /// One pass of `claim_run` (of runs within windows of `window` ids).
    #[inline(always)]
    fn run_pass(&self, k: u64, exact: bool, window: u64) -> Option<u64> {
        self.run_pass_with(k, exact, window, &|_| true)
    }

    /// One pass of a run claim: of runs within windows of `window` ids whose start `s` has
    /// `ok(s)` (`claim_run_where`). Bounded: the start only moves up, and stays at one index
    /// for at most `RUN_CLAIM_TRIES` lost races.
    #[inline(always)]
    fn run_pass_with(&self, k: u64, exact: bool, window: u64, ok: &impl Fn(u64) -> bool) -> Option<u64> {
        let (mut from, mut lost) = (0, 0);
        loop {
            let s = self.next_free(from, exact)?;
            if s / window != (s + k - 1) / window {
                // The run would cross a window: look from the next one.
                (from, lost) = ((s / window + 1) * window, 0);
                continue;
            }
            let e = self.run_end(s, k);
            if e - s < k {
                from = e + 1;
            } else if !ok(s) {
                (from, lost) = (s + 1, 0);
            } else if self.remove_range_exact(s, k) {
                return Some(s);
            } else if lost + 1 < RUN_CLAIM_TRIES {
                // Another claimer took part of it: look again from the same start.
                (from, lost) = (s, lost + 1);
            } else {
                (from, lost) = (s + 1, 0);
            }
        }
    }

    /// Number of free indices (a snapshot).
    pub fn count(&self) -> u64 {
        // Relaxed: a snapshot of a quiescent tree, for statistics and validation.
        (0..self.layout.words[0] as u64).map(|w| self.word(0, w).load_relaxed().count_ones() as u64).sum()
    }

    /// Checks the summaries against the leaves, for a quiescent tree: no false negatives (a
    /// non-empty word whose summary bit is clear) and no bits past the universe. Returns how
    /// many stale positives there are (allowed: searches step past them).
    pub fn check(&self) -> Result<u64, VebError> {
        let l = &self.layout;
        let tail = l.universe % WORD_BITS;
        // Relaxed: a snapshot of a quiescent tree, for statistics and validation.
        if tail != 0 && self.word(0, l.words[0] as u64 - 1).load_relaxed() >> tail != 0 {
            return Err(VebError::BitPastUniverse);
        }
        let mut stale = 0;
        for level in 0..l.levels.saturating_sub(1) {
            for w in 0..l.words[level as usize] as u64 {
                // Relaxed: a snapshot of a quiescent tree, for statistics and validation.
                let child = self.word(level, w).load_relaxed();
                // Relaxed: a snapshot of a quiescent tree, for statistics and validation.
                let parent = self.word(level + 1, w / WORD_BITS).load_relaxed();
                let bit = parent & (1 << (w % WORD_BITS)) != 0;
                if child != 0 && !bit {
                    return Err(VebError::MissingSummary { level: level + 1, word: w });
                }
                if child == 0 && bit {
                    stale += 1;
                }
            }
        }
        Ok(stale)
    }
}

/// What `Veb::check` found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VebError {
    /// A leaf bit at or past the universe is set.
    BitPastUniverse,
    /// Child word `word` is non-empty but its summary bit at `level` is clear.
    MissingSummary { level: u32, word: u64 },
}

/// Writes a full tree (every index free) into `words`, non-atomically: for heap creation, on
/// the host or by one thread per word in the init kernel (`init_word`).
pub fn full_word(layout: &VebLayout, level: u32, w: u64) -> u64 {
    let bits = layout.bits(level);
    let lo = w * WORD_BITS;
    if lo >= bits {
        0
    } else if bits - lo >= WORD_BITS {
        !0
    } else {
        (1u64 << (bits - lo)) - 1
    }
}

/// Level and word within it of the tree's `i`-th word.
pub fn word_position(layout: &VebLayout, i: u32) -> (u32, u64) {
    let mut level = 0;
    while level + 1 < layout.levels && i >= layout.offset[level as usize + 1] {
        level += 1;
    }
    (level, (i - layout.offset[level as usize]) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_set_bit_counts_from_the_lowest() {
        for x in [1u64, 0b1011_0000, u64::MAX, 1 << 63, 0x8000_0001_0000_0100, 0x5555_5555_5555_5555] {
            let mut bits = x;
            for n in 0..x.count_ones() {
                assert_eq!(nth_set_bit(x, n), bits.trailing_zeros(), "x {x:#x} n {n}");
                bits &= bits - 1;
            }
        }
    }

    #[test]
    fn ranked_picks_lie_side_by_side_and_wrap_round_the_free_bits() {
        let all = u64::MAX;
        // Ranks in a row, one bit each: the lowest bits in turn.
        for r in 0..RANK_SPAN {
            assert_eq!(pick_ranked(all, r, 1), 1 << r);
        }
        // Runs of three: rank r's run starts at the (3r)-th free bit, so the runs tile.
        assert_eq!(pick_ranked(0b1111_0110, 0, 3), 0b0110, "a run stops at the first taken bit");
        assert_eq!(pick_ranked(all, 2 * 3, 3), 0b111 << 6);
        // Fewer free bits than the skip: wraps round them (7 and 4 mod 3 = 1: the second, bit 2).
        assert_eq!(pick_ranked(0b0010_0110, 7, 1), 1 << 2);
        assert_eq!(pick_ranked(0b0010_0110, 4, 1), 1 << 2);
        // Never past bit 63.
        assert_eq!(pick_ranked(1 << 63 | 1 << 62, 1, 4), 1 << 63);
    }
}
