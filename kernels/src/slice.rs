//! Slices: each size class keeps, per multiprocessor shard, a "current" block from which
//! warps carve slices. The slot word is the block's hand-out counter too (`block.rs`,
//! `slot_take`): one atomic add per warp both names the block and takes the slices. The warp
//! whose add exhausts the block installs the next one; warps that find the slot full or empty
//! wait for that (the first add on an empty slot elects its installer). Freed slices are
//! counted per block; the free that completes the class's slices per block recycles it.

use crate::arch;
use crate::atomic::Atom64;
use crate::block::{
    gid_of, group_of, slice_bytes, slices_per_block, slot_install, slot_parts, slot_retire, slot_take,
    split_gid, SlotTake, KIND_PACKED, KIND_SLICES, NUM_CLASSES,
};
use crate::class::class_of;
use crate::heap::DeviceHeap;
use crate::segment::{seg_kind, SegKind};

/// Classes whose blocks serve packed allocations (`malloc_packed`), one slot row each: their
/// slice size is the packing unit (16, 64 or 256 bytes), picked per warp by how much the warp
/// asks for, so that a block serves many warps whatever their sizes.
pub const PACKED_CLASSES: [usize; 3] = [class_of(16), class_of(64), class_of(256)];
/// Rows of current slots: one per class, then one per packed class (blocks of `KIND_PACKED`,
/// kept apart so that their hand-out stays warp-contiguous).
pub const SLOT_ROWS: usize = NUM_CLASSES + PACKED_CLASSES.len();
/// The row of packed class `PACKED_CLASSES[i]`.
#[inline(always)]
pub const fn packed_row(i: usize) -> usize {
    NUM_CLASSES + i
}

/// Slot words `trim` reads before retiring any (at most 32: a bit mask of them).
const TRIM_BATCH: u32 = 8;

/// Class and block kind of the blocks in slot row `row`.
#[inline(always)]
pub const fn row_class_kind(row: usize) -> (usize, u32) {
    if row >= NUM_CLASSES {
        (PACKED_CLASSES[row - NUM_CLASSES], KIND_PACKED)
    } else {
        (row, KIND_SLICES)
    }
}

impl DeviceHeap {
    /// Current-block slot `shard` of row `row` (a class, or a `packed_row`).
    #[inline(always)]
    pub(crate) fn current(&self, row: usize, shard: u32) -> &Atom64 {
        let i = row as u64 * self.layout().shards as u64 + shard as u64;
        // SAFETY: the layout reserved SLOT_ROWS * shards words at current_off.
        unsafe {
            &crate::atomic::words(
                self.meta + self.layout().current_off,
                SLOT_ROWS * self.layout().shards as usize,
            )[i as usize]
        }
    }

    /// The slot of row `row` this multiprocessor takes from: rows with large blocks share
    /// slots between multiprocessors (see `HeapLayout::row_shard_log2`).
    #[inline(always)]
    pub(crate) fn home_shard(&self, row: usize) -> u32 {
        arch::smid() & (self.layout().row_shards(row) - 1)
    }

    /// Takes up to `n` (1..=4096) consecutive slices of class `c` for a group of threads;
    /// returns the first slice's address and how many were taken (>= 1), or `None` when the
    /// heap is out of memory.
    #[inline]
    pub fn take_slices(&self, c: usize, n: u32) -> Option<(u64, u32)> {
        self.take_in_row(c, n)
    }

    /// `take_slices`, marking the slices handed out when the heap runs the checks: what
    /// every caller that hands slices to threads uses.
    #[inline(always)]
    pub(crate) fn take_marked(&self, c: usize, n: u32) -> Option<(u64, u32)> {
        let taken = self.take_slices(c, n);
        if let (Some((base, got)), true) = (taken, self.checking()) {
            self.mark_handed_out(base, c, got);
        }
        taken
    }

    /// `take_slices` from the blocks of slot row `row`: a class, or a `packed_row` (units of
    /// its class's slice size, in blocks marked `KIND_PACKED`).
    #[inline]
    pub(crate) fn take_in_row(&self, row: usize, n: u32) -> Option<(u64, u32)> {
        let slot = self.current(row, self.home_shard(row));
        let per_block = slices_per_block(row_class_kind(row).0);
        // A round is lost only while another warp installs a block, which takes at most
        // FORMAT_WAIT_NS (and usually microseconds).
        let mut wait = crate::Wait::new(crate::INSTALL_WAIT_NS);
        loop {
            match slot_take(slot, n, per_block) {
                SlotTake::Fresh { gid, start, got, exhausted } => {
                    return Some(self.took(row, slot, gid, start, got, exhausted))
                }
                SlotTake::Empty { elected: true } => {
                    if !self.install_next(row, slot) {
                        // No block left: what other multiprocessors' current blocks still
                        // hold is the last memory of this class.
                        return self.steal(row, n);
                    }
                }
                SlotTake::Full | SlotTake::Empty { elected: false } => {
                    if !wait.sleep() {
                        break;
                    }
                }
            }
        }
        self.steal(row, n)
    }

    /// Takes up to `n` slices from any current block of row `row` (when no new block can be
    /// had: without this, slices left in other shards' blocks would be out of reach).
    #[inline(never)]
    fn steal(&self, row: usize, n: u32) -> Option<(u64, u32)> {
        let per_block = slices_per_block(row_class_kind(row).0);
        for shard in 0..self.layout().shards {
            let slot = self.current(row, shard);
            // Relaxed: a hint that keeps us from bumping slots with nothing left; the add decides.
            match slot_parts(slot.load_relaxed()) {
                (None, _) => continue,
                (Some(_), handed) if handed >= per_block => continue,
                _ => {}
            }
            match slot_take(slot, n, per_block) {
                SlotTake::Fresh { gid, start, got, exhausted } => {
                    return Some(self.took(row, slot, gid, start, got, exhausted))
                }
                // Elected on a slot that emptied meanwhile: there is no block to install
                // (the heap is out of them), so leave it empty for the next taker to try.
                SlotTake::Empty { elected: true } => self.retire_slot(row, slot),
                _ => {}
            }
        }
        None
    }

    /// After a fresh take of `got` slices from `start` of block `gid` in `slot`: installs the
    /// next block if this take exhausted it (if that fails for lack of memory, what we took is
    /// still good); returns the first slice's address and `got`.
    #[inline(always)]
    fn took(&self, row: usize, slot: &Atom64, gid: u64, start: u32, got: u32, exhausted: bool) -> (u64, u32) {
        if exhausted {
            let _ = self.install_next(row, slot);
        }
        let c = row_class_kind(row).0;
        (self.block_addr(group_of(c), gid) + start as u64 * slice_bytes(c), got)
    }

    /// Installs a fresh block in `slot` (this taker exhausted its block or was elected on an
    /// empty slot). False when no block could be had: the slot is left empty.
    #[inline(never)]
    fn install_next(&self, row: usize, slot: &Atom64) -> bool {
        let (c, kind) = row_class_kind(row);
        let Some(gid) = self.claim_block(group_of(c)) else {
            self.retire_slot(row, slot);
            return false;
        };
        let (seg, local) = split_gid(gid);
        self.block_meta(seg, local).install(kind, c);
        // A trim may have emptied the slot meanwhile and another taker installed a block:
        // what that block has not handed out goes back.
        if let (Some(old), handed) = slot_parts(slot_install(slot, gid)) {
            self.give_back_rest(c, old, handed);
        }
        true
    }

    /// Gives back what block `gid` of class `c` did not hand out (`handed` may overshoot).
    #[inline(always)]
    fn give_back_rest(&self, c: usize, gid: u64, handed: u32) {
        let per_block = slices_per_block(c);
        if handed < per_block {
            let (seg, local) = split_gid(gid);
            self.release_slices(seg, local, c, per_block - handed);
        }
    }

    /// Empties `slot` (of row `row`) and gives back what its block did not hand out.
    fn retire_slot(&self, row: usize, slot: &Atom64) {
        let c = row_class_kind(row).0;
        if let Some((gid, handed)) = slot_retire(slot, slices_per_block(c)) {
            self.give_back_rest(c, gid, handed);
        }
    }

    /// Gives back `k` slices of block `local` of segment `seg` (of class `c`); the giver that
    /// completes the block recycles it.
    #[inline(always)]
    pub(crate) fn release_slices(&self, seg: u32, local: u32, c: usize, k: u32) {
        if self.block_meta(seg, local).give_back(k, slices_per_block(c)) {
            self.recycle(seg, local);
        }
    }

    /// Returns a block whose every slice came back to its tree.
    #[inline(never)]
    fn recycle(&self, seg: u32, local: u32) {
        // Acquire: the block is out of its tree, so the entry cannot change under us.
        let entry = self.seg_table(seg).load_acquire();
        if let SegKind::Group(g) = seg_kind(entry) {
            self.block_meta(seg, local).park();
            self.release_block(g, gid_of(seg, local));
        }
    }

    /// Retires current slot `shard` of row `row`: the slices its block has not handed out
    /// are given back, so that fully freed blocks and segments return to their trees. Safe
    /// while others allocate (the next add on the slot installs a block again); meant for
    /// the end of a phase, before stats or validation.
    pub fn trim_slot(&self, row: usize, shard: u32) {
        self.retire_slot(row, self.current(row, shard));
    }

    /// Retires current slot `slot` of row `row` only if its block has no live slice (every
    /// slice it handed out came back), so that the block returns to its tree. A block with
    /// live slices stays current: retiring it would not return it, and its class would claim
    /// a fresh block for its next request (in the churn of issue 9 every reclaim sweep did
    /// that for every class and shard, and the nulls cascaded).
    fn retire_if_idle(&self, row: usize, slot: &Atom64) {
        let c = row_class_kind(row).0;
        let per_block = slices_per_block(c);
        // Relaxed: a hint; the CAS below decides.
        let w = slot.load_relaxed();
        let (Some(gid), handed) = slot_parts(w) else { return };
        if handed >= per_block {
            // Exhausted: its taker installs the next block.
            return;
        }
        let (seg, local) = split_gid(gid);
        // Relaxed: a hint (frees of the slices handed out so far raise it up to `handed`); a
        // stale or recycled read can only make us retire a block with live slices, which
        // `give_back_rest` handles as `retire_slot` does.
        if self.block_meta(seg, local).freed.load_relaxed() != handed {
            return;
        }
        // AcqRel: as slot_retire's swap; fails if a take came in between.
        if slot.cas_acq_rel(w, 0).is_ok() {
            self.give_back_rest(c, gid, handed);
        }
    }

    /// The reclaim sweep's form of `trim` (see `DeviceHeap::reclaim_before_null`): retires
    /// the current blocks that have no live slice (see `retire_if_idle`), then returns wholly
    /// free segments to the segment tree.
    pub fn trim_idle(&self) {
        let shards = self.layout().shards;
        for row in 0..SLOT_ROWS {
            let mut sh = 0;
            while sh < shards {
                // As in `trim`: a batch of slot words in flight together.
                let n = TRIM_BATCH.min(shards - sh);
                let mut busy = 0u32;
                for k in 0..n {
                    // Relaxed: a hint that skips empty slots (most of them).
                    if self.current(row, sh + k).load_relaxed() != 0 {
                        busy |= 1 << k;
                    }
                }
                while busy != 0 {
                    self.retire_if_idle(row, self.current(row, sh + busy.trailing_zeros()));
                    busy &= busy - 1;
                }
                sh += n;
            }
        }
        for seg in 0..self.layout().num_segments {
            self.trim_segment(seg);
        }
    }

    /// Retires every current block (see `trim_slot`), then returns wholly free segments to
    /// the segment tree (see `trim_segment`).
    pub fn trim(&self) {
        let shards = self.layout().shards;
        for row in 0..SLOT_ROWS {
            let mut sh = 0;
            while sh < shards {
                // Read a batch of slot words before acting on any, so that the loads are in
                // flight together (a sweep reads SLOT_ROWS * shards words, most of them 0).
                let n = TRIM_BATCH.min(shards - sh);
                let mut busy = 0u32;
                for k in 0..n {
                    // Relaxed: a hint that skips empty slots (most of them); the swap decides.
                    if self.current(row, sh + k).load_relaxed() != 0 {
                        busy |= 1 << k;
                    }
                }
                while busy != 0 {
                    self.retire_slot(row, self.current(row, sh + busy.trailing_zeros()));
                    busy &= busy - 1;
                }
                sh += n;
            }
        }
        for seg in 0..self.layout().num_segments {
            self.trim_segment(seg);
        }
    }
}
