//! Blocks: a segment formatted for group `g` (see `class.rs`) is cut into
//! `group_blocks_per_segment(g)` blocks of `group_block_bytes(g)`; a block serves one class of
//! its group at a time (`slices_per_block(c)` slices of `slice_bytes(c)`), or is handed out
//! whole as part of a run. Each group has its own vEB tree of free blocks; a block leaves its
//! tree either to serve slices (installed as a "current" block, see `slice.rs`) or whole.
//!
//! Per block there is one `BlockMeta`: `freed` (slices given back; the free that brings it to
//! the class's slices per block recycles the block) and `kind` (slices, whole, packed..., with
//! the class it serves). A block serving slices is "current" in one slot (see `slice.rs`): the
//! slot word itself counts what the block has handed out, so a warp takes slices with one
//! atomic add on the slot (see `slot_take`).

use crate::atomic::{Atom32, Atom64};

pub use crate::class::{
    block_bytes, blocks_per_segment, ceil_log2, class_of, group_block_bytes, group_block_shift,
    group_blocks_per_segment, group_of, slice_bytes, slices_per_block, BLOCK_ID_SHIFT,
    MAX_BLOCKS_PER_SEGMENT, MAX_CLASS_BYTES, MAX_SLICE_BYTES, MIN_SLICE_SHIFT, NUM_CLASSES, NUM_GROUPS,
};

/// Global id of block `local` of segment `seg` (the same stride for every group, so that
/// splitting an id is a shift; a group's tree holds only its `group_blocks_per_segment` ids of
/// each segment).
#[inline(always)]
pub const fn gid_of(seg: u32, local: u32) -> u64 {
    ((seg as u64) << BLOCK_ID_SHIFT) | local as u64
}

/// Segment and block-within-segment of global block `gid`.
#[inline(always)]
pub const fn split_gid(gid: u64) -> (u32, u32) {
    ((gid >> BLOCK_ID_SHIFT) as u32, (gid & (MAX_BLOCKS_PER_SEGMENT as u64 - 1)) as u32)
}

/// Slice class for `1 <= size <= MAX_SLICE_BYTES` (see `class::class_of`).
#[inline(always)]
pub const fn slice_class(size: u64) -> usize {
    class_of(size)
}

/// Threads that may format segments for one class at the same time, at most: more
/// formatters clear a burst of claimers sooner, but each adds up to a segment of blocks
/// nobody asked for yet (see `formatters`).
pub const MAX_FORMATTERS: u32 = 4;
/// Blocks that concurrent formatting may put in a group's tree at once: caps the formatters
/// of many-block classes (one for 16-64 B slices, whose segments hold 64-256 blocks).
pub const FORMAT_BURST_BLOCKS: u32 = 64;

/// Concurrent formatters for group `g`.
#[inline(always)]
pub const fn formatters(g: usize) -> u32 {
    let k = FORMAT_BURST_BLOCKS / group_blocks_per_segment(g);
    if k < 1 {
        1
    } else if k > MAX_FORMATTERS {
        MAX_FORMATTERS
    } else {
        k
    }
}
/// Most segments one lock holder formats for the claimers waiting on it.
pub const MAX_FORMAT_BATCH: u32 = 16;

/// Block in its tree (parked), or never used: zero, so that a freshly formatted segment's
/// blocks read as free. A `free` that finds it is a double free (or a foreign pointer), which
/// is how a second free of a whole block is caught without the checks.
pub const KIND_FREE: u32 = 0;
/// Block handed out whole.
pub const KIND_WHOLE: u32 = 1;
/// Block serving packed (mixed-size, warp-contiguous) allocations, in units of its slice size.
pub const KIND_PACKED: u32 = 2;
/// Block handed out to serve slices.
pub const KIND_SLICES: u32 = 3;
/// A later block of a run of whole blocks (the first is `KIND_WHOLE`, its `freed` holding
/// the run's length): no pointer starts in it.
pub const KIND_RUN_TAIL: u32 = 4;
/// A block of `RUN_GROUP` at the start of a segment that ends a multi-segment run (the run's
/// head segment records how many).
pub const KIND_LARGE_TAIL: u32 = 5;
/// Bits of the kind word that hold the kind; the class a `KIND_SLICES` or `KIND_PACKED`
/// block serves is above them.
pub const KIND_MASK: u32 = 0xff;
/// Shift of the class in the kind word.
pub const KIND_CLASS_SHIFT: u32 = 8;

/// Kind and class of a kind word.
#[inline(always)]
pub const fn kind_parts(word: u32) -> (u32, usize) {
    (word & KIND_MASK, (word >> KIND_CLASS_SHIFT) as usize)
}

/// Metadata of one block slot.
#[repr(C)]
pub struct BlockMeta {
    /// Slices given back since the block was installed; for a block handed out whole
    /// (`KIND_WHOLE`), the number of blocks in its run (1 for a single block).
    pub freed: Atom32,
    /// `KIND_FREE`, `KIND_SLICES`, `KIND_WHOLE`, `KIND_PACKED`, `KIND_RUN_TAIL` or
    /// `KIND_LARGE_TAIL`, with (for slices and packed) the class above `KIND_CLASS_SHIFT`.
    pub kind: Atom32,
}

impl BlockMeta {
    #[cfg(loom)]
    pub fn new_parked() -> Self {
        Self { freed: Atom32::new(0), kind: Atom32::new(KIND_FREE) }
    }

    /// Resets a block going back to its tree (free count zero, kind free). The caller owns
    /// the block; the release RMW of the tree insert that follows publishes this.
    #[inline(always)]
    pub fn park(&self) {
        // Relaxed: published by the caller's release tree insert.
        self.freed.store_relaxed(0);
        // Relaxed: as above; a later double free reads it (or a later kind) by coherence.
        self.kind.store_relaxed(KIND_FREE);
    }

    /// Prepares a block the caller owns to serve slices of class `c`, of `kind`
    /// (`KIND_SLICES` or `KIND_PACKED`); the release swap that installs it in a slot publishes
    /// this.
    pub fn install(&self, kind: u32, c: usize) {
        // Relaxed: published by the installing swap (see slot_install).
        self.kind.store_relaxed(kind | (c as u32) << KIND_CLASS_SHIFT);
        // Relaxed: as above.
        self.freed.store_relaxed(0);
    }

    /// Gives back `k` slices of a block of `per_block` slices; true when this made all of
    /// them free (the caller then owns the block and must recycle it).
    #[inline(always)]
    pub fn give_back(&self, k: u32, per_block: u32) -> bool {
        // Release: our use of the slices happens-before whoever recycles the block.
        let old = self.freed.fetch_add_release(k);
        if old + k != per_block {
            return false;
        }
        // Acquire (fence): the last giver synchronises with every earlier release in the
        // counter's release sequence before it recycles the block.
        crate::arch::fence_acq_rel_gpu();
        true
    }
}

/// A slot word: `(gid + 1) << 32 | slices handed out`; 0 means no block.
#[inline(always)]
pub const fn slot_value(gid: u64, handed: u32) -> u64 {
    ((gid + 1) << 32) | handed as u64
}

/// Block (if any) and handed-out count of a slot word.
#[inline(always)]
pub const fn slot_parts(w: u64) -> (Option<u64>, u32) {
    let g = w >> 32;
    (if g == 0 { None } else { Some(g - 1) }, w as u32)
}

/// What one add on a slot gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotTake {
    /// Slices `start .. start + got` of block `gid` are ours; `exhausted`: this add took the
    /// block's last slice (or went past it), so this taker must install the next block.
    Fresh { gid: u64, start: u32, got: u32, exhausted: bool },
    /// The block is used up; its exhauster is installing the next one.
    Full,
    /// No block; `elected`: this add was the first since the slot emptied, so this taker
    /// installs one (every later add sees a non-zero count and waits).
    Empty { elected: bool },
}

/// Takes up to `n` slices (1..=4096) from the block in `slot`, whose blocks hold `per_block`
/// slices: one atomic, which also tells which block it was, so no stale read of the slot can
/// hand out a recycled block.
#[inline(always)]
pub fn slot_take(slot: &Atom64, n: u32, per_block: u32) -> SlotTake {
    // Acquire: reads-from the installer's release swap (or a later add in its release
    // sequence), so the block's reset happens-before our use of its slices.
    let old = slot.fetch_add_acquire(n as u64);
    match slot_parts(old) {
        (None, count) => SlotTake::Empty { elected: count == 0 },
        (Some(_), count) if count >= per_block => SlotTake::Full,
        (Some(gid), start) => {
            SlotTake::Fresh { gid, start, got: n.min(per_block - start), exhausted: start + n >= per_block }
        }
    }
}

/// Installs block `gid` (prepared with `BlockMeta::install`) in `slot`, for the taker that
/// was elected or exhausted the previous block; returns what the slot held.
#[inline(always)]
pub fn slot_install(slot: &Atom64, gid: u64) -> u64 {
    // AcqRel swap: publishes the block's reset to every later add; the old value tells the
    // caller what the replaced block (if any) had handed out.
    slot.swap_acq_rel(slot_value(gid, 0))
}

/// Empties `slot`; returns its block and how many slices the block had handed out (the
/// caller gives the rest back). Safe while others take: their adds land before (counted) or
/// after (they see an empty slot). `per_block`: the slices of the slot's blocks.
#[inline(always)]
pub fn slot_retire(slot: &Atom64, per_block: u32) -> Option<(u64, u32)> {
    // AcqRel: totally ordered with the takers' adds on the same word.
    match slot_parts(slot.swap_acq_rel(0)) {
        (Some(gid), count) => Some((gid, count.min(per_block))),
        (None, _) => None,
    }
}

#[cfg(not(loom))]
impl crate::heap::DeviceHeap {
    /// Metadata of block `local` of segment `seg`.
    #[inline(always)]
    pub(crate) fn block_meta(&self, seg: u32, local: u32) -> &BlockMeta {
        let i = seg as u64 * MAX_BLOCKS_PER_SEGMENT as u64 + local as u64;
        // SAFETY: `blocks_off` lays out `num_segments * MAX_BLOCKS_PER_SEGMENT` BlockMetas in
        // the metadata buffer, which lives as long as the heap; i is below that bound.
        unsafe {
            &*((self.meta + self.layout().blocks_off + i * core::mem::size_of::<BlockMeta>() as u64) as usize
                as *const BlockMeta)
        }
    }

    /// Block tree of group `g`.
    #[inline(always)]
    pub(crate) fn block_tree(&self, g: usize) -> crate::veb::Veb<'_> {
        let l = self.layout().block_tree;
        let off = self.layout().block_tree_off + g as u64 * l.total_words as u64 * 8;
        // SAFETY: the layout reserved NUM_GROUPS trees of `total_words` words from
        // `block_tree_off`, and g < NUM_GROUPS.
        let w = unsafe { crate::atomic::words(self.meta + off, l.total_words as usize) };
        crate::veb::Veb::new(w, l)
    }

    /// Address of block `gid` of group `g`.
    #[inline(always)]
    pub(crate) fn block_addr(&self, g: usize, gid: u64) -> u64 {
        let (seg, local) = split_gid(gid);
        self.mem + ((seg as u64) << crate::SEGMENT_SHIFT) + ((local as u64) << group_block_shift(g))
    }

    /// Per-group lock word held while one thread formats segments for the group, and the
    /// count of claimers waiting for it.
    #[inline(always)]
    fn format_lock(&self, g: usize) -> (&Atom32, &Atom32) {
        // SAFETY: the layout reserved 2 * NUM_GROUPS words at format_lock_off.
        let w = unsafe { crate::atomic::words32(self.meta + self.layout().format_lock_off, 2 * NUM_GROUPS) };
        (&w[2 * g], &w[2 * g + 1])
    }

    /// Enters the class's formatter semaphore if fewer than `max` formatters are in.
    fn enter_format(lock: &Atom32, max: u32) -> bool {
        // Relaxed: the CAS decides.
        let v = lock.load_relaxed();
        // AcqRel: entering orders our format after earlier formatters' inserts.
        v < max && lock.cas_acq_rel(v, v + 1).is_ok()
    }

    /// Takes a block from the tree of group `g` and counts it out of its segment.
    fn claim_from_tree(&self, g: usize) -> Option<u64> {
        // Racing claimers spread over the bits of the lowest free word (see claim_spread).
        let spread = (crate::arch::global_thread_x() as u32).wrapping_mul(0x9e37_79b9) >> 26;
        // One pass (no exactness check): claim_block retries, and confirms "empty" with the
        // exact successor before it reports out of memory.
        let gid = self.block_tree(g).try_claim_spread(0, spread)?;
        // AcqRel: counts the block out before anyone can see the segment as all-free;
        // pairs with the reclaimer's CAS in `try_reclaim`.
        self.seg_out(split_gid(gid).0).fetch_add_acq_rel(1);
        Some(gid)
    }

    /// Takes a free block of group `g`, formatting a fresh segment when the group has none.
    /// The block is parked (free count zero); the caller installs it or marks it whole. `None`
    /// means that the group's tree and the segment tree were both seen empty (or, after
    /// `FORMAT_WAIT_NS`, that another thread's format never ended).
    #[inline(never)]
    pub(crate) fn claim_block(&self, g: usize) -> Option<u64> {
        // At most `formatters(g)` threads format segments for a group at once, so that a
        // burst of claimers that find the tree empty does not format a segment each (and
        // spread the heap); each formatter formats its share of what the waiting claimers
        // need. A group with one block per segment formats directly: nothing to share.
        let bps = group_blocks_per_segment(g);
        let locked = bps > 1;
        let (lock, waiters) = self.format_lock(g);
        let mut wait = crate::Wait::new(crate::FORMAT_WAIT_NS);
        let mut waiting = false;
        let mut got;
        loop {
            got = self.claim_from_tree(g);
            if got.is_some() {
                break;
            }
            if !locked || Self::enter_format(lock, formatters(g)) {
                got = if locked { self.claim_from_tree(g) } else { None };
                if got.is_none() {
                    // Relaxed: a sizing hint.
                    let want = 1 + waiters.load_relaxed().saturating_sub(waiting as u32);
                    let segs = if locked {
                        want.div_ceil(bps * formatters(g)).clamp(1, MAX_FORMAT_BATCH)
                    } else {
                        1
                    };
                    for i in 0..segs {
                        // One pass, as for the blocks: "empty" is confirmed below.
                        let Some(seg) = self.seg_tree().try_claim_spread(0, 0) else { break };
                        self.format_segment(seg as u32, g, (i == 0) as u32);
                        if i == 0 {
                            got = Some(gid_of(seg as u32, 0));
                        }
                    }
                }
                if locked {
                    // Release: our inserts happen-before the next formatter's entry.
                    lock.fetch_sub_acq_rel(1);
                }
                got = got.or_else(|| self.claim_from_tree(g));
                // Out of memory only when both trees are empty by the exact searches (the
                // one-pass claims above may miss an index for a moment); a claim that lost its
                // races to other claimers, or missed, tries again.
                if got.is_some()
                    || (self.seg_tree().successor(0).is_none() && self.block_tree(g).successor(0).is_none())
                {
                    break;
                }
            }
            if !waiting {
                waiting = true;
                // Relaxed: a sizing hint for the lock holder.
                waiters.fetch_add_relaxed(1);
            }
            if !wait.sleep() {
                break;
            }
        }
        if waiting {
            // Relaxed: as above.
            waiters.fetch_add_relaxed(u32::MAX);
        }
        got
    }

    /// Takes `k` (1..=group_blocks_per_segment(g)) contiguous free blocks of group `g`, in one
    /// segment, formatting a fresh segment when its tree has no such run; returns the first.
    /// The blocks are parked; the caller marks them. As in `claim_block`, at most
    /// `formatters(g)` threads format segments for the group at once: runs of 64 KiB blocks
    /// serve every request of 128 KiB..1 MiB, and a burst of claimers that found no run would
    /// otherwise format a segment each, binding the heap's free segments to this group.
    #[inline(never)]
    pub(crate) fn claim_block_run(&self, g: usize, k: u32) -> Option<u64> {
        if k == 1 {
            return self.claim_block(g);
        }
        let (lock, _) = self.format_lock(g);
        let mut wait = crate::Wait::new(crate::FORMAT_WAIT_NS);
        loop {
            if let Some(gid) = self.claim_run_in_tree(g, k) {
                return Some(gid);
            }
            if Self::enter_format(lock, formatters(g)) {
                let got = self.claim_run_in_tree(g, k).or_else(|| {
                    let seg = self.seg_tree().claim_from(0)? as u32;
                    self.format_segment(seg, g, k);
                    Some(gid_of(seg, 0))
                });
                // Release: our inserts happen-before the next formatter's entry.
                lock.fetch_sub_acq_rel(1);
                // None: the tree had no such run and the segment tree no free segment, both
                // by exact searches.
                return got;
            }
            if !wait.sleep() {
                return None;
            }
        }
    }

    /// A run of `k` free blocks of group `g` from its tree, counted out of their segment.
    fn claim_run_in_tree(&self, g: usize, k: u32) -> Option<u64> {
        // Within one segment's ids: group 0's blocks fill them all, so nothing else would keep
        // a run from straddling two segments.
        let gid = self.block_tree(g).claim_run_within(k as u64, MAX_BLOCKS_PER_SEGMENT as u64)?;
        // AcqRel: as in claim_from_tree.
        self.seg_out(split_gid(gid).0).fetch_add_acq_rel(k);
        Some(gid)
    }

    /// Returns block `gid` of group `g` to its tree; the last block of a segment to come back
    /// returns the segment to the segment tree.
    #[inline(never)]
    pub(crate) fn release_block(&self, g: usize, gid: u64) {
        let seg = split_gid(gid).0;
        self.block_tree(g).insert(gid);
        // AcqRel: after the insert, so a reclaimer that sees zero also sees our bit.
        let old = self.seg_out(seg).fetch_sub_acq_rel(1);
        if old & crate::segment::OUT_COUNT_MASK == 1 {
            self.try_reclaim(seg, g);
        }
    }
}
