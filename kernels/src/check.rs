//! Safety checks: a hand-out bitmap with one bit per 16-byte unit of the heap; a slice's bit
//! is its first unit's (so the bitmap is the same for every class), set when the slice is
//! handed out and cleared when it is freed. A `free` that
//! finds its bit already clear is a double free, or names a slice of a live block that was
//! never handed out: it is counted (`counter::DOUBLE_FREE`) and ignored, so the block's
//! counts stay right. Pointers outside slices (out of range, misaligned, in free segments,
//! inside whole blocks) are caught without the bitmap (`counter::INVALID_FREE`).
//!
//! Only builds with `crate::CHECKS` compile this in, and only heaps created with
//! `HeapLayout::checks` use it. A double free that comes after the slice was handed out
//! again is indistinguishable from a valid free (no allocator without per-pointer tags can
//! tell), so detection covers frees while the slice is not handed out.

use crate::atomic::Atom64;
use crate::class::{group_block_bytes, slice_bytes, MIN_SLICE_SHIFT};
use crate::layout::{HeapLayout, BIT_WORD_BITS as WORD_BITS};

pub use crate::layout::BIT_WORDS_PER_SEGMENT;

/// The hand-out bitmap (a heap with checks only): one bit per 16-byte unit of segment memory.
/// A `Copy` view (two words) that the heap builds from its layout (`DeviceHeap::hand_out`).
#[derive(Clone, Copy, Debug)]
pub struct HandOut<'a> {
    /// Address of segment 0.
    mem: u64,
    /// The layout, at the start of the metadata (its address is the metadata's).
    layout: &'a HeapLayout,
}

impl<'a> HandOut<'a> {
    /// The bitmap of the heap whose segment memory starts at `mem` and whose metadata starts
    /// with `layout`. `DeviceHeap::hand_out` builds it safely.
    ///
    /// ```compile_fail,E0133
    /// // Every method writes relative to the layout's address: a stack value is no heap.
    /// let layout = veballoc_kernels::HeapLayout::new(4, 1, true);
    /// let bits = veballoc_kernels::check::HandOut::new(0, &layout);
    /// ```
    ///
    /// # Safety
    /// `layout` is the header of a live heap's metadata (in global memory), as the heap builds
    /// the view (`DeviceHeap::hand_out`): the metadata follows it, with the bitmap
    /// (`layout.checks != 0`, else `bits_off` is 0 and its words are the header's), and `mem`
    /// is that heap's segment 0 (the conditions of [`crate::DeviceHeap::from_raw_parts`]).
    #[inline(always)]
    pub unsafe fn new(mem: u64, layout: &'a HeapLayout) -> Self {
        Self { mem, layout }
    }

    /// Address of the metadata (the layout is its header).
    #[inline(always)]
    fn meta(&self) -> u64 {
        self.layout as *const HeapLayout as usize as u64
    }

    /// Word `w` of segment `seg`'s bitmap.
    #[inline(always)]
    pub(crate) fn bit_word(&self, seg: u32, w: u64) -> &'a Atom64 {
        let base = self.meta() + self.layout.bits_off + seg as u64 * BIT_WORDS_PER_SEGMENT * 8;
        // SAFETY: a checking heap's layout reserved BIT_WORDS_PER_SEGMENT words per segment at
        // bits_off, and w < BIT_WORDS_PER_SEGMENT (callers pass slice indices of one segment).
        unsafe { &crate::atomic::words(base + w * 8, 1)[0] }
    }

    /// Segment and bit index of the slice at heap address `addr` (its first 16-byte unit).
    #[inline(always)]
    fn bit_of(&self, addr: u64) -> (u32, u64) {
        let off = addr - self.mem;
        let seg = (off >> crate::SEGMENT_SHIFT) as u32;
        (seg, (off & (crate::SEGMENT_BYTES - 1)) >> MIN_SLICE_SHIFT)
    }

    /// Marks `count` consecutive slices of class `c` starting at `addr` as handed out.
    /// Called by the thread that took them, before it passes the addresses on.
    ///
    /// # Safety
    /// As the heap calls it: `addr` and the `count - 1` slices of class `c` after it lie in
    /// one block of this heap's segments, taken by the caller (`take_slices`) and not yet
    /// handed out. Nothing checks `addr`: one outside the heap writes out of the bitmap's
    /// bounds, and marking slices that are not handed out hides their later double frees.
    #[inline(always)]
    pub unsafe fn mark_handed_out(&self, addr: u64, c: usize, count: u32) {
        let (seg, first) = self.bit_of(addr);
        // A slice's bit is its first unit's, from its own byte offset in the segment (slices of
        // an odd multiple of 8 bytes, 24 to 120, start every 1.5 to 7.5 units, so a run's later
        // bits are not `first` plus a stride).
        let offset = (addr - self.mem) & (crate::SEGMENT_BYTES - 1);
        let (mut word, mut mask) = (first / WORD_BITS, 0u64);
        for i in 0..count as u64 {
            let bit = (offset + i * slice_bytes(c)) >> MIN_SLICE_SHIFT;
            if bit / WORD_BITS != word {
                self.set_bits(seg, word, mask);
                (word, mask) = (bit / WORD_BITS, 0);
            }
            mask |= 1 << (bit % WORD_BITS);
        }
        if mask != 0 {
            self.set_bits(seg, word, mask);
        }
    }

    /// Sets `mask` in word `word` of segment `seg`'s bitmap.
    #[inline(always)]
    fn set_bits(&self, seg: u32, word: u64, mask: u64) {
        // Relaxed: the bit is only read by the RMW of the slice's free, which happens
        // after this malloc (the caller's synchronisation, or program order and the shuffle
        // that follows this returning atomic), so it reads this value or a later one.
        self.bit_word(seg, word).fetch_or_relaxed(mask);
    }

    /// Clears the hand-out bits of the slices that the lanes of `peers` (a warp's lanes
    /// freeing slices of one block of class `c`) free, with one atomic per bitmap word: the lanes whose bits share
    /// a word OR their bits together (by shuffles) and the lowest clears them all, then shares
    /// the old word. A lane owns its free if its bit was set and no lower lane of the warp
    /// frees the same slice.
    ///
    /// # Safety
    /// Every lane of `peers` (this lane among them) makes this call together, converged, on
    /// this heap, and `addr` is the start of a slice of this heap's segments.
    #[inline(always)]
    pub(crate) unsafe fn unmark_warp(&self, peers: u32, addr: u64) -> bool {
        let (seg, bit) = self.bit_of(addr);
        let (word, pos) = (bit / 64, (bit % 64) as u32);
        // SAFETY: every lane of `peers` makes this call (the caller's contract); `group` and
        // `same_slice` are subsets of it, each of whose lanes runs the same code (the loop is
        // over `group`, the same in each of its lanes).
        let (group, same_slice) = unsafe {
            let group = crate::arch::match_any_sync(peers, word as u32);
            (group, crate::arch::match_any_sync(group, pos))
        };
        let first = same_slice & crate::arch::lanemask_lt() == 0;
        let mut mask = 0u64;
        let mut m = group;
        while m != 0 {
            // SAFETY: as above.
            mask |= 1u64 << unsafe { crate::arch::shfl_sync_u32(group, pos, m.trailing_zeros()) };
            m &= m - 1;
        }
        let leader = group.trailing_zeros();
        let mut old = 0u64;
        if crate::arch::lane_id() == leader {
            // Relaxed: see mark_handed_out; the block's recycle is ordered after this clear by
            // the release add of the free count that follows it.
            old = self.bit_word(seg, word).fetch_and_relaxed(!mask);
        }
        // SAFETY: as above (the leader's branch rejoins here).
        let old = unsafe { crate::arch::shfl_sync_u64(group, old, leader) };
        first && old & (1u64 << pos) != 0
    }

    /// Whether the slice at heap address `addr` is marked handed out (the validator's).
    pub(crate) fn is_marked(&self, addr: u64) -> bool {
        let (seg, bit) = self.bit_of(addr);
        // Relaxed: the validator runs on a quiescent heap.
        self.bit_word(seg, bit / WORD_BITS).load_relaxed() & (1 << (bit % WORD_BITS)) != 0
    }

    /// Set bits in block `local` (of group `g`) of segment `seg` (the validator's live count).
    pub(crate) fn marked_in_block(&self, seg: u32, local: u32, g: usize) -> u32 {
        let units = group_block_bytes(g) >> MIN_SLICE_SHIFT;
        let (start, end) = (local as u64 * units, (local as u64 + 1) * units);
        let mut n = 0;
        let mut w = start / WORD_BITS;
        while w * WORD_BITS < end {
            let lo = (w * WORD_BITS).max(start) - w * WORD_BITS;
            let hi = ((w + 1) * WORD_BITS).min(end) - w * WORD_BITS;
            let mask = if hi - lo == WORD_BITS { u64::MAX } else { ((1u64 << (hi - lo)) - 1) << lo };
            // Relaxed: the validator runs on a quiescent heap.
            n += (self.bit_word(seg, w).load_relaxed() & mask).count_ones();
            w += 1;
        }
        n
    }
}
