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
pub const SLICE_RETRIES: u32 = 4096;
/// Slices handed out from a current block when the warp that crosses this count prepares
/// the next block (half way: the other half leaves time for the claim).
pub const PREPARE_AT: u32 = crate::SLICES_PER_BLOCK / 2;
/// Slot value while one warp installs the next block: the others wait for it rather than
/// all claiming blocks (which all but one would have to give back).
pub const INSTALLING: u64 = u64::MAX;

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
        self.slot_word(c as u64 * self.layout().shards as u64 + shard as u64)
    }

    /// Next-block slot `shard` of class `c`: a block prepared while the current one is still
    /// half full, so that replacing an exhausted block is a swap, not a claim.
    #[inline(always)]
    pub(crate) fn next(&self, c: usize, shard: u32) -> &Atom64 {
        let shards = self.layout().shards as u64;
        self.slot_word((NUM_CLASSES as u64 + c as u64) * shards + shard as u64)
    }

    #[inline(always)]
    fn slot_word(&self, i: u64) -> &Atom64 {
        let n = 2 * NUM_CLASSES * self.layout().shards as usize;
        // SAFETY: the layout reserved 2 * NUM_CLASSES * shards words at current_off.
        unsafe { &crate::atomic::words(self.meta + self.layout().current_off, n)[i as usize] }
    }

    /// Takes up to `n` (1..=32) slices of class `c` for a warp's group; returns the first
    /// slice's address and how many consecutive slices were taken (>= 1), or `None` when the
    /// heap is out of memory.
    #[inline]
    pub fn take_slices(&self, c: usize, n: u32) -> Option<(u64, u32)> {
        let shard = arch::smid() & (self.layout().shards - 1);
        let slot = self.current(c, shard);
        let shift = blocks_per_segment_shift(c);
        let mut ns = crate::BACKOFF_MIN_NS;
        for _ in 0..SLICE_RETRIES {
            // Relaxed: the add in `take` reads the block's count with acquire, and its epoch
            // tells whether this value was stale.
            let cur = slot.load_relaxed();
            if cur == INSTALLING {
                crate::backoff_to(&mut ns, crate::SLOT_BACKOFF_MAX_NS);
                continue;
            }
            if cur != 0 {
                let (epoch, gid) = decode_slot(cur);
                let (seg, local) = ((gid >> shift) as u32, (gid & ((1 << shift) - 1)) as u32);
                // No pre-check of the count: it would put a third dependent round trip on
                // every warp's path. A late add to a full block takes nothing; the 32-bit count
                // cannot reach the epoch bits (a warp adds at most 32 per round and re-reads
                // the slot, which a full block leaves within microseconds).
                let meta = self.block_meta(seg, local);
                match meta.take(epoch, n) {
                    Take::Fresh { start, got, exhausted } if got > 0 => {
                        if exhausted {
                            // We took the last slices: install the next block now. If that
                            // fails for lack of memory, what we took is still good.
                            let _ = self.replace(c, shard, cur);
                        } else if start < PREPARE_AT && start + n >= PREPARE_AT {
                            // Half way through: have the next block ready.
                            self.prepare_next(c, shard);
                        }
                        return Some((self.block_addr(c, gid) + start as u64 * slice_bytes(c), got));
                    }
                    Take::Stale { got } if got > 0 => self.release_slices(seg, local, got),
                    _ => {}
                }
            }
            // Empty, full or stale: replace it, unless another warp is already doing so.
            match self.replace(c, shard, cur) {
                Some(true) => {}
                Some(false) => crate::backoff_to(&mut ns, crate::SLOT_BACKOFF_MAX_NS),
                // No block left: what other multiprocessors' current blocks still hold is the
                // last memory of this class.
                None => return self.steal(c, n),
            }
        }
        None
    }

    /// Takes up to `n` slices from any current or next block of class `c` (when no new block
    /// can be had: without this, slices left in other shards' blocks would be out of reach).
    #[inline(never)]
    fn steal(&self, c: usize, n: u32) -> Option<(u64, u32)> {
        let shift = blocks_per_segment_shift(c);
        // Next blocks count too: their epoch is installed, so slices can be taken from them
        // where they sit (their shard swaps them in later, partly used).
        let shards = self.layout().shards;
        for i in 0..2 * shards {
            let slot = if i < shards { self.current(c, i) } else { self.next(c, i - shards) };
            // Relaxed: as in take_slices.
            let cur = slot.load_relaxed();
            if cur == 0 || cur == INSTALLING {
                continue;
            }
            let (epoch, gid) = decode_slot(cur);
            let (seg, local) = ((gid >> shift) as u32, (gid & ((1 << shift) - 1)) as u32);
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

    /// Installs a fresh block in the current slot if it still holds `expected` (the prepared
    /// next block when there is one): `Some(true)` when this warp did, `Some(false)` when
    /// another warp holds or changed the slot, `None` when no block could be had (out of
    /// memory; the slot gets `expected` back).
    #[inline(never)]
    fn replace(&self, c: usize, shard: u32, expected: u64) -> Option<bool> {
        let slot = self.current(c, shard);
        // AcqRel: exclusive right to install; acquires the previous installer's writes.
        if slot.cas_acq_rel(expected, INSTALLING).is_err() {
            return Some(false);
        }
        // AcqRel: takes the prepared block (acquiring its install); a preparation still in
        // progress (INSTALLING) will store its block later, for the next replacement.
        let prepared = self.next(c, shard).swap_acq_rel(0);
        if prepared != 0 && prepared != INSTALLING {
            // Release: publishes the block's reset to the warps that load the slot.
            slot.store_release(prepared);
            return Some(true);
        }
        match self.claim_installed(c) {
            Some(v) => {
                // Release: as above.
                slot.store_release(v);
                Some(true)
            }
            None => {
                // Release: hands the slot back.
                slot.store_release(expected);
                None
            }
        }
    }

    /// Claims a block of class `c` and starts a fresh epoch in it; returns its slot value.
    fn claim_installed(&self, c: usize) -> Option<u64> {
        let gid = self.claim_block(c)?;
        let shift = blocks_per_segment_shift(c);
        let epoch = self.block_meta((gid >> shift) as u32, (gid & ((1 << shift) - 1)) as u32).install();
        Some(encode_slot(epoch, gid))
    }

    /// Fills the empty next slot of (`c`, `shard`) with a fresh block. Out of memory leaves
    /// it empty: the replacement will then try itself.
    #[inline(never)]
    fn prepare_next(&self, c: usize, shard: u32) {
        let next = self.next(c, shard);
        // AcqRel: exclusive right to fill the slot.
        if next.cas_acq_rel(0, INSTALLING).is_err() {
            return;
        }
        let v = self.claim_installed(c).unwrap_or(0);
        // Release: publishes the block's reset to the warp that swaps it in. A replacement
        // that swapped INSTALLING out meanwhile has left 0 here: this store refills it.
        next.store_release(v);
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
        for slot in [self.current(c, shard), self.next(c, shard)] {
            // Relaxed: the CAS below decides.
            let cur = slot.load_relaxed();
            // AcqRel: we own the retired value; an install in progress is left alone.
            if cur == 0 || cur == INSTALLING || slot.cas_acq_rel(cur, 0).is_err() {
                continue;
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
}
