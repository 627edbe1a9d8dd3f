//! The metadata's layout: where every layer's part of the metadata lives (byte offsets from
//! its base, which holds the layout itself), computed once when the heap is created. A leaf
//! module: every layer (`segment`, `block`, `slice`, `check`) and the heap read their parts'
//! offsets from it, and it names none of them.

use crate::class::{
    class_of, group_block_bytes, group_of, slice_bytes, slices_per_block, BLOCK_TARGET_BYTES, FINE_CLASS0,
    MASK_CLASSES, MAX_BLOCKS_PER_SEGMENT, MIN_BLOCK_SHIFT, MIN_SLICE_SHIFT, NUM_CLASSES, NUM_GROUPS,
    PACKED_CLASSES, PARTIAL_IDS_PER_SEGMENT, RUN_GROUPS,
};
use crate::veb::VebLayout;
use crate::{SEGMENT_BYTES, SEGMENT_SHIFT};

/// Bytes reserved at the start of the metadata for the layout itself: kernels read it from
/// there (L1-cached) instead of receiving it as a large by-value argument, which the
/// compiler would copy to local memory in every thread.
pub const HEADER_BYTES: u64 = 1024;
/// Rows of current slots: one per class, then one per packed class (blocks of `KIND_PACKED`,
/// kept apart so that their hand-out stays warp-contiguous), then one per run group (whole
/// segments from which runs of whole blocks are taken, see `class::RUN_GROUPS`).
pub const SLOT_ROWS: usize = RUN_ROW0 + RUN_GROUPS.len();
/// The first run group's row.
pub const RUN_ROW0: usize = NUM_CLASSES + PACKED_CLASSES.len();
/// Bytes of one block's metadata (`block::BlockMeta`: its free count and kind word).
pub const BLOCK_META_BYTES: u64 = 8;
/// 64 KiB units (the smallest block) per segment: one kind-word copy each (`unit_kinds_off`).
pub const UNITS_PER_SEGMENT: u64 = MAX_BLOCKS_PER_SEGMENT as u64;
/// Bits in a hand-out bitmap word.
pub const BIT_WORD_BITS: u64 = 64;
/// Hand-out bitmap words per segment (`check.rs`): one bit per 16-byte unit.
pub const BIT_WORDS_PER_SEGMENT: u64 = (SEGMENT_BYTES >> MIN_SLICE_SHIFT) / BIT_WORD_BITS;

/// Host-visible event counters (indices into the counter array).
pub mod counter {
    /// `free` of a pointer the heap never handed out (out of range, misaligned, free segment).
    pub const INVALID_FREE: usize = 0;
    /// Requests that got null because no memory was left.
    pub const OUT_OF_MEMORY: usize = 1;
    /// `free` of a slice that is not handed out now: a double free, or a slice of a live
    /// block that was never handed out. Counted only by heaps with checks (see `crate::CHECKS`).
    pub const DOUBLE_FREE: usize = 2;
    /// Number of counters.
    pub const COUNT: usize = 3;
}

const fn align8(x: u64) -> u64 {
    x.div_ceil(8) * 8
}

/// Offset of the segment table: right after the header, in every layout.
pub const TABLE_OFF: u64 = HEADER_BYTES;

/// Offset of the kind-word copies in a heap of `num_segments` segments, right after the
/// segment table: per 64 KiB unit of the heap (`UNITS_PER_SEGMENT` a segment), a copy of the
/// kind word of the block that holds it (see `Blocks::unit_kind`), so that `free` loads it
/// beside the segment entry instead of after it.
#[inline(always)]
pub const fn unit_kinds_off(num_segments: u32) -> u64 {
    TABLE_OFF + align8(num_segments as u64 * 4)
}

/// Offset of the block metadata in a heap of `num_segments` segments: right after the
/// kind-word copies.
#[inline(always)]
pub const fn blocks_off(num_segments: u32) -> u64 {
    unit_kinds_off(num_segments) + num_segments as u64 * UNITS_PER_SEGMENT * 4
}

/// Bytes of one block's free mask (`block::Blocks::free_mask`: mask classes only).
pub const BLOCK_MASK_BYTES: u64 = 8;

/// Offset of the blocks' free masks in a heap of `num_segments` segments: right after the
/// block metadata, one per block slot, so that `free` finds a block's mask from the segment
/// count alone, as its metadata.
#[inline(always)]
pub const fn masks_off(num_segments: u32) -> u64 {
    blocks_off(num_segments) + num_segments as u64 * MAX_BLOCKS_PER_SEGMENT as u64 * BLOCK_META_BYTES
}

/// Bits of the object-bound bitmap per 64 KiB of heap (one per 16 bytes, the smallest packed
/// unit): a packed block's bitmap is its 64 KiB units' bits, one after another
/// (`bounds_off`), so a block of any group has a bit for each of its packed units.
pub const BOUND_BITS_PER_UNIT: u64 = 4096;
const _: () = {
    let mut i = 0;
    while i < PACKED_CLASSES.len() {
        let c = PACKED_CLASSES[i];
        assert!(
            slices_per_block(c) as u64
                <= BOUND_BITS_PER_UNIT * (group_block_bytes(group_of(c)) >> MIN_BLOCK_SHIFT),
            "a packed block's units fit its bound bits"
        );
        i += 1;
    }
};
/// Words of the object-bound bitmap per 64 KiB of heap (`bounds_off`).
pub const BOUND_WORDS_PER_UNIT: u64 = BOUND_BITS_PER_UNIT / BIT_WORD_BITS;

/// Offset of the blocks' object-bound bitmaps in a heap of `num_segments` segments: right
/// after the free masks, `BOUND_WORDS_PER_UNIT` words per 64 KiB of heap, so that a packed
/// object's bits are found from the segment count alone; a block's bits are those of its
/// 64 KiB units from its first (unit `u` of a block at 64 KiB unit `k` of its segment is bit
/// `k * BOUND_BITS_PER_UNIT + u`). In a packed block, an object of units `s..e` has bit `s`
/// and bit `e` set and the bits between clear (`DeviceHeap::mark_packed_run`), so its size is
/// the distance to the next set bit. 512 bytes per 64 KiB, 256 of them per 16 MiB segment:
/// 8 MiB per GiB of heap (1/128).
#[inline(always)]
pub const fn bounds_off(num_segments: u32) -> u64 {
    masks_off(num_segments) + num_segments as u64 * MAX_BLOCKS_PER_SEGMENT as u64 * BLOCK_MASK_BYTES
}

/// End of the bound bitmaps (`bounds_off`) in a heap of `num_segments` segments.
#[inline(always)]
pub const fn bounds_end(num_segments: u32) -> u64 {
    bounds_off(num_segments) + num_segments as u64 * UNITS_PER_SEGMENT * BOUND_WORDS_PER_UNIT * 8
}

/// Where every part of the metadata lives, as byte offsets from its base.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapLayout {
    pub num_segments: u32,
    pub shards: u32,
    /// 1 when the heap has the hand-out bitmap that the safety checks use (see `check.rs`).
    pub checks: u32,
    pub _reserved: u32,
    pub seg_tree: VebLayout,
    /// Layout of each group's block tree (all alike: `num_segments * MAX_BLOCKS_PER_SEGMENT`
    /// ids, of which a group uses `group_blocks_per_segment(g)` per segment, see
    /// `block::tree_shift`).
    pub block_tree: VebLayout,
    pub seg_tree_off: u64,
    /// The block trees of groups 0, 1, ... one after another.
    pub block_tree_off: u64,
    pub seg_out_off: u64,
    pub current_off: u64,
    /// Per group: the formatter semaphore, waiting claimers, claim ticket (32-bit words).
    pub format_lock_off: u64,
    pub counters_off: u64,
    /// The reclaim-sweep word (see `DeviceHeap::reclaim_before_null`).
    pub sweep_off: u64,
    /// The hand-out bitmap (`check.rs`); 0 when `checks == 0`.
    pub bits_off: u64,
    /// Total metadata bytes.
    pub meta_bytes: u64,
    /// Per current slot: when its block was installed, and its batch size (see
    /// `Slots::install_next`).
    pub pace_off: u64,
    /// Per slot row (see `SLOT_ROWS`): log2 of the current slots the row uses, at most
    /// `shards` (see `row_shard_log2`). Multiprocessor `sm` takes slices of row `r` from slot
    /// `sm & ((1 << row_shard_log2[r]) - 1)`.
    pub row_shard_log2: [u8; ROW_TABLE],
    /// Two words: segment reclaims started and ended (see `Blocks::reclaim_windows`).
    pub reclaim_off: u64,
    /// The pending-reclaim tree (laid out as `seg_tree`, starts empty): segments whose last
    /// block came back, to be reclaimed when memory runs short (see
    /// `Blocks::release_block`).
    pub pending_off: u64,
    /// Layout of each mask class's partial-block index (all alike: `num_segments *
    /// PARTIAL_IDS_PER_SEGMENT` ids, see `Blocks::partial_tree`).
    pub partial_tree: VebLayout,
    /// The partial-block indexes of the mask classes `MASK_CLASS0, MASK_CLASS0 + 1, ...`, one
    /// after another.
    pub partial_off: u64,
    /// One word: the segments below 64 that a boot formatted ahead and no claim has taken
    /// back since (bit `s` for segment `s`, see `Blocks::take_back_after`).
    pub booted_off: u64,
}

/// Words of the reclaim-window counters (started, ended).
const RECLAIM_WORDS: u64 = 2;

/// Entries of `HeapLayout::row_shard_log2` (`SLOT_ROWS` rounded up to a multiple of 8).
pub const ROW_TABLE: usize = SLOT_ROWS.next_multiple_of(8);
const _: () = assert!(SLOT_ROWS <= ROW_TABLE && ROW_TABLE.is_multiple_of(8));

/// Each row's current blocks pin at most the heap's capacity `>> PIN_SHIFT`, over
/// `PIN_SHARES`: so that a multiprocessor's current block of every class cannot fill the
/// heap with blocks that hand out a few slices each (issue 9, churn). Rows whose blocks are
/// small keep one slot per multiprocessor; 8 GiB: 8 slots for rows of 1 MiB blocks (see
/// `LARGE_ROW_SHARE_SHIFT`), 32 for 512 KiB, 64 for 256 KiB.
pub const PIN_SHIFT: u32 = 3;
/// 32-bit words per group at `format_lock_off`: the formatter semaphore, the waiting
/// claimers' count, and the claim ticket that ranks racing claimers (`Blocks::claim_ticket`).
pub const FORMAT_WORDS_PER_GROUP: u64 = 3;
/// Shares of the pin budget (`capacity >> PIN_SHIFT`): one per row, and rows beyond
/// `PIN_SHARES` (`SLOT_ROWS` is 114) may take more than the budget in all: all current blocks
/// together pin at most `(SLOT_ROWS + 1) / PIN_SHARES` of it (the 16-byte packed row takes
/// two shares, see `row_block_bytes`; 22% of the heap, with every row in use), and less with
/// `LARGE_ROW_SHARE_SHIFT`.
pub const PIN_SHARES: u64 = 64;
/// Rows whose blocks are `BLOCK_TARGET_BYTES` (1 MiB) or larger, the 96 classes from 144 B to
/// 1 MiB, get half a share: their slots take runs of up to 16 blocks per install (see
/// `slice::max_run`), so eight slots keep their bursts fast, and with that many rows what they
/// pin is what fills a heap under mixed sizes (36 rows when the A/B below ran). A/B on the
/// H100, 8 GiB, 2^20 threads, 8 slots against 16: 4 KiB alloc 0.95 ms against 1.15, 2 KiB
/// 0.61 against 0.70; churn at 65% of the heap live no null in 20 rounds against 292 nulls;
/// at 70%, 4184 nulls against 10675.
/// (Half a share for every row costs the small classes: 64 B alloc 0.25 ms against 0.15.)
pub const LARGE_ROW_SHARE_SHIFT: u32 = 1;
/// Rows of the classes above `FINE_FROM_BYTES` (eight per doubling, twice the rows of four;
/// sixteen from 4 to 8 KiB) get half of that again: so that the rows of eight classes per
/// doubling together pin what the rows of four did (the sixteen from 4 to 8 KiB twice that;
/// 8 GiB: 4 slots each). A/B on the H200 (NOTES
/// r29): the GPU test that churns a 90%-full 4 GiB heap of sizes up to 64 KiB got 0.10 M
/// nulls in 12 s against 0.77 M in 75 s (four classes per doubling: 0.12 M, 46 s), churn at
/// 70% 259 nulls against 1139; but bursts of one size above 4 KiB take longer (8192 B at
/// 2^18 threads 0.48 ms against 0.34, 40000 B at 2^16 6.5 ms against 3.8; 8192 B at 4096
/// threads 0.049 against 0.060).
pub const FINE_ROW_SHARE_SHIFT: u32 = 1;

/// Bytes per slot that row `row`'s share of the pin budget is divided by: a block of the
/// row's class, or for a run row a whole segment. A packed row counts the block of the class
/// of its unit's size, so that it has as many slots as that class's row: the 16-byte row's
/// own 128 KiB blocks (`class::PACKED16_CLASS`) would get half of class 16 B's slots, 128 in
/// an 8 GiB heap, fewer than the 132 multiprocessors of an H100 or H200 (four slots would
/// each serve two); its current blocks pin 32 MiB there, twice its share.
const fn row_block_bytes(row: usize) -> u64 {
    if row >= RUN_ROW0 {
        SEGMENT_BYTES
    } else if row >= NUM_CLASSES {
        group_block_bytes(group_of(class_of(slice_bytes(PACKED_CLASSES[row - NUM_CLASSES]))))
    } else {
        group_block_bytes(group_of(row))
    }
}

/// log2 of the slots row `row` uses in a heap of `num_segments` segments with `shards` slots
/// per row, when all rows' current blocks may pin capacity `>> pin_shift`: as many of the
/// row's blocks as fit in its share (one of `PIN_SHARES`), rounded down to a power of two, at
/// least one slot and at most `shards`.
pub const fn row_shard_log2(num_segments: u32, shards: u32, row: usize, pin_shift: u32) -> u32 {
    let capacity = (num_segments as u64) << SEGMENT_SHIFT;
    let block = row_block_bytes(row);
    let large = if block >= BLOCK_TARGET_BYTES { LARGE_ROW_SHARE_SHIFT } else { 0 };
    let fine = if row >= FINE_CLASS0 && row < NUM_CLASSES { FINE_ROW_SHARE_SHIFT } else { 0 };
    let share = ((capacity >> pin_shift) / PIN_SHARES) >> (large + fine);
    let fit = share / block;
    let max = shards.trailing_zeros();
    if fit <= 1 {
        0
    } else {
        let l = 63 - fit.leading_zeros();
        if l > max {
            max
        } else {
            l
        }
    }
}

impl HeapLayout {
    /// Layout for `num_segments` segments and `shards` current slots per class; `checks`
    /// adds the hand-out bitmap (1 bit per 16 bytes of heap: 0.8% of its size).
    pub const fn new(num_segments: u32, shards: u32, checks: bool) -> Self {
        assert!(shards.is_power_of_two(), "shards must be a power of two");
        let n = num_segments as u64;
        // First the segment table, the kind copies and the block metadata, at offsets that
        // follow from the segment count alone (`TABLE_OFF`, `unit_kinds_off`, `blocks_off`,
        // `masks_off`, `bounds_off`), which the kernels' heap handle carries: `free` finds its
        // words with no header load.
        let mut off = bounds_end(num_segments);
        let seg_tree = VebLayout::new(n);
        let seg_tree_off = off;
        off += seg_tree.total_words as u64 * 8;
        let block_tree = VebLayout::new(n * MAX_BLOCKS_PER_SEGMENT as u64);
        let block_tree_off = off;
        off += NUM_GROUPS as u64 * block_tree.total_words as u64 * 8;
        let seg_out_off = off;
        off += align8(n * 4);
        let current_off = off;
        off += SLOT_ROWS as u64 * shards as u64 * 8;
        let format_lock_off = off;
        off += align8(FORMAT_WORDS_PER_GROUP * NUM_GROUPS as u64 * 4);
        let counters_off = off;
        off += counter::COUNT as u64 * 8;
        let sweep_off = off;
        off += 8;
        let bits_off = if checks { off } else { 0 };
        if checks {
            off += n * BIT_WORDS_PER_SEGMENT * 8;
        }
        let pace_off = off;
        off += SLOT_ROWS as u64 * shards as u64 * 8;
        let reclaim_off = off;
        off += RECLAIM_WORDS * 8;
        let pending_off = off;
        off += seg_tree.total_words as u64 * 8;
        let partial_tree = VebLayout::new(n * PARTIAL_IDS_PER_SEGMENT as u64);
        let partial_off = off;
        off += MASK_CLASSES as u64 * partial_tree.total_words as u64 * 8;
        let booted_off = off;
        off += 8;
        Self {
            num_segments,
            shards,
            checks: checks as u32,
            _reserved: 0,
            seg_tree,
            block_tree,
            seg_tree_off,
            block_tree_off,
            seg_out_off,
            current_off,
            format_lock_off,
            counters_off,
            sweep_off,
            bits_off,
            meta_bytes: off,
            pace_off,
            row_shard_log2: [0; ROW_TABLE],
            reclaim_off,
            pending_off,
            partial_tree,
            partial_off,
            booted_off,
        }
        .with_pin_shift(PIN_SHIFT)
    }

    /// This layout with the rows' slot counts chosen for current blocks that pin at most
    /// capacity `>> pin_shift` (see `row_shard_log2`); `pin_shift >= 64` gives every row all
    /// `shards` slots (the layout before rows shared slots).
    pub const fn with_pin_shift(mut self, pin_shift: u32) -> Self {
        let mut row = 0;
        while row < SLOT_ROWS {
            self.row_shard_log2[row] = if pin_shift >= 64 {
                self.shards.trailing_zeros() as u8
            } else {
                row_shard_log2(self.num_segments, self.shards, row, pin_shift) as u8
            };
            row += 1;
        }
        self
    }

    /// Slots row `row` uses (a power of two, at most `shards`).
    #[inline(always)]
    pub const fn row_shards(&self, row: usize) -> u32 {
        1 << self.row_shard_log2[row]
    }

    /// Segments in a heap of `bytes` (rounded down; at least one).
    pub const fn segments_for_bytes(bytes: u64) -> u32 {
        let s = bytes >> SEGMENT_SHIFT;
        if s == 0 {
            1
        } else {
            s as u32
        }
    }

    /// Words the init step writes (the segment tree; everything else starts as zeros).
    pub const fn init_words(&self) -> u32 {
        self.seg_tree.total_words
    }
}

const _: () = assert!(core::mem::size_of::<HeapLayout>() as u64 <= HEADER_BYTES);
const _: () = assert!(core::mem::size_of::<HeapLayout>().is_multiple_of(8));

/// The checked forms of `HeapLayout::new` and `HeapLayout::segments_for_bytes`, for sizes
/// that come from users.
impl HeapLayout {
    /// Most segments a heap may have (2^19: 8 TiB): a current slot's word holds a block id
    /// (`segment * MAX_BLOCKS_PER_SEGMENT + block`) plus one in 28 bits, beside its run's
    /// length (see `block::slot_run_value`).
    pub const MAX_SEGMENTS: u32 = 1 << 19;

    /// As `new`, or `None` where `new` would panic or build a heap the allocator cannot
    /// address: no segments, more than `MAX_SEGMENTS`, or `shards` not a power of two.
    pub const fn try_new(num_segments: u32, shards: u32, checks: bool) -> Option<Self> {
        if num_segments == 0 || num_segments > Self::MAX_SEGMENTS || !shards.is_power_of_two() {
            return None;
        }
        let n = num_segments as u64;
        if VebLayout::try_new(n).is_none() {
            return None;
        }
        if VebLayout::try_new(n * MAX_BLOCKS_PER_SEGMENT as u64).is_none() {
            return None;
        }
        if VebLayout::try_new(n * PARTIAL_IDS_PER_SEGMENT as u64).is_none() {
            return None;
        }
        Some(Self::new(num_segments, shards, checks))
    }

    /// Whole segments in `bytes` (rounded down), or `None` when that is none or more than
    /// `MAX_SEGMENTS` (where `segments_for_bytes` rounds up to one, or truncates).
    pub const fn checked_segments_for_bytes(bytes: u64) -> Option<u32> {
        let s = bytes >> SEGMENT_SHIFT;
        if s == 0 || s > Self::MAX_SEGMENTS as u64 {
            None
        } else {
            Some(s as u32)
        }
    }
}

impl HeapLayout {
    /// The layout as the words of the metadata header.
    pub fn header_words(&self) -> [u64; (HEADER_BYTES / 8) as usize] {
        let mut w = [0u64; (HEADER_BYTES / 8) as usize];
        // SAFETY: HeapLayout is repr(C) plain data without padding (u32/u64 fields in
        // 8-byte pairs), smaller than the header (asserted above).
        unsafe {
            core::ptr::copy_nonoverlapping(
                self as *const Self as *const u64,
                w.as_mut_ptr(),
                core::mem::size_of::<Self>() / 8,
            )
        };
        w
    }
}
