//! Slices: each size class keeps, per multiprocessor shard, a "current" block from which
//! warps carve slices with one atomic add per warp. The warp whose add exhausts the block
//! installs the next one; a warp that finds a stale or full block waits briefly for that,
//! then installs one itself. Freed slices are counted per block; the 4096th free recycles it.

use crate::arch;
use crate::atomic::Atom64;
use crate::block::{
    blocks_per_segment_shift, slice_bytes, split_gid, Take, KIND_PACKED, KIND_SLICES, NUM_CLASSES,
};
use crate::heap::DeviceHeap;
use crate::segment::{seg_kind, SegKind};

/// Rounds of "read current block, bump its count" before a request reports out-of-memory.
/// A round is lost only when another warp made progress or while a block is being
/// installed; with the backoff this bounds the wait at a few milliseconds.
pub const SLICE_RETRIES: u32 = 1024;
/// Slot value while one warp installs the next block: the others wait for it rather than
/// all claiming blocks (which all but one would have to give back).
pub const INSTALLING: u64 = u64::MAX;

/// Rows of current slots: one per class, and one for packed allocations (class-0 blocks
/// of `KIND_PACKED`, kept apart so that their hand-out stays warp-contiguous).
pub const SLOT_ROWS: usize = NUM_CLASSES + 1;
/// The row of packed allocations.
pub const PACKED_ROW: usize = NUM_CLASSES;

/// Class and block kind of the blocks in slot row `row`.
#[inline(always)]
pub const fn row_class_kind(row: usize) -> (usize, u32) {
    if row == PACKED_ROW {
        (0, KIND_PACKED)
    } else {
        (row, KIND_SLICES)
    }
}

/// Packs a current-slot value; 0 means "no block".
#[inline(always)]
pub const fn encode_slot(epoch: u32, gid: u64) -> u64 {
    ((epoch as u64) << 32) | (gid + 1)
}
/// Unpacks a non-zero current-slot value into (epoch, global block index).
#[inline(always)]
pub const fn decode_slot(v: u64) -> (u32, u64) {
    ((v >> 32) as u32, (v & 0xffff_ffff) - 1)
}

impl DeviceHeap {
    /// Current-block slot `shard` of row `row` (a class, or `PACKED_ROW`).
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

    /// Takes up to `n` (1..=4096) consecutive slices of class `c` for a group of threads;
    /// returns the first slice's address and how many were taken (>= 1), or `None` when the
    /// heap is out of memory.
    #[inline]
    pub fn take_slices(&self, c: usize, n: u32) -> Option<(u64, u32)> {
        self.take_in_row(c, n)
    }

    /// `take_slices` from the blocks of slot row `row`: a class, or `PACKED_ROW` (16-byte
    /// units of class-0 blocks marked `KIND_PACKED`).
    #[inline]
    pub(crate) fn take_in_row(&self, row: usize, n: u32) -> Option<(u64, u32)> {
        let (c, _) = row_class_kind(row);
        let slot = self.current(row, arch::smid() & (self.layout().shards - 1));
        let mut ns = crate::BACKOFF_MIN_NS;
        for _ in 0..SLICE_RETRIES {
            // Relaxed: the add in `take` reads the block's count with acquire, and its epoch
            // tells whether this value was stale.
            let cur = slot.load_relaxed();
            if cur == INSTALLING {
                crate::backoff(&mut ns);
                continue;
            }
            if cur != 0 {
                let (epoch, gid) = decode_slot(cur);
                let (seg, local) = split_gid(c, gid);
                // No pre-check of the count: it would put a third dependent round trip on
                // every warp's path. A late add to a full block takes nothing; the 32-bit count
                // cannot reach the epoch bits (a group adds at most 4096 per round and re-reads
                // the slot, which a full block leaves within microseconds).
                let meta = self.block_meta(seg, local);
                match meta.take(epoch, n) {
                    Take::Fresh { start, got, exhausted } if got > 0 => {
                        if exhausted {
                            // We took the last slices: install the next block now. If that
                            // fails for lack of memory, what we took is still good.
                            let _ = self.replace(row, slot, cur);
                        }
                        return Some((self.block_addr(c, gid) + start as u64 * slice_bytes(c), got));
                    }
                    Take::Stale { got } if got > 0 => self.release_slices(seg, local, got),
                    _ => {}
                }
            }
            // Empty, full or stale: replace it, unless another warp is already doing so.
            match self.replace(row, slot, cur) {
                Some(true) => {}
                Some(false) => crate::backoff(&mut ns),
                // No block left: what other multiprocessors' current blocks still hold is the
                // last memory of this class.
                None => return self.steal(row, n),
            }
        }
        None
    }

    /// Takes up to `n` slices from any current block of row `row` (when no new block can be
    /// had: without this, slices left in other shards' blocks would be out of reach).
    #[inline(never)]
    fn steal(&self, row: usize, n: u32) -> Option<(u64, u32)> {
        let (c, _) = row_class_kind(row);
        for shard in 0..self.layout().shards {
            // Relaxed: as in take_slices.
            let cur = self.current(row, shard).load_relaxed();
            if cur == 0 || cur == INSTALLING {
                continue;
            }
            let (epoch, gid) = decode_slot(cur);
            let (seg, local) = split_gid(c, gid);
            let meta = self.block_meta(seg, local);
            if !meta.may_have_slices(epoch) {
                continue;
            }
            match meta.take(epoch, n) {
                Take::Fresh { start, got, .. } if got > 0 => {
                    return Some((self.block_addr(c, gid) + start as u64 * slice_bytes(c), got));
                }
                Take::Stale { got } if got > 0 => self.release_slices(seg, local, got),
                _ => {}
            }
        }
        None
    }

    /// Installs a fresh block in `slot` if it still holds `expected`: `Some(true)` when this
    /// warp did, `Some(false)` when another warp holds or changed the slot, `None` when no
    /// block could be had (out of memory; the slot gets `expected` back).
    #[inline(never)]
    fn replace(&self, row: usize, slot: &Atom64, expected: u64) -> Option<bool> {
        let (c, kind) = row_class_kind(row);
        // AcqRel: exclusive right to install; acquires the previous installer's writes.
        if slot.cas_acq_rel(expected, INSTALLING).is_err() {
            return Some(false);
        }
        let Some(gid) = self.claim_block(c) else {
            // Release: hands the slot back.
            slot.store_release(expected);
            return None;
        };
        let (seg, local) = split_gid(c, gid);
        let epoch = self.block_meta(seg, local).install(kind);
        // Release: publishes the block's reset to the warps that load the slot.
        slot.store_release(encode_slot(epoch, gid));
        Some(true)
    }

    /// Gives back `k` slices of block `local` of segment `seg`; the giver that completes the
    /// block recycles it.
    #[inline(always)]
    pub(crate) fn release_slices(&self, seg: u32, local: u32, k: u32) {
        if self.block_meta(seg, local).give_back(k) {
            self.recycle(seg, local);
        }
    }

    /// Returns a block whose every slice came back to its tree.
    #[inline(never)]
    fn recycle(&self, seg: u32, local: u32) {
        // Acquire: the block is out of its tree, so the entry cannot change under us.
        let entry = self.seg_table(seg).load_acquire();
        if let SegKind::Class(c) = seg_kind(entry) {
            self.block_meta(seg, local).park();
            self.release_block(c, ((seg as u64) << blocks_per_segment_shift(c)) | local as u64);
        }
    }

    /// Retires every current block (its slices not yet handed out are given back), so that
    /// fully freed blocks and segments return to their trees. Safe while others allocate;
    /// meant for the end of a phase, before stats or validation.
    pub fn trim_slot(&self, row: usize, shard: u32) {
        let (c, _) = row_class_kind(row);
        let slot = self.current(row, shard);
        // Relaxed: the CAS below decides.
        let cur = slot.load_relaxed();
        // AcqRel: we own the retired value; an install in progress is left alone.
        if cur == 0 || cur == INSTALLING || slot.cas_acq_rel(cur, 0).is_err() {
            return;
        }
        let (epoch, gid) = decode_slot(cur);
        let (seg, local) = split_gid(c, gid);
        let k = self.block_meta(seg, local).close(epoch);
        if k > 0 {
            self.release_slices(seg, local, k);
        }
    }

    /// Retires every current block (see `trim_slot`), then returns wholly free segments to
    /// the segment tree (see `trim_segment`).
    pub fn trim(&self) {
        for row in 0..SLOT_ROWS {
            for sh in 0..self.layout().shards {
                self.trim_slot(row, sh);
            }
        }
        for seg in 0..self.layout().num_segments {
            self.trim_segment(seg);
        }
    }
}
