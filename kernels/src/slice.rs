//! Slices: each size class keeps, per multiprocessor shard, a "current" block from which
//! warps carve slices. The slot word is the block's hand-out counter too (`block.rs`,
//! `slot_take`): one atomic add per warp both names the block and takes the slices. The warp
//! whose add exhausts the block installs the next one; warps that find the slot full or empty
//! wait for that (the first add on an empty slot elects its installer). Freed slices are
//! counted per block; the free that completes the class's slices per block recycles it.

use crate::arch;
use crate::atomic::Atom64;
use crate::block::{
    gid_of, group_block_bytes, group_blocks_per_segment, group_of, slice_bytes, slices_per_block,
    slot_install, slot_moved_on, slot_parts, slot_retire, slot_take, split_gid, Blocks, SlotTake,
    KIND_PACKED, KIND_SLICES, NUM_CLASSES,
};
use crate::layout::HeapLayout;
use crate::segment::{seg_kind, SegKind};
use crate::trace::{self, Event};

pub use crate::class::{PACKED_CLASSES, RUN_GROUPS};
pub use crate::layout::{RUN_ROW0, SLOT_ROWS};
/// The row of packed class `PACKED_CLASSES[i]`.
#[inline(always)]
pub const fn packed_row(i: usize) -> usize {
    NUM_CLASSES + i
}

/// The row of run group `RUN_GROUPS[i]`: its slots hold whole segments of the group, whose
/// blocks `take_run` hands out in runs.
#[inline(always)]
pub const fn run_row(i: usize) -> usize {
    RUN_ROW0 + i
}

/// Whether slot row `row` is a run group's (see `run_row`), and which group.
#[inline(always)]
pub const fn row_run_group(row: usize) -> Option<usize> {
    if row >= RUN_ROW0 {
        Some(RUN_GROUPS[row - RUN_ROW0])
    } else {
        None
    }
}

/// Runs of more than this many blocks (out of `blocks_per_segment >> RUN_SHARE_SHIFT` of a
/// segment's) take a fresh segment of their own instead of the run row's: a take from the
/// row's segment fails when its rest is too short, and large runs would fail often.
pub const RUN_SHARE_SHIFT: u32 = 2;
/// Segments one `take_run` may install in its row before it gives up (each install follows a
/// take whose run did not fit in the rest of the row's segment).
pub const RUN_INSTALLS: u32 = 16;

/// Slot words `trim` reads before retiring any (at most 32: a bit mask of them).
const TRIM_BATCH: u32 = 8;

/// Most blocks one install claims for its slot when the slot's blocks run out fast (the rest
/// wait in the slot's reserve, see `reserve_parts`): fewer, larger claims from the group's
/// tree, whose lowest words every multiprocessor's installer contends for at once (the
/// install-path trace: 17 us per claim at 4 KiB, 2^20 threads, 132 installers). Four, not
/// eight: the same speed on the H100, and less left in reserves at a burst's end (range/live
/// at 2 KiB, 2^20 threads: 1.16x against 1.33x).
pub const MAX_BATCH_BLOCKS: u32 = 4;
/// A batch holds at most this many slices: classes with 4096 slices per block (up to 256-byte
/// slices) claim two blocks at most, larger ones up to `MAX_BATCH_BLOCKS`.
pub const BATCH_SLICES: u32 = 8192;
/// A batch holds at most this many bytes, so that what reserves hold stays small.
pub const BATCH_BYTES: u64 = 8 << 20;
/// A block whose slices ran out sooner than this after its install doubles its slot's next
/// batch (up to `max_batch`); a slower one sets it back to one block, so that slots whose
/// blocks last (most classes of a mixed workload) never hold blocks ahead.
pub const FAST_BLOCK_NS: u64 = 100_000;
/// Bits of a reserve's block mask (the blocks `base .. base + 32` of one segment).
const RESERVE_MASK_BITS: u32 = 32;
/// Bits of a pace word that hold the slot's batch size (the rest: the install time).
const PACE_BATCH_MASK: u64 = 0xff;

/// Largest batch (blocks per claim) for class `c`.
#[inline(always)]
pub const fn max_batch(c: usize) -> u32 {
    let g = group_of(c);
    let by_slices = BATCH_SLICES / slices_per_block(c);
    let by_bytes = (BATCH_BYTES / group_block_bytes(g)) as u32;
    let k = if by_slices < by_bytes { by_slices } else { by_bytes };
    if k > MAX_BATCH_BLOCKS {
        MAX_BATCH_BLOCKS
    } else if k < 1 {
        1
    } else {
        k
    }
}

/// Bit where a reserve word's segment starts (below it: the base's 32-block unit and the mask).
const RESERVE_SEG_SHIFT: u32 = 35;

/// A reserve word: `(seg + 1) << 35 | (base / 32) << 32 | mask`, bit `i` of `mask` being block
/// `base + i` of segment `seg` (claimed, parked, not installed; `base` a multiple of 32);
/// 0 means none.
#[inline(always)]
pub const fn reserve_value(seg: u32, base: u32, mask: u32) -> u64 {
    ((seg as u64 + 1) << RESERVE_SEG_SHIFT) | ((base / RESERVE_MASK_BITS) as u64) << 32 | mask as u64
}

/// Segment, base block and block mask of a reserve word (`None`: empty).
#[inline(always)]
pub const fn reserve_parts(w: u64) -> Option<(u32, u32, u32)> {
    if w >> RESERVE_SEG_SHIFT == 0 || w as u32 == 0 {
        None
    } else {
        Some((
            (w >> RESERVE_SEG_SHIFT) as u32 - 1,
            ((w >> 32) as u32 & ((1 << (RESERVE_SEG_SHIFT - 32)) - 1)) * RESERVE_MASK_BITS,
            w as u32,
        ))
    }
}

const _: () = assert!(crate::class::MAX_BLOCKS_PER_SEGMENT <= RESERVE_MASK_BITS << (RESERVE_SEG_SHIFT - 32));

/// Class and block kind of the blocks in slot row `row` (a class or packed row, not a run row).
#[inline(always)]
pub const fn row_class_kind(row: usize) -> (usize, u32) {
    if row >= NUM_CLASSES {
        (PACKED_CLASSES[row - NUM_CLASSES], KIND_PACKED)
    } else {
        (row, KIND_SLICES)
    }
}

/// The slice layer's part of the metadata: the current-block slot words (one per row and
/// shard) with their reserves and pace words, with the block layer (`Blocks`) beneath for
/// installing, recycling and stealing blocks. A `Copy` view (two words) that the heap builds
/// from its layout (`DeviceHeap::slots`).
#[derive(Clone, Copy, Debug)]
pub struct Slots<'a> {
    blocks: Blocks<'a>,
}

impl<'a> Slots<'a> {
    /// The slots over the blocks `blocks`.
    #[inline(always)]
    pub fn new(blocks: Blocks<'a>) -> Self {
        Self { blocks }
    }

    /// The heap's layout.
    #[inline(always)]
    pub fn layout(&self) -> &'a HeapLayout {
        self.blocks.layout()
    }

    /// Address of the metadata (the layout is its header).
    #[inline(always)]
    fn meta(&self) -> u64 {
        self.blocks.segments().meta()
    }

    /// Word `shard` of row `row` of a per-slot array of the layout (at `off`: the current
    /// slots, their reserves, their paces; `SLOT_ROWS * shards` words each).
    #[inline(always)]
    fn slot_word(&self, off: u64, row: usize, shard: u32) -> &'a Atom64 {
        let i = row as u64 * self.layout().shards as u64 + shard as u64;
        // SAFETY: the layout reserved SLOT_ROWS * shards words at each per-slot offset.
        unsafe {
            &crate::atomic::words(self.meta() + off, SLOT_ROWS * self.layout().shards as usize)[i as usize]
        }
    }

    /// Current-block slot `shard` of row `row` (a class, or a `packed_row`).
    #[inline(always)]
    pub(crate) fn current(&self, row: usize, shard: u32) -> &'a Atom64 {
        self.slot_word(self.layout().current_off, row, shard)
    }

    /// Reserve word of slot `shard` of row `row` (see `reserve_parts`).
    #[inline(always)]
    pub(crate) fn reserve(&self, row: usize, shard: u32) -> &'a Atom64 {
        self.slot_word(self.layout().reserve_off, row, shard)
    }

    /// The slot of row `row` this multiprocessor takes from: rows with large blocks share
    /// slots between multiprocessors (see `HeapLayout::row_shard_log2`).
    #[inline(always)]
    pub(crate) fn home_shard(&self, row: usize) -> u32 {
        arch::smid() & (self.layout().row_shards(row) - 1)
    }

    /// Pace word of slot `shard` of row `row`: when its block was installed (ns, low byte
    /// cleared) and its batch size (the low byte).
    #[inline(always)]
    fn pace(&self, row: usize, shard: u32) -> &'a Atom64 {
        self.slot_word(self.layout().pace_off, row, shard)
    }

    /// `take_slices` from the blocks of slot row `row`: a class, or a `packed_row` (units of
    /// its class's slice size, in blocks marked `KIND_PACKED`).
    #[inline]
    pub fn take_in_row(&self, row: usize, n: u32) -> Option<(u64, u32)> {
        let shard = self.home_shard(row);
        let slot = self.current(row, shard);
        let per_block = slices_per_block(row_class_kind(row).0);
        // A round is lost only while another warp installs a block, which takes at most
        // FORMAT_WAIT_NS (and usually microseconds).
        let mut wait = crate::Wait::new(crate::INSTALL_WAIT_NS);
        // Trace only: when this taker began to wait, and its polls and `Full` takes.
        let (mut waited_since, mut polls, mut fulls) = (0, 0, 0);
        'take: loop {
            let full = match slot_take(slot, n, per_block) {
                SlotTake::Fresh { gid, start, got, exhausted } => {
                    if trace::ON && waited_since != 0 {
                        trace::add(self.meta(), Event::WaitNs, trace::now() - waited_since);
                        trace::add(self.meta(), Event::Waits, 1);
                        trace::add(self.meta(), Event::TakeSleeps, polls);
                        trace::add(self.meta(), Event::TakeFull, fulls);
                    }
                    return Some(self.took(row, shard, gid, start, got, exhausted));
                }
                SlotTake::Empty { elected: true } => {
                    if !self.install_next(row, shard) {
                        // No block left: what other multiprocessors' current blocks still
                        // hold is the last memory of this class.
                        return self.steal(row, n);
                    }
                    continue;
                }
                SlotTake::Full { gid } => Some(gid),
                SlotTake::Empty { elected: false } => None,
            };
            if trace::ON {
                if waited_since == 0 {
                    waited_since = trace::now();
                }
                fulls += full.is_some() as u64;
            }
            // Another warp installs the next block: poll with loads until it has (see
            // slot_moved_on), then add again.
            loop {
                if !wait.sleep() {
                    trace::add(self.meta(), Event::TimeoutInstall, 1);
                    break 'take;
                }
                polls += trace::ON as u64;
                // Relaxed: a hint of when to add again; the add decides.
                if slot_moved_on(slot.load_relaxed(), full, per_block) {
                    break;
                }
            }
        }
        self.steal(row, n)
    }

    /// A run of `k` contiguous blocks of run group `RUN_GROUPS[i]`, taken with one atomic from
    /// the segment in the group's run row (installing a fresh segment when it is used up), or
    /// for large runs from a fresh segment of its own; returns the first block (parked: the
    /// caller marks the run). `None` when no fresh segment could be had. A burst of run
    /// requests so formats one segment per `blocks_per_segment / k` of them, by one installer
    /// at a time per slot, instead of every requester searching the tree and formatting.
    #[inline(never)]
    pub fn take_run(&self, i: usize, k: u32) -> Option<u64> {
        let (row, g) = (run_row(i), RUN_GROUPS[i]);
        let per = group_blocks_per_segment(g);
        if k > per >> RUN_SHARE_SHIFT {
            return self.blocks.fresh_segment(g, k).map(|seg| gid_of(seg, 0));
        }
        let shard = self.home_shard(row);
        let slot = self.current(row, shard);
        // As in take_in_row: a round is lost only while another requester installs.
        let mut wait = crate::Wait::new(crate::INSTALL_WAIT_NS);
        let mut installs = 0;
        loop {
            let full = match slot_take(slot, k, per) {
                SlotTake::Fresh { gid, start, got, exhausted } => {
                    let ok = !exhausted || self.install_run_segment(row, shard, g);
                    let seg = split_gid(gid).0;
                    if got == k {
                        return Some(gid_of(seg, start));
                    }
                    // The segment's last blocks are too few for the run: back to the tree.
                    for b in start..start + got {
                        self.blocks.release_block(g, gid_of(seg, b));
                    }
                    installs += 1;
                    if !ok || installs >= RUN_INSTALLS {
                        return None;
                    }
                    continue;
                }
                SlotTake::Empty { elected: true } => {
                    installs += 1;
                    if !self.install_run_segment(row, shard, g) || installs >= RUN_INSTALLS {
                        return None;
                    }
                    continue;
                }
                SlotTake::Full { gid } => Some(gid),
                SlotTake::Empty { elected: false } => None,
            };
            // Another requester installs the next segment: poll until it has.
            loop {
                if !wait.sleep() {
                    trace::add(self.meta(), Event::TimeoutInstall, 1);
                    return None;
                }
                // Relaxed: a hint of when to add again; the add decides.
                if slot_moved_on(slot.load_relaxed(), full, per) {
                    break;
                }
            }
        }
    }

    /// Installs a fresh segment of group `g` (every block kept, parked) in slot `shard` of run
    /// row `row`; false, with the slot emptied, when the segment tree has none.
    #[inline(never)]
    fn install_run_segment(&self, row: usize, shard: u32, g: usize) -> bool {
        let per = group_blocks_per_segment(g);
        let Some(seg) = self.blocks.fresh_segment(g, per) else {
            self.retire_slot(row, shard);
            return false;
        };
        trace::add(self.meta(), Event::Installs, 1);
        // As in install_next: a trim may have emptied the slot meanwhile and another
        // requester installed a segment, whose blocks not handed out go back.
        if let (Some(old), handed) = slot_parts(slot_install(self.current(row, shard), gid_of(seg, 0))) {
            self.release_run_rest(g, old, handed);
        }
        true
    }

    /// Returns the blocks of run row segment `gid` (group `g`) from `handed` on (not handed
    /// out; `handed` may overshoot) to the group's tree.
    fn release_run_rest(&self, g: usize, gid: u64, handed: u32) {
        let seg = split_gid(gid).0;
        for b in handed..group_blocks_per_segment(g) {
            self.blocks.release_block(g, gid_of(seg, b));
        }
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
                    return Some(self.took(row, shard, gid, start, got, exhausted))
                }
                // Elected on a slot that emptied meanwhile: there is no block to install
                // (the heap is out of them), so leave it empty for the next taker to try.
                SlotTake::Empty { elected: true } => self.retire_slot(row, shard),
                _ => {}
            }
        }
        None
    }

    /// After a fresh take of `got` slices from `start` of block `gid` in slot `shard`:
    /// installs the next block if this take exhausted it (if that fails for lack of memory,
    /// what we took is still good); returns the first slice's address and `got`.
    #[inline(always)]
    fn took(&self, row: usize, shard: u32, gid: u64, start: u32, got: u32, exhausted: bool) -> (u64, u32) {
        if exhausted {
            let _ = self.install_next(row, shard);
        }
        let c = row_class_kind(row).0;
        (self.blocks.block_addr(group_of(c), gid) + start as u64 * slice_bytes(c), got)
    }

    /// Installs a fresh block in slot `shard` of row `row` (this taker exhausted its block or
    /// was elected on an empty slot): the first of the slot's reserve, else the first of a
    /// batch claimed from the group's tree, whose rest becomes the reserve once the block is
    /// in (the slot's waiters wait for the install only). False when no block could be had:
    /// the slot is left empty.
    #[inline(never)]
    fn install_next(&self, row: usize, shard: u32) -> bool {
        let (c, kind) = row_class_kind(row);
        let g = group_of(c);
        let slot = self.current(row, shard);
        let reserve = self.reserve(row, shard);
        let t0 = trace::now();
        // Relaxed: only this slot's installers write it, one at a time but for a trim race,
        // where a stale pace only sizes one batch. Loaded alongside the swap below.
        let pace = self.pace(row, shard).load_relaxed();
        // AcqRel: takes the whole reserve (against a sweep, or a racing installer after a
        // trim); acquires its blocks' parked state from whoever stored it. A swap rather than
        // a load first: one round trip either way, and the reserve is usually empty.
        let reserved = reserve_parts(reserve.swap_acq_rel(0));
        // The batch doubles while the slot's blocks run out within FAST_BLOCK_NS of their
        // install, and falls back to one block when one lasts longer.
        let fast = pace != 0 && arch::globaltimer().saturating_sub(pace & !PACE_BATCH_MASK) < FAST_BLOCK_NS;
        let last = (pace & PACE_BATCH_MASK) as u32;
        // The block to install, the reserve's rest (segment, mask), and the batch size.
        let (gid, rest, batch) = match reserved {
            Some((seg, base, mask)) => (
                gid_of(seg, base + mask.trailing_zeros()),
                (seg, base, mask & (mask - 1)),
                if fast { last } else { 1 },
            ),
            None => {
                let k = if fast { (2 * last).clamp(1, max_batch(c)) } else { 1 };
                let Some(b) = self.blocks.claim_blocks(g, k) else {
                    if trace::ON {
                        trace::add(self.meta(), Event::ClaimNs, trace::now() - t0);
                    }
                    self.retire_slot(row, shard);
                    return false;
                };
                let r = b.rest();
                // The rest lies in one leaf word (64 blocks from r.base); a reserve holds 32 of
                // them: the lower half if it has any, and what the other half took goes back.
                let (lo, hi) = (r.mask as u32, (r.mask >> RESERVE_MASK_BITS) as u32);
                if lo != 0 && hi != 0 {
                    self.release_reserved(g, r.seg, r.base + RESERVE_MASK_BITS, hi);
                }
                let rest =
                    if lo != 0 { (r.seg, r.base, lo) } else { (r.seg, r.base + RESERVE_MASK_BITS, hi) };
                (b.first(), rest, k)
            }
        };
        if trace::ON {
            trace::add(self.meta(), Event::ClaimNs, trace::now() - t0);
        }
        let (seg, local) = split_gid(gid);
        self.blocks.block_meta(seg, local).install(kind, c);
        // A trim may have emptied the slot meanwhile and another taker installed a block:
        // what that block has not handed out goes back.
        let replaced = slot_install(slot, gid);
        // The slot's waiters are served: the rest of the batch and the pace after them.
        self.keep_reserved(g, reserve, rest.0, rest.1, rest.2);
        // Relaxed: see the load above.
        self.pace(row, shard).store_relaxed((arch::globaltimer() & !PACE_BATCH_MASK) | batch as u64);
        if trace::ON {
            trace::install(self.meta(), trace::now() - t0);
        }
        if let (Some(old), handed) = slot_parts(replaced) {
            self.give_back_rest(c, old, handed);
        }
        true
    }

    /// Puts blocks `base + i` (bit `i` of `mask`) of segment `seg` (of group `g`, claimed and
    /// parked) in `reserve`; whatever it displaces (a racing installer's, after a trim) goes
    /// back to the tree.
    #[inline(always)]
    fn keep_reserved(&self, g: usize, reserve: &Atom64, seg: u32, base: u32, mask: u32) {
        if mask == 0 {
            return;
        }
        // AcqRel: publishes the parked blocks to the next taker; acquires what it displaces.
        if let Some((s, b, m)) = reserve_parts(reserve.swap_acq_rel(reserve_value(seg, base, mask))) {
            self.release_reserved(g, s, b, m);
        }
    }

    /// Returns reserved blocks `base + i` (bit `i` of `mask`) of segment `seg` (group `g`) to
    /// the tree.
    #[inline(never)]
    fn release_reserved(&self, g: usize, seg: u32, base: u32, mut mask: u32) {
        while mask != 0 {
            // Parked since their claim: straight back to the tree.
            self.blocks.release_block(g, gid_of(seg, base + mask.trailing_zeros()));
            mask &= mask - 1;
        }
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

    /// Empties slot `shard` of row `row` and its reserve: gives back what its block did not
    /// hand out, and the reserved blocks (for a run row, the segment's blocks not handed out).
    fn retire_slot(&self, row: usize, shard: u32) {
        if let Some(g) = row_run_group(row) {
            if let Some((gid, handed)) = slot_retire(self.current(row, shard), group_blocks_per_segment(g)) {
                self.release_run_rest(g, gid, handed);
            }
            return;
        }
        let c = row_class_kind(row).0;
        if let Some((gid, handed)) = slot_retire(self.current(row, shard), slices_per_block(c)) {
            self.give_back_rest(c, gid, handed);
        }
        // Relaxed: skips the swap on an empty reserve; the swap decides.
        if self.reserve(row, shard).load_relaxed() != 0 {
            self.release_reserve(row, shard);
        }
    }

    /// Empties the reserve of slot `shard` of row `row`: its blocks go back to their tree.
    fn release_reserve(&self, row: usize, shard: u32) {
        // AcqRel: as in install_next's swap.
        if let Some((seg, base, mask)) = reserve_parts(self.reserve(row, shard).swap_acq_rel(0)) {
            self.release_reserved(group_of(row_class_kind(row).0), seg, base, mask);
        }
    }

    /// Gives back `k` slices of block `local` of segment `seg` (of class `c`); the giver that
    /// completes the block recycles it.
    #[inline(always)]
    pub fn release_slices(&self, seg: u32, local: u32, c: usize, k: u32) {
        if self.blocks.block_meta(seg, local).give_back(k, slices_per_block(c)) {
            self.recycle(seg, local);
        }
    }

    /// Returns a block whose every slice came back to its tree.
    #[inline(never)]
    fn recycle(&self, seg: u32, local: u32) {
        // Acquire: the block is out of its tree, so the entry cannot change under us.
        let entry = self.blocks.segments().seg_table(seg).load_acquire();
        if let SegKind::Group(g) = seg_kind(entry) {
            let t0 = trace::now();
            self.blocks.block_meta(seg, local).park();
            self.blocks.release_block(g, gid_of(seg, local));
            if trace::ON {
                trace::add(self.meta(), Event::Recycles, 1);
                trace::add(self.meta(), Event::RecycleNs, trace::now() - t0);
            }
        }
    }

    /// Retires current slot `shard` of row `row`: the slices its block has not handed out
    /// are given back, so that fully freed blocks and segments return to their trees. Safe
    /// while others allocate (the next add on the slot installs a block again); meant for
    /// the end of a phase, before stats or validation.
    pub fn trim_slot(&self, row: usize, shard: u32) {
        self.retire_slot(row, shard);
    }

    /// Retires current slot `slot` of row `row` only if its block has no live slice (every
    /// slice it handed out came back), so that the block returns to its tree. A block with
    /// live slices stays current: retiring it would not return it, and its class would claim
    /// a fresh block for its next request (in the churn of issue 9 every reclaim sweep did
    /// that for every class and shard, and the nulls cascaded).
    fn retire_if_idle(&self, row: usize, shard: u32) {
        if row_run_group(row).is_some() {
            // A run row's segment holds no live allocation of its own (each run is one, and
            // frees itself): what it has not handed out always goes back.
            self.retire_slot(row, shard);
            return;
        }
        let slot = self.current(row, shard);
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
        if self.blocks.block_meta(seg, local).freed.load_relaxed() != handed {
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
                    // Relaxed: as above; reserved blocks are untouched, so they always go
                    // back (null means full: no reserve outlives a sweep).
                    if self.reserve(row, sh + k).load_relaxed() != 0 {
                        self.release_reserve(row, sh + k);
                    }
                }
                while busy != 0 {
                    self.retire_if_idle(row, sh + busy.trailing_zeros());
                    busy &= busy - 1;
                }
                sh += n;
            }
        }
        for seg in 0..self.layout().num_segments {
            self.blocks.trim_segment(seg);
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
                    // Relaxed: a hint that skips empty slots (most of them); the swaps decide.
                    if self.current(row, sh + k).load_relaxed() != 0
                        || self.reserve(row, sh + k).load_relaxed() != 0
                    {
                        busy |= 1 << k;
                    }
                }
                while busy != 0 {
                    self.retire_slot(row, sh + busy.trailing_zeros());
                    busy &= busy - 1;
                }
                sh += n;
            }
        }
        for seg in 0..self.layout().num_segments {
            self.blocks.trim_segment(seg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_words_round_trip() {
        assert_eq!(reserve_parts(0), None);
        for seg in [0, 1, 511, (1 << 24) - 1] {
            for base in (0..crate::class::MAX_BLOCKS_PER_SEGMENT).step_by(RESERVE_MASK_BITS as usize) {
                for mask in [1, 0x8000_0001, u32::MAX] {
                    assert_eq!(reserve_parts(reserve_value(seg, base, mask)), Some((seg, base, mask)));
                }
            }
        }
    }
}
