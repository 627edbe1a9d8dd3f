//! Slices: each size class keeps, per multiprocessor shard, a "current" run of blocks (one
//! block, or up to `MAX_RUN_BLOCKS` consecutive ones while the slot's runs run out fast) from
//! which warps carve slices. The slot word is the run's hand-out counter too (`block.rs`,
//! `slot_take`): one atomic add per warp both names the run and takes the slices. The warp
//! whose add exhausts the run installs the next one (for 16..32 B, only if another add came
//! after it; else it empties the slot, see `installs_on_demand`); warps that find the slot
//! full or empty wait for that (the first add on an empty slot elects its installer). Freed
//! slices are counted per block; the free that completes the class's slices per block
//! recycles it, even while the rest of its run is current.

use crate::arch;
use crate::atomic::Atom64;
use crate::block::{
    block_at, full_mask, gid_of, group_block_bytes, group_block_shift, group_blocks_per_segment, group_of,
    kind_parts, kind_word, mask_range, run_block_handed, slice_bytes, slices_per_block, slot_blocks,
    slot_has_rest, slot_install, slot_install_run, slot_moved_on, slot_parts, slot_retire, slot_run_value,
    slot_take, split_gid, BlockBatch, BlockMeta, Blocks, SlotTake, KIND_PACKED, KIND_SLICES, MAX_RUN_BLOCKS,
    NUM_CLASSES,
};
use crate::class::{div_per_block, is_mask_class};
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

/// The class whose slots the boot fills with a block each (`Slots::preinstall`,
/// `DeviceHeap::boot_slot`): the smallest, 16 B.
pub const BOOT_SLOT_CLASS: usize = 0;

/// Runs of more than this many blocks (out of `blocks_per_segment >> RUN_SHARE_SHIFT` of a
/// segment's) take a fresh segment of their own instead of the run row's: a take from the
/// row's segment fails when its rest is too short, and large runs would fail often.
pub const RUN_SHARE_SHIFT: u32 = 2;
/// Segments one `take_run` may install in its row before it gives up (each install follows a
/// take whose run did not fit in the rest of the row's segment).
pub const RUN_INSTALLS: u32 = 16;

/// Blocks of its partial-block index a take of a mask class looks at before it takes from its
/// slot's run instead (see `Slots::take_partial`).
pub const PARTIAL_VISITS: u32 = 4;
/// CASes on one block's free mask that a take may lose (to other takers and givers) before it
/// moves on to the next block.
pub const PARTIAL_CAS_TRIES: u32 = 8;

/// Slot words `trim` reads before retiring any (at most 32: a bit mask of them).
const TRIM_BATCH: u32 = 8;

/// The runs of one slot row hold at most this many slices together: a slot's run at most
/// `ROW_RUN_SLICES / row_shards` (see `max_run`). What the runs leave unhanded at a burst's
/// end is then at most a quarter of a burst of 2^20 requests of the class (range / live at
/// 2^20 threads: at most 0.25 from the runs), whatever the heap's size and so its slots per
/// row. Classes of 4096 slices per block take two blocks at most where 32 slots share the row
/// (128 B, 512 KiB blocks, 8 GiB), 144..256 B four to eight where eight do (1 MiB blocks),
/// 512 B up to 16 (`MAX_RUN_BLOCKS`); 16-64 B take one (see `RUN_MIN_BLOCK_BYTES`). A/B on the
/// H200 against 8192 slices a slot for every row (the rule before; NOTES r48 `b/`, two rounds
/// in turn): alloc at 2^20 threads 144 B 0.300 -> 0.182 ms, 200 B 0.351 -> 0.197, 256 B
/// 0.310 -> 0.206, 512 B 0.358 -> 0.236, 1 KiB 0.468 -> 0.313, range / live 1.06-1.23 for
/// those sizes (144 B 1.33 before). 2^19 gave 128 B 1.28 and 2 KiB 10% slower.
/// (4096 slices a run: one block for the classes of 4096 slices, each install a claim from
/// the tree: 256 B alloc at 2^20 threads 0.49 ms on the H100, 16 B 0.134 ms.)
pub const ROW_RUN_SLICES: u32 = 1 << 18;
/// Runs hold at most this many bytes.
pub const RUN_BYTES: u64 = 16 << 20;
/// Classes with fewer slices per block than this take one block at a time: a warp's take of
/// up to 32 slices then spans at most two blocks of a run (see `Taken`).
pub const RUN_MIN_SLICES_PER_BLOCK: u32 = 32;
/// Most slices one take may ask for (`Slots::take_in_row`'s contract). A slot word counts
/// the slices asked of its run in 32 bits, and every taker adds before it knows whether the
/// run has room: with at most one take in flight per warp (8448 warps on an H100's or H200's
/// 132 multiprocessors), 2^16 each stays far below 2^32. Callers ask for a warp's or a
/// thread block's worth (at most 1024), or a packed warp's units (below 4096).
pub const MAX_TAKE: u32 = 1 << 16;
/// Classes whose blocks are smaller than this (16 to 64 B: 64 to 256 KiB blocks of 2730 to
/// 5461 slices) take one block at a time: a run of two blocks did not make their bursts
/// faster, but the second block, claimed ahead, was untouched at the end of one on a third of
/// the multiprocessors. A burst of 2^20 x 16 B had 403 blocks out for the 256 its slices fill
/// (59 of them untouched, 132 partly used: one per multiprocessor; r31 `spread/`); with one
/// block a run, range / live 1.73-1.75 -> 1.45-1.49 at 16 B, 1.68-1.71 -> 1.50 at 32 B, and
/// allocation as fast or faster (32 B 0.116-0.121 -> 0.104 ms; H200, r31 `run1/`). 48 and
/// 64 B (256 KiB blocks) too since r32 (`run512/`, two rounds in turn): mixed ≤64 range /
/// live 3.17-3.18 -> 2.80 and alloc 0.157-0.165 -> 0.144-0.147 ms, 64 B 1.25-1.34 -> 1.23-1.25,
/// single sizes within their spread. Not for the larger classes of 4096 slices a block:
/// their rows share slots between multiprocessors (8 GiB: 32 slots for 512 KiB blocks, 8 for
/// 1 MiB), and one block a run made 128 and 256 B 24% and 36% slower to allocate (`run1/`).
pub const RUN_MIN_BLOCK_BYTES: u64 = 512 << 10;
/// Rows of blocks smaller than this (16 to 32 B: 64 and 128 KiB blocks) install on demand
/// (`installs_on_demand`).
pub const ON_DEMAND_BLOCK_BYTES: u64 = 256 << 10;

/// Longest sleep of a taker waiting for an install in rows whose slots serve few
/// multiprocessors (see `FAST_POLL_MIN_SHARDS`). A waiter wakes up to one sleep late (twice
/// that where `nanosleep` sleeps twice the time asked); an install takes 7-9 us, and with
/// `BACKOFF_MAX_NS` (2 us) a small launch's waiters woke 2-3 us after it (trace, H200, NOTES
/// r37). A/B against 2048 ns (H200, NOTES r37 `d/`, three rounds in turn): 2^20 threads 16 B
/// 6%, 24-32 B 2%, 48 B 4%, 64 B 7% faster, 128 B-4 KiB within ±2%, mixed within ±4% (≤512 4%
/// slower in every round); 64 B at 64 to 8192 threads 5-19% faster (512 B, whose rows keep
/// 2048 ns, 8% slower at 1024 threads: the spread of small launches is ±10%). 512 ns for every
/// row made 128 B-1 KiB and mixed sizes up to 4096 B 4-12% slower at 2^20 (`c/`): where many
/// waiters share a slot, their polls are traffic on the word its takers and installer update;
/// 128 ns was slower still (`a/`).
pub const FAST_POLL_MAX_SLEEP_NS: u32 = 512;
/// Slots a row needs for `FAST_POLL_MAX_SLEEP_NS`: with 64 or more (8 GiB heaps: the classes
/// of 64 to 256 KiB blocks, 16 to 64 B, and their packed rows), a slot serves at most three of
/// an H100 SXM's or H200's 132 multiprocessors.
pub const FAST_POLL_MIN_SHARDS: u32 = 64;

/// Longest single sleep of a taker of a row of `row_shards` slots that waits for its slot's
/// next run (`Slots::take_in_row`): `FAST_POLL_MAX_SLEEP_NS` where a slot serves few
/// multiprocessors, so that a small launch's warps wake soon after their multiprocessor's
/// install; `BACKOFF_MAX_NS` where more share a slot, whose waiters' polls would load the word
/// that its takers and installer update.
#[inline(always)]
pub const fn install_max_sleep(row_shards: u32) -> u32 {
    if row_shards >= FAST_POLL_MIN_SHARDS {
        FAST_POLL_MAX_SLEEP_NS
    } else {
        crate::BACKOFF_MAX_NS
    }
}

/// Whether the next run of slot row `row` is installed on demand: by the first taker that finds
/// the slot empty, not by the take that used up the run. At a burst's end, the block an
/// exhauster installed for nobody stays out, untouched, among the touched ones: 1M x 32 B had
/// range / live 1.46-1.50, on demand 1.24-1.25 (24 B 1.62-1.66 -> 1.48-1.62), and allocated
/// 6% faster (H200, r34 `ab3/`..`ab5/`, `final/`). Not from 48 B up: 64 B went 1.24 -> 1.19
/// (under the 1.3 target either way) but allocated 3-7% slower, 48 B stayed at 1.33, and
/// 256 B was 6-22% slower with the install on the next taker's path. The 16-byte packed row
/// (`malloc_packed`'s smallest unit, `class::PACKED16_CLASS`: 128 KiB blocks of group 1)
/// installs on demand too (not measured apart).
#[inline(always)]
pub const fn installs_on_demand(row: usize) -> bool {
    group_block_bytes(group_of(row_class_kind(row).0)) < ON_DEMAND_BLOCK_BYTES
}

/// A run whose slices ran out sooner than this after its install doubles its slot's next run
/// (up to `max_run`); a slower one sets it back to one block, so that slots whose blocks last
/// (most classes of a mixed workload) never hold blocks ahead.
pub const FAST_BLOCK_NS: u64 = 100_000;
/// Bits of a pace word that hold the slot's last run length (the rest: the install time).
const PACE_RUN_MASK: u64 = 0xff;

/// Most blocks in a run of slot row `row` when it has `row_shards` slots (a power of two, as
/// `HeapLayout::row_shards` gives): one for packed rows
/// (a warp's packed run must lie in one block) and for classes with few slices per block,
/// else as `ROW_RUN_SLICES` (over the row's slots), `RUN_BYTES` and `MAX_RUN_BLOCKS` allow.
#[inline(always)]
pub const fn max_run(row: usize, row_shards: u32) -> u32 {
    let (c, kind) = row_class_kind(row);
    let per = slices_per_block(c);
    if kind == KIND_PACKED
        || per < RUN_MIN_SLICES_PER_BLOCK
        || group_block_bytes(group_of(c)) < RUN_MIN_BLOCK_BYTES
    {
        return 1;
    }
    debug_assert!(row_shards.is_power_of_two());
    let by_slices = (ROW_RUN_SLICES >> row_shards.trailing_zeros()) / per;
    let by_bytes = (RUN_BYTES / group_block_bytes(group_of(c))) as u32;
    let k = if by_slices < by_bytes { by_slices } else { by_bytes };
    if k > MAX_RUN_BLOCKS {
        MAX_RUN_BLOCKS
    } else if k < 1 {
        1
    } else {
        k
    }
}

/// What one take hands out: `got` consecutive slices from `base`, then (when the take crossed
/// the end of a block of the slot's run) `got2` more from `base2`, the start of the run's next
/// block. Slice `rank` of the take is at `addr(rank, slice_bytes)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    pub base: u64,
    pub got: u32,
    pub base2: u64,
    pub got2: u32,
}

impl Taken {
    /// `got` slices from `base`, in one piece.
    #[inline(always)]
    pub const fn one(base: u64, got: u32) -> Self {
        Self { base, got, base2: 0, got2: 0 }
    }

    /// Slices taken in all.
    #[inline(always)]
    pub const fn total(&self) -> u32 {
        self.got + self.got2
    }

    /// Address of slice `rank` (`rank < total()`) of `slice` bytes.
    #[inline(always)]
    pub const fn addr(&self, rank: u32, slice: u64) -> u64 {
        if rank < self.got {
            self.base + rank as u64 * slice
        } else {
            self.base2 + (rank - self.got) as u64 * slice
        }
    }
}

/// Class and block kind of the blocks in slot row `row` (a class or packed row, not a run row).
#[inline(always)]
pub const fn row_class_kind(row: usize) -> (usize, u32) {
    if row >= NUM_CLASSES {
        (PACKED_CLASSES[row - NUM_CLASSES], KIND_PACKED)
    } else {
        (row, KIND_SLICES)
    }
}

/// log2 of the words between two slots of row `row` in `l`'s per-slot arrays: a row's
/// `row_shards` slots spread evenly over its `shards` words (see `Slots::slot_word`).
#[inline(always)]
pub const fn slot_stride_log2(l: &HeapLayout, row: usize) -> u32 {
    l.shards.trailing_zeros() - l.row_shard_log2[row] as u32
}

/// The slice layer's part of the metadata: the current-run slot words (one per row and
/// shard) with their pace words, with the block layer (`Blocks`) beneath for installing,
/// recycling and stealing blocks. A `Copy` view (two words) that the heap builds
/// from its layout (`DeviceHeap::slots`).
#[derive(Clone, Copy, Debug)]
pub struct Slots<'a> {
    blocks: Blocks<'a>,
}

impl<'a> Slots<'a> {
    /// The slots over the blocks `blocks`. Safe: a `Blocks` view comes from a heap
    /// (`DeviceHeap::blocks`) or from the unsafe `Segments::new`, whose caller vouched for it.
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

    /// Word `i` (below the layout's `shards`) of row `row` of a per-slot array of the layout
    /// (at `off`: the current slots, their paces; `SLOT_ROWS * shards` words each).
    #[inline(always)]
    fn row_word(&self, off: u64, row: usize, i: u32) -> &'a Atom64 {
        let l = self.layout();
        let i = row as u64 * l.shards as u64 + i as u64;
        // SAFETY: the layout reserved SLOT_ROWS * shards words at each per-slot offset.
        unsafe { &crate::atomic::words(self.meta() + off, SLOT_ROWS * l.shards as usize)[i as usize] }
    }

    /// Word of slot `shard` (below the row's `row_shards`) of row `row` in a per-slot array.
    /// A row's slots lie evenly spread over its `shards` words: the eight slots of a row of
    /// 1 MiB blocks (8 GiB) would share one 64-byte line, and every poll of their waiters and
    /// every add of their takers would queue at that one line (NOTES r48).
    #[inline(always)]
    fn slot_word(&self, off: u64, row: usize, shard: u32) -> &'a Atom64 {
        debug_assert!(shard < self.layout().row_shards(row), "slot {shard} of row {row}: not one it uses");
        self.row_word(off, row, shard << slot_stride_log2(self.layout(), row))
    }

    /// Word `i` (below the layout's `shards`) of row `row` of the current slots, and whether a
    /// slot of the row uses it (the others stay zero): for the validator.
    #[inline(always)]
    pub(crate) fn current_word(&self, row: usize, i: u32) -> (&'a Atom64, bool) {
        let k = slot_stride_log2(self.layout(), row);
        let used = i & ((1 << k) - 1) == 0 && (i >> k) < self.layout().row_shards(row);
        (self.row_word(self.layout().current_off, row, i), used)
    }

    /// Current-block slot `shard` of row `row` (a class, or a `packed_row`).
    #[inline(always)]
    pub(crate) fn current(&self, row: usize, shard: u32) -> &'a Atom64 {
        self.slot_word(self.layout().current_off, row, shard)
    }

    /// Whether slot `shard` of row `row` is one the row takes from (`row_shards`): the
    /// maintenance calls that take a slot index (`preinstall`, `trim_slot`) leave the others
    /// alone.
    #[inline(always)]
    fn uses_slot(&self, row: usize, shard: u32) -> bool {
        row < SLOT_ROWS && shard < self.layout().row_shards(row)
    }

    /// The slot of row `row` this multiprocessor takes from: rows with large blocks share
    /// slots between multiprocessors (see `HeapLayout::row_shard_log2`).
    #[inline(always)]
    pub(crate) fn home_shard(&self, row: usize) -> u32 {
        arch::smid() & (self.layout().row_shards(row) - 1)
    }

    /// Pace word of slot `shard` of row `row`: when its run was installed (ns, low byte
    /// cleared) and its length in blocks (the low byte).
    #[inline(always)]
    fn pace(&self, row: usize, shard: u32) -> &'a Atom64 {
        self.slot_word(self.layout().pace_off, row, shard)
    }

    /// `take_slices` from the blocks of slot row `row`: a class, or a `packed_row` (units of
    /// its class's slice size, in blocks marked `KIND_PACKED`, whose runs are one block, so
    /// that what a take gets is one piece).
    ///
    /// # Safety
    /// `n` is 1..=`MAX_TAKE`: the take adds `n` to the slot word's 32-bit count, and a much
    /// larger one would carry into the run's block id, so that later takes hand out another
    /// block's slices. Not checked: the common path takes at most a warp's or a thread
    /// block's worth.
    #[inline]
    pub unsafe fn take_in_row(&self, row: usize, n: u32) -> Option<Taken> {
        let shard = self.home_shard(row);
        let slot = self.current(row, shard);
        let per_block = slices_per_block(row_class_kind(row).0);
        // A round is lost only while another warp installs a block, which takes at most
        // FORMAT_WAIT_NS (and usually microseconds).
        let max_sleep = install_max_sleep(self.layout().row_shards(row));
        let mut wait = crate::Wait::with_max_sleep(crate::INSTALL_WAIT_NS, max_sleep);
        // Trace only: when this taker began to wait, and its polls and `Full` takes.
        let (mut waited_since, mut polls, mut fulls) = (0, 0, 0);
        'take: loop {
            let full = match slot_take(slot, n, per_block) {
                SlotTake::Fresh { gid, blocks, start, got, exhausted } => {
                    if trace::ON && waited_since != 0 {
                        trace::add(self.meta(), Event::WaitNs, trace::now() - waited_since);
                        trace::add(self.meta(), Event::Waits, 1);
                        trace::add(self.meta(), Event::TakeSleeps, polls);
                        trace::add(self.meta(), Event::TakeFull, fulls);
                    }
                    return Some(self.took(row, shard, (gid, blocks), start, (got, n), exhausted));
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
            // Another warp installs the next run: poll with loads until it has (see
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

    /// `take_in_row` for class `c`, which for a mask class first takes free slices of its
    /// partly live blocks (lowest block first, see `take_partial`), then from its slot's run.
    ///
    /// # Safety
    /// As for [`Slots::take_in_row`]: `n` is 1..=`MAX_TAKE`.
    #[inline(always)]
    pub unsafe fn take_in_class(&self, c: usize, n: u32) -> Option<Taken> {
        if is_mask_class(c) {
            if let Some(t) = self.take_partial_in(c, n, PARTIAL_VISITS) {
                return Some(t);
            }
        }
        // SAFETY: the caller's contract.
        unsafe { self.take_in_row(c, n) }
    }

    /// `take_partial`'s slices as one piece, `None` when it had none.
    #[inline(always)]
    pub fn take_partial_in(&self, c: usize, n: u32, visits: u32) -> Option<Taken> {
        let (base, got) = self.take_partial(c, n, visits);
        (got > 0).then_some(Taken::one(base, got))
    }

    /// A run of `k` contiguous blocks of run group `RUN_GROUPS[i]`, taken with one atomic from
    /// the segment in the group's run row (installing a fresh segment when it is used up), or
    /// for large runs from fresh segments (`Blocks::fresh_run`: it may begin in the free
    /// blocks before them); returns the first block (parked: the caller marks the run).
    /// `None` when no fresh segment could be had. A burst of run requests so formats one
    /// segment per `blocks_per_segment / k` of them, by one installer at a time per slot,
    /// instead of every requester searching the tree and formatting.
    #[inline(never)]
    pub fn take_run(&self, i: usize, k: u32) -> Option<u64> {
        let (row, g) = (run_row(i), RUN_GROUPS[i]);
        let per = group_blocks_per_segment(g);
        if k > per >> RUN_SHARE_SHIFT {
            self.retire_boot_slots();
            return self.blocks.fresh_run(g, k);
        }
        let shard = self.home_shard(row);
        let slot = self.current(row, shard);
        // As in take_in_row: a round is lost only while another requester installs.
        let mut wait = crate::Wait::new(crate::INSTALL_WAIT_NS);
        let mut installs = 0;
        loop {
            let full = match slot_take(slot, k, per) {
                SlotTake::Fresh { gid, start, got, exhausted, .. } => {
                    let ok = !exhausted || self.install_run_segment(row, shard, g);
                    let seg = split_gid(gid).0;
                    if got == k {
                        return Some(gid_of(seg, start));
                    }
                    // The segment's last blocks are too few for the run: back to the tree.
                    self.blocks.release_run(g, gid_of(seg, start), got);
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
    /// out; `handed` may overshoot) to the group's tree, or the segment to the segment tree
    /// if it handed out none.
    fn release_run_rest(&self, g: usize, gid: u64, handed: u32) {
        let per = group_blocks_per_segment(g);
        if handed < per {
            self.blocks.release_run(g, gid_of(split_gid(gid).0, handed), per - handed);
        }
    }

    /// Takes up to `n` slices from any current run of row `row` (when no new block can be
    /// had: without this, slices left in other shards' runs would be out of reach). Looks at
    /// the slots the row uses only (`row_shards`): a request that gets null has come here for
    /// its class and each fallback class, one load after another.
    #[inline(never)]
    fn steal(&self, row: usize, n: u32) -> Option<Taken> {
        let per_block = slices_per_block(row_class_kind(row).0);
        for shard in 0..self.layout().row_shards(row) {
            let slot = self.current(row, shard);
            // Relaxed: a hint that keeps us from bumping slots with nothing left; the add decides.
            let w = slot.load_relaxed();
            if !slot_has_rest(w, per_block) {
                continue;
            }
            match slot_take(slot, n, per_block) {
                SlotTake::Fresh { gid, blocks, start, got, exhausted } => {
                    return Some(self.took(row, shard, (gid, blocks), start, (got, n), exhausted))
                }
                // Elected on a slot that emptied meanwhile (the heap out of blocks, or a run
                // used up and left empty for an install on demand): leave it empty for the
                // next taker, which installs or finds the heap full.
                SlotTake::Empty { elected: true } => self.retire_slot(row, shard),
                _ => {}
            }
        }
        None
    }

    /// After a fresh take of `got` of the `n` slices asked for from index `start` of the run
    /// (first block `gid`, `blocks` blocks) in slot `shard`: if this take exhausted the run,
    /// installs the next one, or (`installs_on_demand`, this take got all it asked for and
    /// no other add came after it) empties the slot for the next taker to install
    /// (`vacate`); if the install fails for lack of memory, what we took is still good.
    /// Returns the slices as at most two pieces (a take of up to `RUN_MIN_SLICES_PER_BLOCK`
    /// slices spans at most two of the run's blocks). A larger take that spans more
    /// (`malloc_block`'s) gives back what lies past the second block: those slices count as
    /// handed out and freed.
    #[inline(always)]
    fn took(
        &self,
        row: usize,
        shard: u32,
        (gid, blocks): (u64, u32),
        start: u32,
        (got, n): (u32, u32),
        exhausted: bool,
    ) -> Taken {
        if exhausted && !(installs_on_demand(row) && got == n && self.vacate(row, shard, gid, blocks)) {
            let _ = self.install_next(row, shard);
        }
        let c = row_class_kind(row).0;
        let (s, g) = (slice_bytes(c), group_of(c));
        let first_block = self.blocks.block_addr(g, gid);
        if blocks == 1 {
            return Taken::one(first_block + start as u64 * s, got);
        }
        let per = slices_per_block(c);
        // The block of the run that slice `start` lies in, with no division by a variable.
        let j = div_per_block(c, start);
        let index = start - j * per;
        let got1 = got.min(per - index);
        let got2 = (got - got1).min(per);
        let (seg, local) = split_gid(gid);
        let (mut past, mut b) = (got - got1 - got2, local + j + 2);
        while past > 0 {
            let k = past.min(per);
            // SAFETY: these k slices of the run's block b (class c) are part of our take and
            // are handed to no one (the caller gets the first two pieces only).
            unsafe { self.release_slices(seg, b, c, 0, k) };
            (past, b) = (past - k, b + 1);
        }
        let block_addr = |i: u32| first_block + ((i as u64) << group_block_shift(g));
        Taken { base: block_addr(j) + index as u64 * s, got: got1, base2: block_addr(j + 1), got2 }
    }

    /// Installs a fresh run in slot `shard` of row `row` (this taker exhausted its run or was
    /// elected on an empty slot): consecutive blocks claimed from the group's tree with one
    /// claim, as many as the slot's pace asks for (see `FAST_BLOCK_NS`, `max_run`) and the
    /// tree's word gives in a row; a run of a whole segment's blocks while the group's tree is
    /// empty is a fresh segment (`Blocks::claim_whole_fresh_segment`). False when no block
    /// could be had: the slot is left empty.
    #[inline(never)]
    fn install_next(&self, row: usize, shard: u32) -> bool {
        let (c, kind) = row_class_kind(row);
        let g = group_of(c);
        let slot = self.current(row, shard);
        let t0 = trace::now();
        // Relaxed: only this slot's installers write it, one at a time but for a trim race,
        // where a stale pace only sizes one run.
        let pace = self.pace(row, shard).load_relaxed();
        // Relaxed: a hint for sizing the run (below); loaded beside the pace, so that the two
        // loads wait together (after the pace, it made a lone install 1-2 us slower).
        let w = slot.load_relaxed();
        // Relaxed: a hint (see take_back_after); loaded beside the others.
        let booted = self.blocks.booted_hint();
        // The run doubles while the slot's runs run out within FAST_BLOCK_NS of their
        // install, and falls back to one block when one lasts longer.
        let fast = pace != 0 && arch::globaltimer().saturating_sub(pace & !PACE_RUN_MASK) < FAST_BLOCK_NS;
        let last = (pace & PACE_RUN_MASK) as u32;
        let paced = if fast { 2 * last } else { 1 };
        // Or as many blocks as the slices already asked for: every take adds its count to the
        // slot before it waits, so an empty slot's count, or an exhausted run's count past
        // its slices, is what the takers waiting for this install want (a small launch of
        // 8 KiB requests on a new heap installed runs of 1, 2, 4 blocks in turn, one after the
        // other, each waited for).
        let per_block = slices_per_block(c);
        let queued = match slot_parts(w) {
            (None, count) => count,
            (Some(_), handed) => handed.saturating_sub(per_block * slot_blocks(w)),
        };
        let want =
            paced.max(queued.div_ceil(per_block)).clamp(1, max_run(row, self.layout().row_shards(row)));
        // A run of a whole segment's blocks takes a fresh segment directly while the
        // group's tree is empty (see `claim_whole_fresh_segment`).
        let whole =
            if want >= group_blocks_per_segment(g) { self.blocks.claim_whole_fresh_segment(g) } else { None };
        let Some(batch) = whole.or_else(|| self.blocks.claim_blocks(g, want)) else {
            trace::add_since(self.meta(), Event::ClaimNs, t0);
            self.retire_slot(row, shard);
            return false;
        };
        trace::add_since(self.meta(), Event::ClaimNs, t0);
        // The claim's consecutive blocks from its lowest (racers may have split what it took);
        // the others go back.
        let (blocks, others) = batch.split_run();
        self.release_batch(g, others);
        let gid = batch.first();
        let (seg, local) = split_gid(gid);
        if booted != 0 {
            self.blocks.take_back_after(g, seg, booted);
        }
        for i in 0..blocks {
            self.blocks.install(seg, local + i, kind, c);
        }
        // A trim may have emptied the slot meanwhile and another taker installed a run: what
        // that run has not handed out goes back.
        let replaced = slot_install_run(slot, gid, blocks);
        // Relaxed: see the load above.
        self.pace(row, shard).store_relaxed((arch::globaltimer() & !PACE_RUN_MASK) | blocks as u64);
        if trace::ON {
            trace::install(self.meta(), trace::now() - t0);
        }
        if let (Some(old), handed) = slot_parts(replaced) {
            self.give_back_rest(c, old, slot_blocks(replaced), handed);
        }
        true
    }

    /// Empties slot `shard` of row `row`, whose run (first block `gid`, `blocks` blocks) a take
    /// that got all it asked for has just used up, so that the first taker to come installs
    /// the next run (see `installs_on_demand`). False when another add came after ours on the
    /// run (its count went past its slices: a taker that now waits, or a stealer): the caller
    /// installs now. True when the slot moved on without us (a trim retired the run; a taker
    /// may be installing). Nothing to give back: every slice of the run is handed out, and
    /// each block recycles when its last slice is freed, in a slot or not.
    #[inline(never)]
    fn vacate(&self, row: usize, shard: u32, gid: u64, blocks: u32) -> bool {
        let slot = self.current(row, shard);
        let total = slices_per_block(row_class_kind(row).0) * blocks;
        let ours = slot_run_value(gid, blocks, total);
        // AcqRel, more than needed: the empty word publishes and acquires nothing (the elected
        // installer's claim and swap order themselves; a relaxed CAS passes loom model (11),
        // review of r34), kept as the slot's other swaps, once per run. Fails when any add
        // came after ours (the count moved past `total`), or the run is no longer the slot's.
        match slot.cas_acq_rel(ours, 0) {
            Ok(_) => true,
            Err(now) => !matches!(slot_parts(now), (Some(g), _) if g == gid && slot_blocks(now) == blocks),
        }
    }

    /// Installs a first block in slot `shard` of row `row` (a class's row) if the slot is
    /// empty and no taker has asked it for slices yet: for the boot (`DeviceHeap::boot_slot`),
    /// so that a new heap's first requests of the class take one atomic instead of waiting for
    /// an install. True when it installed one. Safe while others take: a taker that adds to
    /// the empty slot first makes our CAS fail, and the block goes back to its tree. A slot
    /// the row does not use (`shard` at or past its `row_shards`) gets nothing: the row never
    /// takes from it, and its word (`slot_word`) would be another row's slot.
    pub fn preinstall(&self, row: usize, shard: u32) -> bool {
        if !self.uses_slot(row, shard) {
            return false;
        }
        let slot = self.current(row, shard);
        // Relaxed: a hint; the CAS below decides.
        if slot.load_relaxed() != 0 {
            return false;
        }
        let (c, kind) = row_class_kind(row);
        let g = group_of(c);
        let Some(batch) = self.blocks.claim_blocks(g, 1) else { return false };
        // One block asked: the claim's first; any other goes back.
        self.release_batch(g, batch.rest());
        let gid = batch.first();
        let (seg, local) = split_gid(gid);
        self.blocks.install(seg, local, kind, c);
        // AcqRel: as slot_install_run's swap, the release publishes the block's reset to every
        // later add; it fails if a taker added to the empty slot first (its installer owns it).
        if slot.cas_acq_rel(0, slot_run_value(gid, 1, 0)).is_ok() {
            return true;
        }
        self.blocks.park(seg, local, g);
        self.blocks.release_block(g, gid);
        false
    }

    /// While the heap is new (a booted segment not taken back yet): retires every slot of
    /// `BOOT_SLOT_CLASS` whose current block holds no live slice (the boot's untouched blocks,
    /// and any other idle one, as a sweep would), so that the first claim of a run of fresh
    /// segments (device or host pool), which takes back every booted segment with no block
    /// out, takes back segment 0 too. Blocks installed ahead there would split the free
    /// segments as unused booted ones did (`a_booted_heap_serves_as_many_big_runs`: 16
    /// segments served three 64 MiB runs instead of four). In a reclaim window: a block
    /// between its slot and its tree is in neither, and a claimer that finds the trees empty
    /// meanwhile must wait for it rather than report null (review of r33).
    #[inline(never)]
    pub fn retire_boot_slots(&self) {
        if self.blocks.booted_hint() == 0 {
            return;
        }
        self.blocks.in_reclaim_window(|| {
            for shard in 0..self.layout().row_shards(BOOT_SLOT_CLASS) {
                self.retire_if_idle(BOOT_SLOT_CLASS, shard);
            }
        });
    }

    /// Returns the blocks of `batch` (of group `g`, claimed and parked) to the tree.
    #[inline(never)]
    fn release_batch(&self, g: usize, batch: BlockBatch) {
        let mut mask = batch.mask;
        while mask != 0 {
            // Parked since their claim: straight back to the tree.
            self.blocks.release_block(g, gid_of(batch.seg, batch.base + mask.trailing_zeros()));
            mask &= mask - 1;
        }
    }

    /// Gives back what the run of `blocks` blocks from `gid` (of class `c`) did not hand out
    /// (`handed`, through its blocks in order, may overshoot).
    #[inline(always)]
    fn give_back_rest(&self, c: usize, gid: u64, blocks: u32, handed: u32) {
        let per_block = slices_per_block(c);
        let (seg, local) = split_gid(gid);
        for j in 0..blocks {
            let passed = run_block_handed(handed, j, per_block);
            if passed < per_block {
                // SAFETY: the slot's run was retired (our swap or CAS), so no taker gets the
                // slices of block j past `passed`: they were never handed out.
                unsafe { self.release_slices(seg, local + j, c, passed, per_block - passed) };
            }
        }
    }

    /// Empties slot `shard` of row `row`: gives back what its run did not hand out (for a run
    /// row, the segment's blocks not handed out). In a reclaim window: a claimer that finds
    /// the trees empty meanwhile waits for the give-back (a host trim runs outside the sweep).
    /// A slot with nothing to give back (empty, an election count, a run wholly handed out)
    /// is emptied without one: every install that finds no block retires its slot, and on a
    /// full heap those windows (two RMWs on two words that every claimer reads, and claimers
    /// that sleep while any is open) made `util`'s requests after the first null 3.7x slower
    /// (16 B on the H100: 10.8 s against 2.9 s before bff51b7, NOTES r27).
    fn retire_slot(&self, row: usize, shard: u32) {
        let slot = self.current(row, shard);
        let per = match row_run_group(row) {
            Some(g) => group_blocks_per_segment(g),
            None => slices_per_block(row_class_kind(row).0),
        };
        // Relaxed: a hint; the CAS decides.
        let w = slot.load_relaxed();
        // AcqRel: as slot_retire's swap. It fails if a take or an install came in since our
        // load; then the path below decides.
        if !slot_has_rest(w, per) && (w == 0 || slot.cas_acq_rel(w, 0).is_ok()) {
            return;
        }
        self.blocks.in_reclaim_window(|| {
            let Some((gid, blocks, handed)) = slot_retire(slot, per) else { return };
            match row_run_group(row) {
                Some(g) => self.release_run_rest(g, gid, handed),
                None => self.give_back_rest(row_class_kind(row).0, gid, blocks, handed),
            }
        })
    }

    /// Gives back the `k` slices from slice `first` of block `local` of segment `seg` (of
    /// class `c`); the giver that completes the block recycles it. A block of a mask class
    /// gets their bits, any other block its free count (`first` unused).
    ///
    /// # Safety
    /// As the heap calls it: block `local` of segment `seg` serves class `c`, and slices
    /// `first .. first + k` of it (`k` of them for a class that counts its frees) were taken
    /// from it and are handed to no one (never handed out, or freed by their owner), each
    /// given back once. Nothing checks it: slices given back that are live, or twice, are
    /// handed out again while in use, and the block is recycled under its live slices.
    #[inline(never)]
    pub unsafe fn release_slices(&self, seg: u32, local: u32, c: usize, first: u32, k: u32) {
        // SAFETY: the caller's contract is the callees' (with the block's own words).
        unsafe {
            if is_mask_class(c) {
                self.release_bits(self.blocks.free_mask(seg, local), seg, local, c, mask_range(first, k));
            } else {
                self.release_slices_of(self.blocks.block_meta(seg, local), seg, local, c, k);
            }
        }
    }

    /// `release_slices` of `k` slices of a block of a class that counts its frees (not a mask
    /// class), where the caller has the block's metadata (`free`, found with no header load).
    ///
    /// # Safety
    /// As for `release_slices`, and `meta` is block `local` of segment `seg`'s metadata.
    #[inline(always)]
    pub unsafe fn release_slices_of(&self, meta: &BlockMeta, seg: u32, local: u32, c: usize, k: u32) {
        debug_assert!(!is_mask_class(c));
        if meta.give_back(k, slices_per_block(c)) {
            self.recycle(seg, local, group_of(c));
        }
    }

    /// `release_slices` of the slices `bits` of a block of mask class `c`, whose free mask the
    /// caller has (`free`, found with no header load).
    ///
    /// # Safety
    /// As for `release_slices` (the slices are `bits`, of mask class `c`), and `mask` is block
    /// `local` of segment `seg`'s free mask.
    #[inline(always)]
    pub unsafe fn release_bits(&self, mask: &Atom64, seg: u32, local: u32, c: usize, bits: u64) {
        if self.blocks.give_back_bits(mask, seg, local, c, bits) {
            self.recycle(seg, local, group_of(c));
        }
    }

    /// Up to `n` slices of mask class `c` that were handed out and freed, or given back
    /// unhanded by a retired slot, from a block whose other slices may be live: the lowest
    /// run of free slices (at most `n`) of the lowest block in the class's partial-block
    /// index, taken with one CAS on the block's free mask: (first slice's address, slices).
    /// No slices when the index shows no such block (or, after `visits` blocks or
    /// `PARTIAL_CAS_TRIES` lost CASes on each, none could be had): the caller takes from its
    /// slot's run. A pair, not an `Option<Taken>`: returned in registers. Each look goes past
    /// the last (ids only grow) and drops the mark of a block it finds without free slices, so
    /// `visits = u32::MAX` (before a request falls back to a larger class or gets null) ends
    /// after at most one look per marked block. Before this, a block
    /// of 4..64 slices came back only when every slice was free, and under churn at 70% live
    /// such blocks held 809 MiB for about 270 MiB of live slices (CPU model, NOTES r30).
    /// Nothing for a class that is not a mask class (it has no partial-block index).
    #[inline(never)]
    #[cold]
    pub fn take_partial(self, c: usize, n: u32, visits: u32) -> (u64, u32) {
        if c >= NUM_CLASSES || !is_mask_class(c) {
            return (0, 0);
        }
        let tree = self.blocks.partial_tree(c);
        let (g, per) = (group_of(c), slices_per_block(c));
        let (full, word) = (full_mask(per), kind_word(KIND_SLICES, c));
        // A mask and kind word of a partly free block of class `c`.
        let partial = |m: u64, kind: u32| m != 0 && m != full && kind == word;
        let mut from = 0;
        for _ in 0..visits {
            // A few looks: one pass through the summaries (a miss costs a take from the slot);
            // the look before a fallback or a null: exact.
            let found = if visits == u32::MAX { tree.successor(from) } else { tree.successor_hint(from) };
            let Some(id) = found else { return (0, 0) };
            let gid = block_at(g, id);
            let (seg, local) = split_gid(gid);
            let (mask, meta) = (self.blocks.free_mask(seg, local), self.blocks.block_meta(seg, local));
            let mut tries = 0;
            let mut dropped = false;
            while tries < PARTIAL_CAS_TRIES {
                // Relaxed: hints; the CAS decides, and the kind is read again after it.
                let (m, kind) = (mask.load_relaxed(), meta.kind.load_relaxed());
                if !partial(m, kind) {
                    // Not a partial block of ours (taken empty, recycled, or another class's
                    // now): drop the mark, then look again. A give-back that made the mask
                    // non-empty marked the block after its OR (an acq_rel insert), and our
                    // removal is an acq_rel RMW on the same word: if the removal reads that
                    // insert (or a later value) the loads below see the OR; if it came before
                    // the insert, the mark stays. Either way no partial block loses its mark.
                    if dropped {
                        break;
                    }
                    dropped = true;
                    tree.remove(id);
                    // Relaxed: ordered after the removal's acquire (see above).
                    if !partial(mask.load_relaxed(), meta.kind.load_relaxed()) {
                        break;
                    }
                    tree.insert(id);
                    continue;
                }
                // The lowest run of free slices, at most `n` long.
                let low = m.trailing_zeros();
                let len = (!(m >> low)).trailing_zeros().min(n).min(per - low);
                let bits = mask_range(low, len);
                // AcqRel: acquires the give-backs whose bits we take (their users' last
                // accesses happen-before ours); the release half is for the recycler, which
                // reads the mask's release sequence.
                if mask.cas_acq_rel(m, m & !bits).is_err() {
                    tries += 1;
                    continue;
                }
                // Relaxed: after the CAS's acquire. The block cannot have left its life since
                // the value the CAS read (a life ends only when its mask fills, and our bits
                // are out), so this is that life's kind: ours, or (an ABA between the look and
                // the CAS: the block recycled and installed for another class) another's.
                let now = meta.kind.load_relaxed();
                if now == word {
                    return (self.blocks.block_addr(g, gid) + low as u64 * slice_bytes(c), len);
                }
                // Another class's slices: theirs again, as they were.
                match kind_parts(now) {
                    (KIND_SLICES, other) if other < NUM_CLASSES && is_mask_class(other) => {
                        // SAFETY: our CAS took `bits` from this block's free mask, which its
                        // current class `other` had freed; they go back once, unused.
                        unsafe { self.release_bits(mask, seg, local, other, bits) }
                    }
                    // No mask class owns the block (a corrupted heap): put the bits back as
                    // they were, with nothing else.
                    // Release: as a give-back.
                    _ => drop(mask.fetch_or_release(bits)),
                }
                break;
            }
            from = id + 1;
        }
        (0, 0)
    }

    /// Returns a block of group `g` whose every slice came back to its tree. The group is its
    /// class's: while the block is out of its tree, its segment stays formatted for that
    /// group (no reclaim takes a segment with a block out; `free` passes only classes of the
    /// entry's group, even for a racing stale pointer), so the segment's entry need not be
    /// read (one dependent load and an acquire less on the recycling free).
    #[inline(never)]
    fn recycle(&self, seg: u32, local: u32, g: usize) {
        // Relaxed: a debug check of an entry that cannot change while the block is out.
        debug_assert!(seg_kind(self.blocks.segments().seg_table(seg).load_relaxed()) == SegKind::Group(g));
        let t0 = trace::now();
        self.blocks.park(seg, local, g);
        self.blocks.release_block(g, gid_of(seg, local));
        if trace::ON {
            trace::add(self.meta(), Event::Recycles, 1);
            trace::add(self.meta(), Event::RecycleNs, trace::now() - t0);
        }
    }

    /// Retires current slot `shard` of row `row`: the slices its block has not handed out
    /// are given back, so that fully freed blocks and segments return to their trees. Safe
    /// while others allocate (the next add on the slot installs a block again); meant for
    /// the end of a phase, before stats or validation. A slot the row does not use (`shard`
    /// at or past its `row_shards`, never installed) is left alone: its word (`slot_word`: the
    /// row's slots are spread over its words) would be another row's slot, whose run this would
    /// give back as the wrong class's.
    pub fn trim_slot(&self, row: usize, shard: u32) {
        if !self.uses_slot(row, shard) {
            return;
        }
        self.retire_slot(row, shard);
    }

    /// Retires current slot `shard` of row `row` only if its run has no live slice in the
    /// block it is handing out (every slice it handed out there came back), so that the
    /// run's blocks not yet handed out return to their tree; otherwise gives back only the
    /// run's blocks after that one (none of their slices handed out). A block with live slices
    /// stays current: retiring it would not return it, and its class would claim a fresh
    /// block for its next request (in the churn of issue 9 every reclaim sweep did that for
    /// every class and shard, and the nulls cascaded). The run's blocks before it, wholly
    /// handed out, come back when their last slice is freed whether the run is current or not.
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
        let blocks = slot_blocks(w);
        if handed >= per_block * blocks {
            // Exhausted: its taker installs the next run.
            return;
        }
        // The block the run hands out next (it keeps it even if untouched, so that the run's
        // total stays above what was handed out and the next take is not `Full` with no one
        // to install).
        let j = div_per_block(c, handed);
        let (seg, local) = split_gid(gid);
        // Relaxed: a hint (frees of the slices handed out so far raise it up to what was
        // passed). A stale read is low and makes us shrink instead; a read from the block's
        // earlier life can only make us retire a block with live slices, which
        // `give_back_rest` handles as `retire_slot` does. The CAS fails if a take came in.
        if self.freed_hint(c, seg, local + j) == handed - j * per_block {
            // AcqRel: as slot_retire's swap; fails if a take came in between.
            if slot.cas_acq_rel(w, 0).is_ok() {
                self.give_back_rest(c, gid, blocks, handed);
            }
        } else if j + 1 < blocks {
            // AcqRel: as above. A take between our load and the CAS makes it fail, so no
            // taker holds a slice of the blocks it drops.
            if slot.cas_acq_rel(w, slot_run_value(gid, j + 1, handed)).is_ok() {
                for b in j + 1..blocks {
                    // SAFETY: the CAS cut the run before block b, with no take in between, so
                    // none of b's slices was handed out; each block goes back once.
                    unsafe { self.release_slices(seg, local + b, c, 0, per_block) };
                }
            }
        }
    }

    /// How many slices of block `local` of segment `seg` (class `c`) are free by a relaxed
    /// read (a hint): its free count, or for a mask class the bits of its free mask.
    #[inline(always)]
    fn freed_hint(&self, c: usize, seg: u32, local: u32) -> u32 {
        if is_mask_class(c) {
            // Relaxed: a hint (see retire_if_idle).
            self.blocks.free_mask(seg, local).load_relaxed().count_ones()
        } else {
            // Relaxed: as above.
            self.blocks.block_meta(seg, local).freed.load_relaxed()
        }
    }

    /// The reclaim sweep's form of `trim` (see `DeviceHeap::reclaim_before_null`): retires
    /// the current runs that have no live slice in the block they are handing out (see
    /// `retire_if_idle`), then returns wholly free segments to the segment tree.
    pub fn trim_idle(&self) {
        self.for_each_busy_slot(|row, shard| self.retire_if_idle(row, shard));
        for seg in 0..self.layout().num_segments {
            self.blocks.trim_segment(seg);
        }
    }

    /// Retires every current run (see `trim_slot`), then returns wholly free segments to the
    /// segment tree (see `trim_segment`).
    pub fn trim(&self) {
        self.for_each_busy_slot(|row, shard| self.retire_slot(row, shard));
        for seg in 0..self.layout().num_segments {
            self.blocks.trim_segment(seg);
        }
        // The loop above returned the booted segments that no group uses.
        self.blocks.forget_booted();
    }

    /// Calls `f(row, shard)` for every slot that holds a run. Reads a batch of slot words
    /// before acting on any, so that the loads are in flight together, and only the slots
    /// each row uses (`row_shards`: the others are never installed), so a sweep of an 8 GiB
    /// heap reads about 1700 words, not `SLOT_ROWS * shards` (25088; one thread reads them
    /// while every request that found no room waits).
    #[inline(always)]
    fn for_each_busy_slot(&self, f: impl Fn(usize, u32)) {
        for row in 0..SLOT_ROWS {
            let shards = self.layout().row_shards(row);
            let mut sh = 0;
            while sh < shards {
                let n = TRIM_BATCH.min(shards - sh);
                let mut busy = 0u32;
                for k in 0..n {
                    // Relaxed: a hint that skips empty slots; the swaps and CASes decide.
                    if self.current(row, sh + k).load_relaxed() != 0 {
                        busy |= 1 << k;
                    }
                }
                while busy != 0 {
                    f(row, sh + busy.trailing_zeros());
                    busy &= busy - 1;
                }
                sh += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_one_block_for_packed_rows_and_few_slices() {
        // The slots per row of an 8 GiB heap on a 132-multiprocessor GPU.
        let l = HeapLayout::new(HeapLayout::segments_for_bytes(8 << 30), crate::heap::DEFAULT_SHARDS, false);
        let run = |c: usize| max_run(c, l.row_shards(c));
        assert!((0..crate::class::PACKED_CLASSES.len()).all(|i| run(packed_row(i)) == 1));
        let class_of = crate::class::class_of;
        assert_eq!(run(class_of(4096)), MAX_RUN_BLOCKS);
        assert_eq!(run(class_of(16)), 1, "64 KiB blocks");
        assert_eq!(run(class_of(32)), 1, "128 KiB blocks");
        assert_eq!(run(class_of(64)), 1, "256 KiB blocks");
        assert_eq!(
            (l.row_shards(class_of(128)), run(class_of(128))),
            (32, 2),
            "512 KiB blocks of 4096 slices"
        );
        assert_eq!((l.row_shards(class_of(256)), run(class_of(256))), (8, 8), "1 MiB blocks of 4096 slices");
        assert_eq!(run(class_of(64 << 10)), 1, "16 slices per block");
        for c in 0..NUM_CLASSES {
            for shards in [1, 8, 32, 256] {
                let k = max_run(c, shards);
                assert!((1..=MAX_RUN_BLOCKS).contains(&k));
                assert!(k == 1 || slices_per_block(c) >= RUN_MIN_SLICES_PER_BLOCK);
                assert!(
                    k == 1 || k * slices_per_block(c) * shards <= ROW_RUN_SLICES,
                    "class {c}, {shards} slots"
                );
            }
        }
    }

    /// The slots of a row that few slots serve lie in 64-byte lines of their own (the eight
    /// of a row of 1 MiB blocks in an 8 GiB heap shared one line), each in its row's words.
    #[test]
    fn a_rows_slots_lie_in_lines_of_their_own() {
        let l = HeapLayout::new(HeapLayout::segments_for_bytes(8 << 30), crate::heap::DEFAULT_SHARDS, false);
        assert_eq!(l.row_shards(crate::class::class_of(256)), 8);
        for row in 0..SLOT_ROWS {
            let k = slot_stride_log2(&l, row);
            let n = l.row_shards(row);
            assert!((n - 1) << k < l.shards, "row {row}: within its words");
            // Consecutive slots: one word each, and a line each where the row has few.
            let gap = 1 << k;
            assert!(n * 8 > l.shards || gap >= 8, "row {row}: {n} slots {gap} words apart");
        }
    }

    #[test]
    fn takes_address_both_pieces() {
        let t = Taken { base: 1000, got: 2, base2: 5000, got2: 3 };
        assert_eq!(t.total(), 5);
        let a: [u64; 5] = core::array::from_fn(|r| t.addr(r as u32, 16));
        assert_eq!(a, [1000, 1016, 5000, 5016, 5032]);
    }
}
