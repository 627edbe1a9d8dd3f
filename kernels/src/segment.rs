//! Segments: the heap is an array of 16 MiB segments. The segment tree holds the free ones;
//! a per-segment table says what each used segment holds (a group of size classes, or part of a
//! multi-segment run), which is all `free` needs to find a pointer's size: no headers.

use crate::atomic::Atom32;
use crate::block::{gid_of, group_blocks_per_segment, KIND_LARGE_TAIL, MAX_BLOCKS_PER_SEGMENT};
use crate::class::{RUN_BLOCK_BYTES, RUN_GROUP};
use crate::heap::DeviceHeap;
use crate::{SEGMENT_BYTES, SEGMENT_SHIFT};

bitflags::bitflags! {
    /// Flags of a segment-table entry; the low 8 bits hold the group. Zero means free.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct SegFlags: u32 {
        /// Formatted into blocks of the group in the low bits.
        const FORMATTED = 1 << 8;
        /// First segment of a multi-segment run (its length is in the run table).
        const LARGE = 1 << 9;
        /// A later segment of a multi-segment run.
        const LARGE_TAIL = 1 << 10;
        /// Unused since `free` reads every block's kind (a block's class is in it); never set,
        /// kept so that no other flag takes the bit.
        const HAS_WHOLE = 1 << 11;
        /// Owned by the host-side pool (`veballoc::Heap::alloc`): device `free` refuses it.
        const HOST = 1 << 12;
        /// Its memory was returned to the driver (`veballoc::Heap::trim_memory`): out of the
        /// segment tree until the host maps memory for it again.
        const RELEASED = 1 << 13;
    }
}

/// Mask of the group bits of a table entry.
pub const CLASS_MASK: u32 = 0xff;
/// Bits of the "blocks out" word that count blocks taken from the group tree.
pub const OUT_COUNT_MASK: u32 = 0x7fff_ffff;
/// Set in the "blocks out" word while one thread tries to take the segment back.
pub const RECLAIMING: u32 = 1 << 31;
/// Attempts to take an all-free segment back before leaving it formatted (still usable by
/// its group; `trim`'s next pass or a later release tries again).
pub const RECLAIM_RETRIES: u32 = 8;

/// A decoded segment-table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    Free,
    /// Formatted for a group (see `class::group_of`).
    Group(usize),
    LargeHead,
    LargeTail,
    Host,
    Released,
    Corrupt(u32),
}

/// Decodes a segment-table entry.
pub fn seg_kind(entry: u32) -> SegKind {
    let f = SegFlags::from_bits_retain(entry & !CLASS_MASK).difference(SegFlags::HAS_WHOLE);
    if entry == 0 {
        SegKind::Free
    } else if f == SegFlags::FORMATTED && ((entry & CLASS_MASK) as usize) < crate::block::NUM_GROUPS {
        SegKind::Group((entry & CLASS_MASK) as usize)
    } else if f == SegFlags::LARGE {
        SegKind::LargeHead
    } else if f == SegFlags::LARGE_TAIL {
        SegKind::LargeTail
    } else if f == SegFlags::HOST {
        SegKind::Host
    } else if f == SegFlags::RELEASED {
        SegKind::Released
    } else {
        SegKind::Corrupt(entry)
    }
}

impl DeviceHeap {
    #[inline(always)]
    pub(crate) fn seg_tree(&self) -> crate::veb::Veb<'_> {
        let l = self.layout().seg_tree;
        // SAFETY: the layout reserved `total_words` words at this offset.
        let w =
            unsafe { crate::atomic::words(self.meta + self.layout().seg_tree_off, l.total_words as usize) };
        crate::veb::Veb::new(w, l)
    }

    #[inline(always)]
    fn seg_array(&self, off: u64, seg: u32) -> &Atom32 {
        // SAFETY: each per-segment array holds `num_segments` words at `off`; callers pass
        // seg < num_segments (derived from an in-range address or a tree index).
        unsafe { &crate::atomic::words32(self.meta + off, self.layout().num_segments as usize)[seg as usize] }
    }

    /// Table entry of segment `seg`.
    #[inline(always)]
    pub(crate) fn seg_table(&self, seg: u32) -> &Atom32 {
        self.seg_array(self.layout().table_off, seg)
    }

    /// Blocks of `seg` out of their tree, plus the `RECLAIMING` flag.
    #[inline(always)]
    pub(crate) fn seg_out(&self, seg: u32) -> &Atom32 {
        self.seg_array(self.layout().seg_out_off, seg)
    }

    /// Length of the multi-segment run that starts at `seg`.
    #[inline(always)]
    pub(crate) fn seg_run(&self, seg: u32) -> &Atom32 {
        self.seg_array(self.layout().run_len_off, seg)
    }

    /// Blocks of `RUN_GROUP` at the start of the segment after the run that starts at `seg`
    /// that belong to the run (its last, partial segment; 0: none).
    #[inline(always)]
    pub(crate) fn seg_run_tail(&self, seg: u32) -> &Atom32 {
        self.seg_array(self.layout().run_tail_off, seg)
    }

    /// Bytes of the run that starts at `seg` (`k` whole segments and `t` tail blocks).
    #[inline(always)]
    pub(crate) fn run_bytes(k: u32, t: u32) -> u64 {
        k as u64 * SEGMENT_BYTES + t as u64 * RUN_BLOCK_BYTES
    }

    /// Address of segment `seg`.
    #[inline(always)]
    pub fn segment_addr(&self, seg: u32) -> u64 {
        self.mem + ((seg as u64) << SEGMENT_SHIFT)
    }

    /// Formats the just-claimed segment `seg` for group `g`. Its first `kept` blocks
    /// stay with the caller; every other block goes into the group's tree.
    #[inline(never)]
    pub(crate) fn format_segment(&self, seg: u32, g: usize, kept: u32) {
        let bps = group_blocks_per_segment(g);
        crate::trace::add(self.meta, crate::trace::Event::Formats, 1);
        // The blocks' metadata needs no reset: a slot that served before was parked when its
        // block went back to its tree (and every block of a reclaimed segment had), and a slot
        // never installed is all zeros, which no stale warp can name.
        // Relaxed: published by the release inserts below (claimers of the other blocks
        // acquire them), and for the kept blocks by the caller's release that hands them out
        // (the slot install, or the whole block's kind); `free` reads the entry only for
        // pointers handed out after one of those.
        self.seg_table(seg).store_relaxed(SegFlags::FORMATTED.bits() | g as u32);
        // Relaxed: the kept blocks are out; the release inserts below order it before any
        // claimer's count of another block (and a reclaimer's CAS acquires them).
        self.seg_out(seg).store_relaxed(kept);
        if bps > kept {
            self.block_tree(g).insert_range(gid_of(seg, kept), (bps - kept) as u64);
        }
    }

    /// Takes segment `seg` of group `g` back from its group once all its blocks are free.
    /// One thread at a time (the `RECLAIMING` flag); gives up if a block gets claimed.
    #[inline(never)]
    pub(crate) fn try_reclaim(&self, seg: u32, g: usize) {
        let out = self.seg_out(seg);
        let bps = group_blocks_per_segment(g) as u64;
        let base = gid_of(seg, 0);
        for _ in 0..RECLAIM_RETRIES {
            // AcqRel: exclusive right to reclaim; acquires the releasers' tree inserts.
            if out.cas_acq_rel(0, RECLAIMING).is_err() {
                return;
            }
            crate::trace::add(self.meta, crate::trace::Event::Reclaims, 1);
            if self.block_tree(g).remove_range_exact(base, bps) {
                // We own every block of the segment now.
                // Release: the entry is cleared before the segment becomes claimable.
                self.seg_table(seg).store_release(0);
                // Release: as above.
                out.store_release(0);
                self.seg_tree().insert(seg as u64);
                return;
            }
            // A block was claimed meanwhile. AcqRel: if its owner has already released it
            // again (count back to zero) its release saw our flag and left the work to us.
            let old = out.fetch_and_acq_rel(!RECLAIMING);
            if old & OUT_COUNT_MASK != 0 {
                return;
            }
        }
    }

    /// Returns segment `seg` to the segment tree if it is formatted and none of its blocks is
    /// out (segments formatted ahead for waiting claimers that nobody used, or whose last
    /// reclaim gave up). For `trim`.
    pub fn trim_segment(&self, seg: u32) {
        // Relaxed: a hint; try_reclaim decides under its flag.
        if let SegKind::Group(g) = seg_kind(self.seg_table(seg).load_relaxed()) {
            // Relaxed: as above.
            if self.seg_out(seg).load_relaxed() == 0 {
                self.try_reclaim(seg, g);
            }
        }
    }

    /// Claims `k` contiguous segments for a request larger than a segment, and with
    /// `tail > 0` the first `tail` 256 KiB blocks of the segment after them (formatted for
    /// `RUN_GROUP`, its other blocks going to that group's tree); returns the first segment.
    #[inline(never)]
    pub(crate) fn claim_large(&self, k: u64, tail: u32) -> Option<u32> {
        let s = self.seg_tree().claim_run(k + (tail > 0) as u64)? as u32;
        // Relaxed: published (with the head entry) by the release store below.
        self.seg_run(s).store_relaxed(k as u32);
        // Relaxed: as above.
        self.seg_run_tail(s).store_relaxed(tail);
        for t in 1..k as u32 {
            // Relaxed: as above.
            self.seg_table(s + t).store_relaxed(SegFlags::LARGE_TAIL.bits());
        }
        if tail > 0 {
            let ts = s + k as u32;
            for i in 0..tail {
                // Relaxed: published by format_segment's release store of the table entry
                // (and the head's below).
                self.block_meta(ts, i).kind.store_relaxed(KIND_LARGE_TAIL);
            }
            self.format_segment(ts, RUN_GROUP, tail);
        }
        // Release: `free` of this pointer (after the user's own synchronisation) sees the run.
        self.seg_table(s).store_release(SegFlags::LARGE.bits());
        Some(s)
    }

    /// Frees the run that starts at segment `s`.
    #[inline(never)]
    pub(crate) fn free_large(&self, s: u32) {
        // AcqRel: of two frees of the run only one clears its head; acquires claim_large's
        // release of the run length.
        if self.seg_table(s).cas_acq_rel(SegFlags::LARGE.bits(), 0).is_err() {
            self.bump(crate::heap::counter::DOUBLE_FREE);
            return;
        }
        // Relaxed: ordered by the acquire CAS above.
        let k = self.seg_run(s).load_relaxed();
        // Relaxed: as above.
        let tail = self.seg_run_tail(s).load_relaxed();
        for t in 1..k {
            // Relaxed: the release inserts below publish the cleared entries.
            self.seg_table(s + t).store_relaxed(0);
        }
        for i in 0..tail {
            // The tail blocks go back to RUN_GROUP's tree like any freed block (the last
            // block of their segment to come back returns the segment).
            self.block_meta(s + k, i).park();
            self.release_block(RUN_GROUP, gid_of(s + k, i));
        }
        self.seg_tree().insert_range(s as u64, k as u64);
    }

    /// Claims `k` contiguous segments for the host-side pool; returns the first. Their
    /// entries say `HOST`, so that device `free` of a pointer into them is refused.
    pub fn claim_host(&self, k: u64) -> Option<u32> {
        let s = self.seg_tree().claim_run(k)? as u32;
        for t in 0..k as u32 {
            // Release: ordered before any later use of the segment by the host's kernels.
            self.seg_table(s + t).store_release(SegFlags::HOST.bits());
        }
        Some(s)
    }

    /// Returns `k` host-owned segments from `s` to the segment tree.
    pub fn release_host(&self, s: u32, k: u32) {
        for t in 0..k {
            // Relaxed: the release inserts below publish the cleared entries.
            self.seg_table(s + t).store_relaxed(0);
        }
        self.seg_tree().insert_range(s as u64, k as u64);
    }

    /// Takes free segments out of the segment tree so that the host can return their memory:
    /// from the highest index down (the tree hands out the lowest first), keeping `keep`
    /// free; at most `out.len()`. Their entries say `RELEASED`. Returns how many, listed in
    /// `out`. One thread; safe while others allocate (a segment another thread claims first
    /// is skipped).
    pub fn release_free_segments(&self, keep: u32, out: &mut [u32]) -> usize {
        let tree = self.seg_tree();
        let free = tree.count() as u32;
        let mut n = 0;
        let mut seg = self.layout().num_segments;
        while seg > 0 && n < out.len() && free.saturating_sub(n as u32) > keep {
            seg -= 1;
            if tree.contains(seg as u64) && tree.remove(seg as u64) {
                // Release: the host reads the list after the kernel; the entry keeps device
                // frees and the validator off the segment.
                self.seg_table(seg).store_release(SegFlags::RELEASED.bits());
                out[n] = seg;
                n += 1;
            }
        }
        n
    }

    /// Returns released segment `seg` (its memory mapped again) to the segment tree.
    pub fn reacquire_segment(&self, seg: u32) {
        // Relaxed: the release insert below publishes it.
        self.seg_table(seg).store_relaxed(0);
        self.seg_tree().insert(seg as u64);
    }

    /// Whole segments and tail blocks (of 256 KiB, in the next segment) of a run for `size`
    /// bytes: less than 256 KiB over.
    pub(crate) fn run_for(size: u64) -> (u64, u32) {
        let (k, t) = (size >> SEGMENT_SHIFT, (size & (SEGMENT_BYTES - 1)).div_ceil(RUN_BLOCK_BYTES) as u32);
        if t as u64 * RUN_BLOCK_BYTES == SEGMENT_BYTES {
            (k + 1, 0)
        } else {
            (k, t)
        }
    }
}

const _: () = assert!(MAX_BLOCKS_PER_SEGMENT as u64 * crate::class::group_block_bytes(0) == SEGMENT_BYTES);
