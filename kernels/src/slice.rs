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
/// Each lost round means another warp made progress (took slices or installed a block).
pub const SLICE_RETRIES: u32 = 64;
/// Times a warp that found a full block re-reads the slot (sleeping in between) before it
/// installs a block itself; waiting avoids a burst of claims that all but one give back.
pub const REFILL_WAIT_SPINS: u32 = 4;
/// Sleep between those re-reads.
pub const REFILL_BACKOFF_NS: u32 = 64;

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
        let i = c as u64 * self.layout.shards as u64 + shard as u64;
        // SAFETY: the layout reserved NUM_CLASSES * shards words at current_off.
        unsafe {
            &crate::atomic::words(
                self.meta + self.layout.current_off,
                NUM_CLASSES * self.layout.shards as usize,
            )[i as usize]
        }
    }

    /// Takes up to `n` (1..=32) slices of class `c` for a warp's group; returns the first
    /// slice's address and how many consecutive slices were taken (>= 1), or `None` when the
    /// heap is out of memory.
    pub fn take_slices(&self, c: usize, n: u32) -> Option<(u64, u32)> {
        let slot = self.current(c, arch::smid() % self.layout.shards);
        let shift = blocks_per_segment_shift(c);
        for _ in 0..SLICE_RETRIES {
            // Acquire: pairs with the release CAS that installed the block (its reset count).
            let cur = slot.load_acquire();
            if cur == 0 {
                self.refill(c, slot, 0, false)?;
                continue;
            }
            let (epoch, gid) = decode_slot(cur);
            let seg = (gid >> shift) as u32;
            let local = (gid & ((1 << shift) - 1)) as u32;
            let meta = self.block_meta(seg, local);
            if !meta.may_have_slices(epoch) {
                self.refill(c, slot, cur, true)?;
                continue;
            }
            match meta.take(epoch, n) {
                Take::Stale { got } => {
                    if got > 0 {
                        self.release_slices(seg, local, got);
                    }
                    self.refill(c, slot, cur, true)?;
                }
                Take::Fresh {
                    start,
                    got,
                    exhausted,
                } => {
                    if exhausted {
                        // We took the last slices: install the next block now. If that fails
                        // for lack of memory, what we took is still good.
                        let refilled = self.refill(c, slot, cur, false);
                        if got == 0 {
                            refilled?;
                        }
                    }
                    if got > 0 {
                        return Some((
                            self.block_addr(c, gid) + start as u64 * slice_bytes(c),
                            got,
                        ));
                    }
                }
            }
        }
        None
    }

    /// Replaces the block in `slot` (which held `expected`) with a fresh one, unless someone
    /// already did. `wait`: give the warp that exhausted the block a moment to do it first.
    /// `None` only when no block could be had (out of memory).
    fn refill(&self, c: usize, slot: &Atom64, expected: u64, wait: bool) -> Option<()> {
        if wait {
            for _ in 0..REFILL_WAIT_SPINS {
                // Acquire: if it changed, the new block's reset is visible to us.
                if slot.load_acquire() != expected {
                    return Some(());
                }
                arch::nanosleep(REFILL_BACKOFF_NS);
            }
        }
        // Acquire: as above.
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
    pub(crate) fn release_slices(&self, seg: u32, local: u32, k: u32) {
        let meta = self.block_meta(seg, local);
        if meta.give_back(k) {
            // Acquire: the block is out of its tree, so the entry cannot change under us.
            let entry = self.seg_table(seg).load_acquire();
            if let SegKind::Class(c) = seg_kind(entry) {
                meta.park();
                self.release_block(
                    c,
                    ((seg as u64) << blocks_per_segment_shift(c)) | local as u64,
                );
            }
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
