//! Slices: each size class keeps, per multiprocessor shard, a "current" block from which
//! warps carve slices with one atomic add per warp. The warp whose add exhausts the block
//! installs the next one; a warp that finds a stale or full block waits briefly for that,
//! then installs one itself. Freed slices are counted per block; the 4096th free recycles it.

use crate::arch;
use crate::atomic::Atom64;
use crate::block::{blocks_per_segment_shift, slice_bytes, Take, NUM_CLASSES};
use crate::heap::DeviceHeap;
use crate::segment::{seg_kind, SegKind};

/// Rounds of "read current block, bump its count" before a request reports out-of-memory.
/// A round is lost only when another warp made progress or while a block is being
/// installed; with the backoff this bounds the wait at a few milliseconds.
pub const SLICE_RETRIES: u32 = 1024;
/// Rounds a warp that found its current block full (or stale) waits, with backoff, for the
/// warp that exhausted it to install the next one before installing one itself. Waiting
/// avoids a burst of block claims that all but one would give back.
pub const REFILL_PATIENCE: u32 = 6;

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
    /// Current-block slot `shard` of class `c`.
    #[inline(always)]
    pub(crate) fn current(&self, c: usize, shard: u32) -> &Atom64 {
        let i = c as u64 * self.layout().shards as u64 + shard as u64;
        // SAFETY: the layout reserved NUM_CLASSES * shards words at current_off.
        unsafe {
            &crate::atomic::words(
                self.meta + self.layout().current_off,
                NUM_CLASSES * self.layout().shards as usize,
            )[i as usize]
        }
    }

    /// Takes up to `n` (1..=32) slices of class `c` for a warp's group; returns the first
    /// slice's address and how many consecutive slices were taken (>= 1), or `None` when the
    /// heap is out of memory.
    #[inline]
    pub fn take_slices(&self, c: usize, n: u32) -> Option<(u64, u32)> {
        let slot = self.current(c, arch::smid() & (self.layout().shards - 1));
        let shift = blocks_per_segment_shift(c);
        let mut ns = crate::BACKOFF_MIN_NS;
        let mut waited = 0;
        for _ in 0..SLICE_RETRIES {
            // Acquire: pairs with the release CAS that installed the block (its reset count).
            let cur = slot.load_acquire();
            if cur == 0 {
                self.refill(c, slot, 0)?;
                continue;
            }
            let (epoch, gid) = decode_slot(cur);
            let (seg, local) = ((gid >> shift) as u32, (gid & ((1 << shift) - 1)) as u32);
            let meta = self.block_meta(seg, local);
            let take = if meta.may_have_slices(epoch) { Some(meta.take(epoch, n)) } else { None };
            match take {
                Some(Take::Fresh { start, got, exhausted }) if got > 0 => {
                    if exhausted {
                        // We took the last slices: install the next block now. If that fails
                        // for lack of memory, what we took is still good.
                        let _ = self.refill(c, slot, cur);
                    }
                    return Some((self.block_addr(c, gid) + start as u64 * slice_bytes(c), got));
                }
                Some(Take::Stale { got }) if got > 0 => self.release_slices(seg, local, got),
                _ => {}
            }
            // Full or stale: the warp that exhausted the block is installing the next one.
            if waited < REFILL_PATIENCE {
                waited += 1;
                crate::backoff(&mut ns);
            } else {
                waited = 0;
                self.refill(c, slot, cur)?;
            }
        }
        None
    }

    /// Replaces the block in `slot` (which held `expected`) with a fresh one, unless someone
    /// already did. `None` only when no block could be had (out of memory).
    #[inline(never)]
    fn refill(&self, c: usize, slot: &Atom64, expected: u64) -> Option<()> {
        // Acquire: if it changed, the new block's reset is visible to us.
        if slot.load_acquire() != expected {
            return Some(());
        }
        let gid = self.claim_block(c)?;
        let shift = blocks_per_segment_shift(c);
        let (seg, local) = ((gid >> shift) as u32, (gid & ((1 << shift) - 1)) as u32);
        let meta = self.block_meta(seg, local);
        let epoch = meta.install();
        // AcqRel: the release publishes the block's reset to the warps that load the slot.
        if slot.cas_acq_rel(expected, encode_slot(epoch, gid)).is_err() {
            // Another warp installed one first; ours was never seen by anyone.
            meta.park();
            self.release_block(c, gid);
        }
        Some(())
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
    pub fn trim_slot(&self, c: usize, shard: u32) {
        // AcqRel: we own the retired value; the acquire sees the block's install.
        let cur = self.current(c, shard).swap_acq_rel(0);
        if cur == 0 {
            return;
        }
        let (epoch, gid) = decode_slot(cur);
        let shift = blocks_per_segment_shift(c);
        let (seg, local) = ((gid >> shift) as u32, (gid & ((1 << shift) - 1)) as u32);
        let k = self.block_meta(seg, local).close(epoch);
        if k > 0 {
            self.release_slices(seg, local, k);
        }
    }
}
