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
use crate::class::{is_mask_class, MASK_CLASS0};
use crate::layout::{
    blocks_off, bounds_off, masks_off, unit_kinds_off, HeapLayout, BIT_WORD_BITS, BLOCK_MASK_BYTES,
    BLOCK_META_BYTES, BOUND_WORDS_PER_UNIT, FORMAT_WORDS_PER_GROUP, UNITS_PER_SEGMENT,
};
use crate::segment::{seg_kind, SegFlags, SegKind, Segments, OUT_COUNT_MASK, RECLAIMING, RECLAIM_RETRIES};

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

/// log2 of the ids one segment takes in group `g`'s tree. Where a segment's blocks fill whole
/// leaf words (groups of 64..256 KiB blocks: 256, 128 or 64 to a segment) the ids are dense,
/// `segment << shift | block`, so that the free blocks at the end of one segment and the
/// start of the next are one run: runs of whole blocks may cross segments (a 20 MiB request
/// took two segments, 62.5% of them, when runs stayed in one). Elsewhere the ids keep the
/// stride of `gid_of`, so that a leaf word never spans two segments (see `BlockBatch`).
#[inline(always)]
pub const fn tree_shift(g: usize) -> u32 {
    let bps = group_blocks_per_segment(g);
    if bps as u64 >= crate::veb::WORD_BITS {
        bps.trailing_zeros()
    } else {
        BLOCK_ID_SHIFT
    }
}

/// Whether runs of whole blocks of group `g` may cross from one segment into the next (its
/// tree's ids are dense, see `tree_shift`).
#[inline(always)]
pub const fn runs_cross_segments(g: usize) -> bool {
    1 << tree_shift(g) == group_blocks_per_segment(g)
}

/// Where block `gid` of group `g` lies among the group's blocks counted from segment 0's first
/// (segment after segment): the order of runs, which cross segments only where
/// `runs_cross_segments(g)`; its block size times it is the block's offset from segment 0.
#[inline(always)]
pub const fn block_index(g: usize, gid: u64) -> u64 {
    let (seg, local) = split_gid(gid);
    ((seg as u64) << group_blocks_per_segment(g).trailing_zeros()) + local as u64
}

/// The block of group `g` at `index` (see `block_index`; shifts, as a segment's blocks are a
/// power of two: no 64-bit division on the GPU).
#[inline(always)]
pub const fn block_at(g: usize, index: u64) -> u64 {
    let bps = group_blocks_per_segment(g);
    gid_of((index >> bps.trailing_zeros()) as u32, (index & (bps as u64 - 1)) as u32)
}

/// The parts of the run of `k` blocks of group `g` from block `gid`, one per segment it
/// touches: (segment, first block in it, blocks there).
#[inline(always)]
fn segment_parts(g: usize, gid: u64, k: u32) -> impl Iterator<Item = (u32, u32, u32)> {
    let bps = group_blocks_per_segment(g);
    let ((mut seg, mut local), mut left) = (split_gid(gid), k);
    core::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let n = left.min(bps - local);
        let part = (seg, local, n);
        (left, seg, local) = (left - n, seg + 1, 0);
        Some(part)
    })
}

/// A group's tree of free blocks, addressed by global block id (`gid_of`): it maps ids to the
/// tree's own (see `tree_shift`) and back, so that no caller sees the difference.
#[derive(Clone, Copy)]
pub struct GroupTree<'a> {
    veb: crate::veb::Veb<'a>,
    shift: u32,
    /// `runs_cross_segments(g)`: runs are searched across segment ends.
    cross: bool,
}

impl<'a> GroupTree<'a> {
    /// The tree of group `g` over `veb`.
    #[inline(always)]
    pub fn new(veb: crate::veb::Veb<'a>, g: usize) -> Self {
        Self { veb, shift: tree_shift(g), cross: runs_cross_segments(g) }
    }

    /// The tree's id of block `gid` (an addition, so that `gid_of(seg, blocks_per_segment)`
    /// is the next segment's first id).
    #[inline(always)]
    fn id(&self, gid: u64) -> u64 {
        let (seg, local) = split_gid(gid);
        ((seg as u64) << self.shift) + local as u64
    }

    /// The block of tree id `id`.
    #[inline(always)]
    fn gid(&self, id: u64) -> u64 {
        gid_of((id >> self.shift) as u32, (id & ((1 << self.shift) - 1)) as u32)
    }

    /// Marks block `gid` free; whether it was not before.
    #[inline(always)]
    pub fn insert(&self, gid: u64) -> bool {
        self.veb.insert(self.id(gid))
    }

    /// Marks the `n` blocks from `gid`, all in its segment, free.
    #[inline(always)]
    pub fn insert_range(&self, gid: u64, n: u32) {
        self.veb.insert_range(self.id(gid), n as u64)
    }

    /// Takes the `n` blocks from `gid` if every one is free; else none. They lie in `gid`'s
    /// segment, or go on in the next ones where the ids are dense (`runs_cross_segments`).
    #[inline(always)]
    pub fn remove_range_exact(&self, gid: u64, n: u32) -> bool {
        self.veb.remove_range_exact(self.id(gid), n as u64)
    }

    /// Whether block `gid` is free.
    #[inline(always)]
    pub fn contains(&self, gid: u64) -> bool {
        self.veb.contains(self.id(gid))
    }

    /// Whether any id of segment `seg` from its `local`-th on is free (exact): for the
    /// validator, which finds bits outside a segment's blocks (`local` = its group's blocks
    /// per segment, up to `MAX_BLOCKS_PER_SEGMENT`) or in a segment of another group (0).
    pub fn any_free_in_segment(&self, seg: u32, local: u32) -> bool {
        let first = ((seg as u64) << self.shift) + local as u64;
        self.veb.successor(first).is_some_and(|id| id < (seg as u64 + 1) << self.shift)
    }

    /// Whether no block is free (exact).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.veb.successor(0).is_none()
    }

    /// Whether a block looks free, by one pass through the summaries (a hint: a remover's
    /// summary clear may hide one for a moment).
    #[inline(always)]
    pub fn has_free_hint(&self) -> bool {
        self.veb.successor_hint(0).is_some()
    }

    /// Up to `k` consecutive free blocks of the lowest leaf word with one, racers ranked by
    /// `ticket` (one pass, see `Veb::try_claim_ranked`).
    #[inline(always)]
    pub fn try_claim_ranked(&self, ticket: &Atom32, k: u32) -> Option<BlockBatch> {
        self.veb.try_claim_ranked(0, ticket, k).map(|claimed| self.batch(claimed))
    }

    /// Up to `k` consecutive free blocks of the lowest leaf word with one, from its `r * k`-th
    /// free bit (one pass, see `Veb::try_claim_rank`).
    #[inline(always)]
    pub fn try_claim_rank(&self, r: u32, k: u32) -> Option<BlockBatch> {
        self.veb.try_claim_rank(0, r, k).map(|claimed| self.batch(claimed))
    }

    /// Up to `k` consecutive free blocks of the lowest leaf word with one (one pass, see
    /// `Veb::try_claim_bits`), racers spread from bit `spread`.
    #[inline(always)]
    pub fn try_claim_bits(&self, spread: u32, k: u32) -> Option<BlockBatch> {
        self.veb.try_claim_bits(0, spread, k).map(|claimed| self.batch(claimed))
    }

    /// The blocks of a claim of bits `mask` of leaf word `word` (a `Veb` claim's result).
    #[inline(always)]
    fn batch(&self, (word, mask): (u64, u64)) -> BlockBatch {
        let (seg, base) = split_gid(self.gid(word * crate::veb::WORD_BITS));
        BlockBatch { seg, base, mask }
    }

    /// The lowest run of `k` free blocks, taken (exact search): across segments where the
    /// ids are dense (`runs_cross_segments`), else within one segment's ids.
    #[inline(always)]
    pub fn claim_run(&self, k: u32) -> Option<u64> {
        let id = if self.cross {
            self.veb.claim_run(k as u64)
        } else {
            self.veb.claim_run_within(k as u64, MAX_BLOCKS_PER_SEGMENT as u64)
        };
        id.map(|id| self.gid(id))
    }

    /// One pass of `claim_run` through the summaries: its `None` may be transient.
    #[inline(always)]
    pub fn try_claim_run(&self, k: u32) -> Option<u64> {
        let window = if self.cross { u64::MAX } else { MAX_BLOCKS_PER_SEGMENT as u64 };
        self.veb.try_claim_run_within(k as u64, window).map(|id| self.gid(id))
    }

    /// How many blocks right before block `gid` are free, at most `max` (a hint, see
    /// `Veb::free_before`): where the ids are dense, the free blocks at the end of the
    /// segments before `gid`'s.
    #[inline(always)]
    pub fn free_before(&self, gid: u64, max: u32) -> u32 {
        self.veb.free_before(self.id(gid), max as u64) as u32
    }

    /// The tree's summaries against its leaves (quiescent tree; see `Veb::check`).
    pub fn check(&self) -> Result<u64, crate::veb::VebError> {
        self.veb.check()
    }
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

/// Whether claims of group `g`'s blocks from its tree (slot installs, and the claims of
/// claimers that wait for a format) are ranked by the group's ticket (`Veb::try_claim_ranked`)
/// instead of spread by the thread: the group of 48 and 64 B, whose segment's 64 blocks of
/// 256 KiB are one leaf word. Spread, a burst's
/// first claims landed all over the segment and its range ran to the segment's end: 1M x 48 B
/// range / live 1.31-1.33, ranked 1.17-1.28 (64 B 1.21-1.25 -> 1.10-1.19), allocating 2-5%
/// slower (H200, NOTES r35). Not the others: ranked, 16 and 32 B allocated 5-15% slower
/// (16 B range 1.21-1.25 -> 1.03-1.22, 24 B 1.33-1.65 -> 1.33-1.42, 32 B 1.25 -> 1.23-1.31),
/// and the groups whose slots take runs of blocks (128 B up, 32 blocks a segment or fewer)
/// got no better (256 B worse: 1.01-1.02 -> 1.05-1.13).
#[inline(always)]
pub const fn ranks_claims(g: usize) -> bool {
    group_blocks_per_segment(g) == crate::veb::WORD_BITS as u32
}

/// Whether claims of group `g`'s blocks from its tree draw a rank among the leaf word's free
/// bits from a hash of the thread (`Veb::try_claim_rank`) instead of a position in the word:
/// the 16-24 and 32 B groups, whose segments span two to four leaf words and whose slots (one
/// per multiprocessor) install at once at a burst's end. With positions those last installs
/// scattered over their word: range / live of 1M x 24 B 1.32-1.33, with ranks 1.26-1.30, at no
/// cost at 2^20 threads (H200, NOTES r38 `d/`, `h/`, `i/`). Not by the ticket (`ranks_claims`): 16 and
/// 32 B allocated 5-15% slower (r35).
#[inline(always)]
pub const fn hashes_claims(g: usize) -> bool {
    group_blocks_per_segment(g) > crate::veb::WORD_BITS as u32
}

/// The odd multiplier (2^32 over the golden ratio) that hashes a claimer's thread index, so
/// that neighbouring threads draw far-apart positions or ranks (`claim_from_tree`).
const THREAD_HASH_MUL: u32 = 0x9e37_79b9;

/// Bits of the claimer's 32-bit hash below the 6 it draws from (`claim_from_tree`): a
/// position in a leaf word (0..64), or a rank below `HASH_RANK_SPAN` from its remainder.
const SPREAD_SHIFT: u32 = 32 - crate::veb::WORD_BITS.trailing_zeros();

/// Racers of a hash-ranked claim (`hashes_claims`) draw ranks below this, so that they take
/// the word's lowest free bits. The rank is the 6-bit draw modulo 24: ranks 0-15 come 3 times
/// in 64, 16-23 twice, as measured. 16 made 2^20 x 16 B 5% slower (more racers meet on a
/// rank), 32 left 1M x 24 B at 1.28-1.31 (r38 `c/`, `d/`).
pub const HASH_RANK_SPAN: u32 = 24;

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

/// Segments a boot's formats ahead are remembered for (`Blocks::take_back_after`): one bit
/// each in a word. A boot on a new heap takes the lowest `heap::boot_groups(..)` (5 from 80
/// segments up).
pub const BOOTED_SEGMENTS: u32 = 64;
/// `Blocks::take_back_after` takes the next booted segment back once all but
/// `1 / TAKE_BACK_FROM` of a segment's blocks are out: early enough that the reclaim is done
/// before the group formats again. With a quarter left, a burst of 2^20 x 16 B on 132
/// multiprocessors used its last 64 blocks while the reclaim ran, formatted segment 5, and
/// spanned 5.5 times its live bytes (H200, NOTES r32 `take2/`). Three quarters for the 48-64 B
/// group made 2^14 x 64 B 30% faster (the take-back fell inside that launch), but that group's
/// second booted segment (`heap::BOOT_TWICE_GROUP`) did as well at half, and mixed bursts
/// spanned less (r38 `b/`, `h/`).
pub const TAKE_BACK_FROM: u32 = 2;

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
/// the run's length; the run may go on in the next segments): no pointer starts in it.
pub const KIND_RUN_TAIL: u32 = 4;
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

/// The kind word of a block of `kind` serving class `c` (`KIND_SLICES`, `KIND_PACKED`).
#[inline(always)]
pub const fn kind_word(kind: u32, c: usize) -> u32 {
    kind | (c as u32) << KIND_CLASS_SHIFT
}

/// Metadata of one block slot.
#[repr(C)]
pub struct BlockMeta {
    /// Slices given back since the block was installed; for a block handed out whole
    /// (`KIND_WHOLE`), the number of blocks in its run (1 for a single block).
    pub freed: Atom32,
    /// `KIND_FREE`, `KIND_SLICES`, `KIND_WHOLE`, `KIND_PACKED` or `KIND_RUN_TAIL`, with (for
    /// slices and packed) the class above `KIND_CLASS_SHIFT`.
    pub kind: Atom32,
}

// The layout's bytes per block (under loom a BlockMeta is two loom atomics, which the arena
// lays out at the same addresses).
#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<BlockMeta>() as u64 == BLOCK_META_BYTES);

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
        self.kind.store_relaxed(kind_word(kind, c));
        // Relaxed: as above.
        self.freed.store_relaxed(0);
    }

    /// Gives back `k` slices that were taken and never handed out, while the caller still
    /// holds a live slice of the block (a packed leader's credit, its own object unfreed):
    /// this cannot make the block free, so the result is not needed (a `red`).
    #[inline(always)]
    pub fn give_back_unused_held(&self, k: u32) {
        // Relaxed: the slices were never used, so there is nothing to publish; the RMW
        // continues the release sequences of earlier give-backs, and the caller's later free
        // of its own slice (release, same word, after this in program order, so after it in
        // the word's order) is what may complete the count, and recycles.
        self.freed.red_add_relaxed(k);
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
        // Acquire: the last giver synchronises with every earlier give-back before it recycles
        // the block. This load reads our own add (no one else writes the count until we park
        // the block), which ends the release sequence of every earlier release add, so it
        // synchronises with them all. On sm_90 it is a load and an L1 invalidation, where
        // `fence.acq_rel` was also a `MEMBAR.ALL.GPU` and its error barriers (SASS, r30
        // `fence/`).
        self.freed.load_acquire();
        true
    }
}

/// Index of block `local` of segment `seg` among the per-block-slot metadata (block metas,
/// free masks): `MAX_BLOCKS_PER_SEGMENT` slots a segment, whatever its group.
#[inline(always)]
const fn block_slot(seg: u32, local: u32) -> u64 {
    seg as u64 * MAX_BLOCKS_PER_SEGMENT as u64 + local as u64
}

/// The 64 KiB unit of its segment where block `local` of group `g` starts: where its bits of
/// the object-bound bitmap start (`Blocks::bound_word_in`).
#[inline(always)]
pub const fn bound_unit(local: u32, g: usize) -> u32 {
    local << g
}

/// The bits `a..b` of a 64-bit word (`a <= b <= 64`).
#[inline(always)]
pub const fn bits_between(a: u32, b: u32) -> u64 {
    bits_below(b) & !bits_below(a)
}

/// The bits below `n` of a 64-bit word (`n <= 64`).
#[inline(always)]
const fn bits_below(n: u32) -> u64 {
    if n >= 64 {
        !0
    } else {
        (1 << n) - 1
    }
}

/// The free mask of a block of `per` slices (at most `MASK_MAX_SLICES`) with every slice free.
#[inline(always)]
pub const fn full_mask(per: u32) -> u64 {
    mask_range(0, per)
}

/// The free-mask bits of the `k` slices from slice `first` (`first + k <= 64`).
#[inline(always)]
pub const fn mask_range(first: u32, k: u32) -> u64 {
    if k == 0 {
        0
    } else {
        (u64::MAX >> (64 - k)) << first
    }
}

/// Blocks taken from a group's tree with one claim: bit `i` of `mask` is block `base + i` of
/// segment `seg` (the bits of one leaf word of the tree, which never spans two segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockBatch {
    pub seg: u32,
    pub base: u32,
    pub mask: u64,
}

impl BlockBatch {
    /// The batch's lowest block.
    #[inline(always)]
    pub const fn first(&self) -> u64 {
        gid_of(self.seg, self.base + self.mask.trailing_zeros())
    }

    /// The batch less its lowest block (`mask` 0 when it had one).
    #[inline(always)]
    pub const fn rest(&self) -> Self {
        Self { mask: self.mask & (self.mask.wrapping_sub(1)), ..*self }
    }

    /// The consecutive blocks from the batch's lowest (how many), and the batch less them.
    #[inline(always)]
    pub const fn split_run(&self) -> (u32, Self) {
        let low = self.mask.trailing_zeros();
        let len = (!(self.mask >> low)).trailing_zeros();
        let run = if len >= 64 { u64::MAX } else { ((1u64 << len) - 1) << low };
        (len, Self { mask: self.mask & !run, ..*self })
    }
}

/// Most blocks a current slot's run holds (see `slot_run_value`).
pub const MAX_RUN_BLOCKS: u32 = 16;
/// Bit of a slot word where the run's length less one starts (four bits: up to
/// `MAX_RUN_BLOCKS`); below it, `gid + 1` (bits 32..60: segments below 2^19, see
/// `HeapLayout::MAX_SEGMENTS`) and the slices handed out (bits 0..32).
const SLOT_RUN_SHIFT: u32 = 60;
const _: () = assert!(MAX_RUN_BLOCKS <= 1 << (64 - SLOT_RUN_SHIFT));
const _: () = assert!(
    (HeapLayout::MAX_SEGMENTS as u64) * (MAX_BLOCKS_PER_SEGMENT as u64) < 1 << (SLOT_RUN_SHIFT - 32),
    "gid + 1 of every block fits below the run length"
);

/// A slot word for a run of `blocks` (1..=`MAX_RUN_BLOCKS`) consecutive blocks from `gid`, of
/// which the first `handed` slices (counted through the run's blocks in order) are handed out:
/// `(blocks - 1) << 60 | (gid + 1) << 32 | handed`; 0 means no block.
#[inline(always)]
pub const fn slot_run_value(gid: u64, blocks: u32, handed: u32) -> u64 {
    ((blocks as u64 - 1) << SLOT_RUN_SHIFT) | ((gid + 1) << 32) | handed as u64
}

/// A slot word for one block (see `slot_run_value`).
#[inline(always)]
pub const fn slot_value(gid: u64, handed: u32) -> u64 {
    slot_run_value(gid, 1, handed)
}

/// First block (if any) and handed-out count of a slot word.
#[inline(always)]
pub const fn slot_parts(w: u64) -> (Option<u64>, u32) {
    let g = (w >> 32) & ((1 << (SLOT_RUN_SHIFT - 32)) - 1);
    (if g == 0 { None } else { Some(g - 1) }, w as u32)
}

/// Blocks in the run of slot word `w` (1 for an empty slot).
#[inline(always)]
pub const fn slot_blocks(w: u64) -> u32 {
    (w >> SLOT_RUN_SHIFT) as u32 + 1
}

/// Whether slot word `w` holds a run that has not handed out all it holds (`per` slices to a
/// block; for a run row's segment, `per` blocks and a count in blocks).
#[inline(always)]
pub const fn slot_has_rest(w: u64, per: u32) -> bool {
    matches!(slot_parts(w), (Some(_), handed) if handed < per * slot_blocks(w))
}

/// What one add on a slot gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotTake {
    /// Slices `start .. start + got` of the run of `blocks` blocks from `gid` are ours
    /// (counted through the run's blocks in order); `exhausted`: this add took the run's last
    /// slice (or went past it), so this taker installs the next run (or, for the rows that
    /// install on demand, `slice::installs_on_demand`, may empty the slot instead).
    Fresh { gid: u64, blocks: u32, start: u32, got: u32, exhausted: bool },
    /// The run from block `gid` is used up; its exhauster is installing the next one.
    Full { gid: u64 },
    /// No block; `elected`: this add was the first since the slot emptied, so this taker
    /// installs one (every later add sees a non-zero count and waits).
    Empty { elected: bool },
}

/// Takes up to `n` slices (1..=`slice::MAX_TAKE`) from the run in `slot`, whose blocks hold `per_block`
/// slices each: one atomic, which also tells which run it was, so no stale read of the slot
/// can hand out a recycled block.
#[inline(always)]
pub fn slot_take(slot: &Atom64, n: u32, per_block: u32) -> SlotTake {
    // Acquire: reads-from the installer's release swap (or a later add in its release
    // sequence), so the blocks' reset happens-before our use of their slices.
    let old = slot.fetch_add_acquire(n as u64);
    let total = per_block * slot_blocks(old);
    match slot_parts(old) {
        (None, count) => SlotTake::Empty { elected: count == 0 },
        (Some(gid), count) if count >= total => SlotTake::Full { gid },
        (Some(gid), start) => SlotTake::Fresh {
            gid,
            blocks: slot_blocks(old),
            start,
            got: n.min(total - start),
            exhausted: start + n >= total,
        },
    }
}

/// Whether slot word `w` no longer shows what a taker that got `Full { gid }` (`full`:
/// `Some(gid)`) or an unelected `Empty` (`None`) saw: a run with slices left (a new one, or
/// the same block recycled and installed again), or an empty slot whose next add elects an
/// installer. Waiters poll this with plain loads instead of adding to the slot, so that the
/// word every waiting warp of a multiprocessor would hammer stays quiet for the installer (each
/// add on a hot word queues at its L2 slice behind the others). `per_block`: as in `slot_take`.
#[inline(always)]
pub const fn slot_moved_on(w: u64, full: Option<u64>, per_block: u32) -> bool {
    match (slot_parts(w), full) {
        ((None, handed), _) => handed == 0,
        ((Some(g), handed), Some(old)) => g != old || handed < per_block * slot_blocks(w),
        ((Some(_), _), None) => true,
    }
}

/// Installs the run of `blocks` blocks from `gid` (each prepared with `BlockMeta::install`)
/// in `slot`, for the taker that was elected or exhausted the previous run; returns what the
/// slot held.
#[inline(always)]
pub fn slot_install_run(slot: &Atom64, gid: u64, blocks: u32) -> u64 {
    // AcqRel swap: publishes the blocks' reset to every later add; the old value tells the
    // caller what the replaced run (if any) had handed out.
    slot.swap_acq_rel(slot_run_value(gid, blocks, 0))
}

/// Installs block `gid` alone (see `slot_install_run`).
#[inline(always)]
pub fn slot_install(slot: &Atom64, gid: u64) -> u64 {
    slot_install_run(slot, gid, 1)
}

/// Empties `slot`; returns its run's first block, its blocks and how many slices the run had
/// handed out (the caller gives the rest back). Safe while others take: their adds land
/// before (counted) or after (they see an empty slot). `per_block`: the slices of the slot's
/// blocks.
#[inline(always)]
pub fn slot_retire(slot: &Atom64, per_block: u32) -> Option<(u64, u32, u32)> {
    // AcqRel: totally ordered with the takers' adds on the same word.
    let w = slot.swap_acq_rel(0);
    match slot_parts(w) {
        (Some(gid), count) => Some((gid, slot_blocks(w), count.min(per_block * slot_blocks(w)))),
        (None, _) => None,
    }
}

/// Slices of a run's block `j` that a run with `handed` slices handed out has passed (out of
/// `per_block`).
#[inline(always)]
pub const fn run_block_handed(handed: u32, j: u32, per_block: u32) -> u32 {
    let before = j * per_block;
    if handed <= before {
        0
    } else if handed - before >= per_block {
        per_block
    } else {
        handed - before
    }
}

/// What a free of a whole block (or run of them) or of a run of segments did.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeOutcome {
    /// Given back.
    Freed,
    /// Not handed out (a second free, or a race with one): nothing changed; the heap counts
    /// it as a double free.
    NotHandedOut,
}

/// The block layer's part of the metadata: the block metadata with its kind copies per 64 KiB
/// unit, the per-group block trees and the formatter words, with the segment layer (`Segments`) beneath for formatting segments
/// into blocks and reclaiming them. A `Copy` view (two words) that the heap builds from its
/// layout (`DeviceHeap::blocks`); the slice layer installs and recycles blocks through it.
#[derive(Clone, Copy, Debug)]
pub struct Blocks<'a> {
    segs: Segments<'a>,
}

impl<'a> Blocks<'a> {
    /// The blocks over the segments `segs`. Safe: a `Segments` view comes from a heap
    /// (`DeviceHeap::segments`) or from the unsafe `Segments::new`, whose caller vouched for it.
    #[inline(always)]
    pub fn new(segs: Segments<'a>) -> Self {
        Self { segs }
    }

    /// The segment layer beneath.
    #[inline(always)]
    pub fn segments(&self) -> Segments<'a> {
        self.segs
    }

    /// The heap's layout.
    #[inline(always)]
    pub fn layout(&self) -> &'a HeapLayout {
        self.segs.layout()
    }

    /// Word `w` of the object-bound bitmap of the block whose first 64 KiB unit is `unit`
    /// (`bound_unit`) of segment `seg`, in a heap of `count` segments (the layout's: callers
    /// pass the handle's, as for `block_meta_in`). A block's bits are those of its 64 KiB
    /// units, one after another from its first (`BOUND_WORDS_PER_UNIT` words each), so `w` is
    /// below that times the block's units. Read only where the block is packed; its bits
    /// elsewhere are stale.
    #[inline(always)]
    pub(crate) fn bound_word_in(&self, count: u32, seg: u32, unit: u32, w: u32) -> &'a Atom64 {
        let in_seg = unit as u64 * BOUND_WORDS_PER_UNIT + w as u64;
        debug_assert!(count == self.segs.count() && in_seg < UNITS_PER_SEGMENT * BOUND_WORDS_PER_UNIT);
        let i = seg as u64 * UNITS_PER_SEGMENT * BOUND_WORDS_PER_UNIT + in_seg;
        let addr = self.segs.meta() + bounds_off(count) + i * 8;
        // SAFETY: `bounds_off(count)` lays out `count * UNITS_PER_SEGMENT *
        // BOUND_WORDS_PER_UNIT` 8-byte words in the metadata buffer, which lives as long as
        // the heap, for `count` the layout's segment count (as in `block_meta_in`); `seg` is
        // below `count` and the word's place in its segment below `UNITS_PER_SEGMENT *
        // BOUND_WORDS_PER_UNIT` (the block's bits lie within its segment's).
        unsafe { &crate::atomic::words(addr, 1)[0] }
    }

    /// Makes bits `mask` of word `w` of the bound bitmap of the block at 64 KiB unit `unit`
    /// (`bound_unit`, see `bound_word_in`) equal to `value` (a subset of `mask`), leaving its other bits: a store where `mask` is
    /// the whole word (the caller's take holds all of its units: the only other writer is the
    /// next take, whose first start may be this word's last bit, the caller's fence, which
    /// both set), else two RMWs.
    #[inline(always)]
    pub(crate) fn write_bounds(&self, count: u32, seg: u32, unit: u32, w: u32, mask: u64, value: u64) {
        debug_assert!(value & !mask == 0);
        let word = self.bound_word_in(count, seg, unit, w);
        // Relaxed, for every write here: the objects' lanes read these bits in `usable_size`
        // after the writer's warp barrier (`mark_packed_run`) or, on the host, in program
        // order, and any other thread only after it got a pointer from them, which carries the
        // happens-before; a past life's writers happen-before through the block's recycle
        // (their objects' release frees, the recycler's acquire, its release park, our
        // claim's acquire), so coherence puts their bits before ours. No other live object's
        // writer touches these bits (objects and takes do not overlap).
        if mask == !0 {
            // Relaxed: see above.
            word.store_relaxed(value);
            return;
        }
        if mask & !value != 0 {
            // Relaxed, result unused (a `red`): see above.
            word.red_and_relaxed(!mask | value);
        }
        if value != 0 {
            // Relaxed, result unused (a `red`): see above.
            word.red_or_relaxed(value);
        }
    }

    /// Units of the packed object that starts at unit `u` of the block at 64 KiB unit `unit`
    /// (`bound_unit`) of segment `seg` (of `per` units, at most its bound bits, see
    /// `bound_word_in`):
    /// from its bit to the next set bit, or to the block's end; `None` where bit `u` is clear
    /// (no object starts there) or no end lies within `max` units (no live object starts
    /// there: `DeviceHeap::mark_packed_run` set one).
    #[inline(always)]
    pub(crate) fn object_units(
        &self,
        count: u32,
        seg: u32,
        unit: u32,
        u: u32,
        per: u32,
        max: u32,
    ) -> Option<u32> {
        let bits = BIT_WORD_BITS as u32;
        // Relaxed: the caller's object was marked before its pointer reached the caller (see
        // `DeviceHeap::mark_packed_run`); bits set since by other objects lie outside it.
        let first = self.bound_word_in(count, seg, unit, u / bits).load_relaxed();
        if first >> (u % bits) & 1 == 0 {
            return None;
        }
        let limit = (u + max).min(per);
        let mut w = u / bits;
        let mut word = first & !bits_between(0, u % bits + 1);
        loop {
            if word != 0 {
                let end = w * bits + word.trailing_zeros();
                return (end <= limit).then_some(end - u);
            }
            w += 1;
            if w * bits > limit || w * bits >= per {
                // No bit up to the limit: the object ends the block if the block ends there.
                return (limit == per).then_some(per - u);
            }
            // Relaxed: as above.
            word = self.bound_word_in(count, seg, unit, w).load_relaxed();
        }
    }

    /// Metadata of block `local` of segment `seg`.
    #[inline(always)]
    pub(crate) fn block_meta(&self, seg: u32, local: u32) -> &'a BlockMeta {
        self.block_meta_in(self.segs.count(), seg, local)
    }

    /// `block_meta(seg, local)` where the caller knows the segment count (`free`, from the
    /// heap handle): no header load, the offset follows from the count.
    #[inline(always)]
    pub(crate) fn block_meta_in(&self, count: u32, seg: u32, local: u32) -> &'a BlockMeta {
        debug_assert!(count == self.segs.count());
        let i = block_slot(seg, local);
        let addr = self.segs.meta() + blocks_off(count) + i * BLOCK_META_BYTES;
        // SAFETY: `blocks_off(count)` lays out `count * MAX_BLOCKS_PER_SEGMENT` BlockMetas in
        // the metadata buffer, which lives as long as the heap, for `count` the layout's
        // segment count (what callers pass: the layout's, or the handle's, which the
        // validator checks against it and a debug assertion here); i is below that bound. A
        // BlockMeta is repr(C) of two Atom32: the two words at `addr` (on the GPU and the host,
        // `words32` is the address itself; under loom, two loom atomics of the arena).
        unsafe { &*(crate::atomic::words32(addr, 2).as_ptr() as *const BlockMeta) }
    }

    /// The copy of the kind word of the block that holds 64 KiB unit `unit` of the heap
    /// (`(address - mem) >> MIN_BLOCK_SHIFT`). Every write of a block's kind writes its units'
    /// copies before the release that publishes it (`set_kind`, `park`, `install`, a run's
    /// head), so whoever may read the kind reads the same copy; the one exception is
    /// `free_block`'s CAS from WHOLE to FREE, whose copies stay WHOLE until `release_run` parks
    /// the run, and a WHOLE copy sends `free` to the block's own word. `free` loads the copy
    /// from the pointer alone, in parallel with the segment entry, where the block's own word
    /// needs the entry's group first (ncu, r30: the two dependent loads were 16% of free's
    /// stall samples).
    #[inline(always)]
    pub(crate) fn unit_kind(&self, unit: u64) -> &'a Atom32 {
        self.unit_kind_in(self.segs.count(), unit)
    }

    /// `unit_kind(unit)` where the caller knows the segment count (`free`, from the heap
    /// handle): no header load, the copies' offset follows from the count.
    #[inline(always)]
    pub(crate) fn unit_kind_in(&self, count: u32, unit: u64) -> &'a Atom32 {
        let addr = self.unit_kinds_addr(count, unit);
        // SAFETY: the layout puts `count * UNITS_PER_SEGMENT` words at `unit_kinds_off(count)`
        // in the metadata buffer, which lives as long as the heap, for `count` the layout's
        // segment count (as in `block_meta_in`); callers pass a unit of an in-range address
        // (below that bound).
        unsafe { crate::atomic::word32(addr) }
    }

    /// Address of the copy for 64 KiB unit `unit` in a heap of `count` segments (the layout's).
    #[inline(always)]
    fn unit_kinds_addr(&self, count: u32, unit: u64) -> u64 {
        debug_assert!(count == self.segs.count());
        self.segs.meta() + unit_kinds_off(count) + unit * 4
    }

    /// Sets the kind word of block `local` of segment `seg` (group `g`), which the caller
    /// owns, and its units' copies. Relaxed: the caller publishes them with a release (the
    /// installing swap, the tree insert, the run head's release store).
    #[inline(always)]
    pub(crate) fn set_kind(&self, seg: u32, local: u32, g: usize, word: u32) {
        // Relaxed: as above.
        self.block_meta(seg, local).kind.store_relaxed(word);
        self.set_unit_kinds(seg, local, g, word);
    }

    /// Writes `word` to the copies of block `local` of segment `seg` (group `g`), which the
    /// caller owns: for the head of a run, whose own word is then written with a release.
    #[inline(always)]
    pub(crate) fn set_unit_kinds(&self, seg: u32, local: u32, g: usize, word: u32) {
        let first = seg as u64 * UNITS_PER_SEGMENT + ((local as u64) << g);
        let addr = self.unit_kinds_addr(self.segs.count(), first);
        // SAFETY: the block's `1 << g` units lie in its segment, whose copies are
        // `UNITS_PER_SEGMENT` consecutive words at `unit_kinds_off` (see `unit_kind_in`). One
        // slice for the loop: the stores' inline asm clobbers memory, so an address rederived
        // per copy reloaded the segment count before each store (install took 10-28% longer
        // from 512 B up, r30).
        let copies = unsafe { crate::atomic::words32(addr, 1 << g) };
        for copy in copies {
            // Relaxed: published with the kind word (see `set_kind`).
            copy.store_relaxed(word);
        }
    }

    /// Parks block `local` of segment `seg` (group `g`) before it goes back to its tree: free
    /// count zero, kind (and copies) free. The caller owns it; its release tree insert
    /// publishes this.
    #[inline(always)]
    pub(crate) fn park(&self, seg: u32, local: u32, g: usize) {
        self.block_meta(seg, local).park();
        self.set_unit_kinds(seg, local, g, KIND_FREE);
    }

    /// Prepares block `local` of segment `seg`, which the caller owns, to serve slices of
    /// class `c`, of `kind` (`KIND_SLICES` or `KIND_PACKED`); the release swap that installs
    /// it in a slot publishes this.
    #[inline(always)]
    pub(crate) fn install(&self, seg: u32, local: u32, kind: u32, c: usize) {
        let meta = self.block_meta(seg, local);
        meta.install(kind, c);
        if is_mask_class(c) {
            // Zero already (its last mask life's recycler zeroed it); but a stale free of a
            // mask class into this block during a life of a class that counts its frees
            // would leave bits that this life would hand out (review of r31). Relaxed:
            // published with the kind by the installing swap.
            self.free_mask(seg, local).store_relaxed(0);
        }
        self.set_unit_kinds(seg, local, group_of(c), kind_word(kind, c));
    }

    /// The free mask of block `local` of segment `seg`, for blocks of a mask class
    /// (`class::is_mask_class`; zero for every other block): bit `i` is set while slice `i`
    /// is free and was handed out (or given back unhanded by its slot), so that its slices
    /// can be handed out again while others are live (`Slots::take_partial`). It replaces the
    /// free count of `BlockMeta` for those classes: all `slices_per_block` bits set means
    /// every slice is free, and the giver that sets the last recycles the block.
    #[inline(always)]
    pub(crate) fn free_mask(&self, seg: u32, local: u32) -> &'a Atom64 {
        self.free_mask_in(self.segs.count(), seg, local)
    }

    /// `free_mask(seg, local)` where the caller knows the segment count (`free`, from the
    /// heap handle): no header load.
    #[inline(always)]
    pub(crate) fn free_mask_in(&self, count: u32, seg: u32, local: u32) -> &'a Atom64 {
        debug_assert!(count == self.segs.count());
        let i = block_slot(seg, local);
        let addr = self.segs.meta() + masks_off(count) + i * BLOCK_MASK_BYTES;
        // SAFETY: `masks_off(count)` lays out `count * MAX_BLOCKS_PER_SEGMENT` 8-byte words in
        // the metadata buffer, which lives as long as the heap, for `count` the layout's
        // segment count (as in `block_meta_in`); i is below that bound.
        unsafe { &crate::atomic::words(addr, 1)[0] }
    }

    /// Mask class `c`'s partial-block index: a vEB tree over its group's blocks
    /// (`block_index`), where a block is marked when its free mask may be neither empty nor
    /// full (a hint: a taker that finds the block otherwise drops the mark and looks again,
    /// see `Slots::take_partial`).
    #[inline(always)]
    pub(crate) fn partial_tree(&self, c: usize) -> crate::veb::Veb<'a> {
        debug_assert!(is_mask_class(c));
        let l = self.layout().partial_tree;
        let off = self.layout().partial_off + (c - MASK_CLASS0) as u64 * l.total_words as u64 * 8;
        // SAFETY: the layout reserved MASK_CLASSES trees of `total_words` words from
        // `partial_off`, and c - MASK_CLASS0 < MASK_CLASSES.
        let w = unsafe { crate::atomic::words(self.segs.meta() + off, l.total_words as usize) };
        crate::veb::Veb::new(w, l)
    }

    /// Gives back the slices `bits` of block `local` of segment `seg` (mask class `c`); true
    /// when this set the mask's last bit (the caller then owns the block, its mask zeroed
    /// again, and must recycle it). A mask that was empty marks the block in its class's
    /// partial-block index.
    #[inline(always)]
    pub(crate) fn give_back_bits(&self, mask: &Atom64, seg: u32, local: u32, c: usize, bits: u64) -> bool {
        let full = full_mask(slices_per_block(c));
        // Release: our use of the slices happens-before whoever takes them again (an acquire
        // CAS that reads this or a later value of the mask) or recycles the block.
        let old = mask.fetch_or_release(bits);
        // Not when the mask was full already: a double free between the filling OR and the
        // recycler's zeroing would make a second recycler (review of r31).
        if old != full && old | bits == full {
            // Acquire: as in `BlockMeta::give_back`: this load reads our own OR, which ends the
            // release sequence of every earlier give-back (ORs, and takers' CASes, which are
            // RMWs), so the recycler synchronises with them all.
            mask.load_acquire();
            // Relaxed: ours alone now (every slice is free); published by the recycle's release
            // tree insert.
            mask.store_relaxed(0);
            return true;
        }
        if old == 0 {
            // The mask was empty: mark the block (a stale mark of an earlier life, or of a
            // partial phase taken empty, may be there already: the insert is still an acq_rel
            // RMW on its leaf word). A taker that drops a mark and then re-reads the mask
            // (see `Slots::take_partial`) either reads this insert's value, and with it our
            // bits, or drops the mark before the insert, which sets it again. While the mask
            // stays non-empty no mark of it is dropped for good, so each partial block is
            // marked (the validator's `LostPartialMark`).
            self.partial_tree(c).insert(block_index(group_of(c), gid_of(seg, local)));
        }
        false
    }

    /// Block tree of group `g`.
    #[inline(always)]
    pub(crate) fn block_tree(&self, g: usize) -> GroupTree<'a> {
        let l = self.layout().block_tree;
        let off = self.layout().block_tree_off + g as u64 * l.total_words as u64 * 8;
        // SAFETY: the layout reserved NUM_GROUPS trees of `total_words` words from
        // `block_tree_off`, and g < NUM_GROUPS.
        let w = unsafe { crate::atomic::words(self.segs.meta() + off, l.total_words as usize) };
        let tree = crate::veb::Veb::new(w, l);
        #[cfg(feature = "trace")]
        let tree =
            tree.with_lost_counter(crate::trace::word(self.segs.meta(), crate::trace::Event::ClaimLost));
        GroupTree::new(tree, g)
    }

    /// Address of block `gid` of group `g`.
    #[inline(always)]
    pub(crate) fn block_addr(&self, g: usize, gid: u64) -> u64 {
        let (seg, local) = split_gid(gid);
        self.segs.segment_addr(seg) + ((local as u64) << group_block_shift(g))
    }

    /// Per-group lock word held while one thread formats segments for the group, and the
    /// blocks that claimers waiting for it want.
    #[inline(always)]
    fn format_lock(&self, g: usize) -> (&'a Atom32, &'a Atom32) {
        let w = self.group_words(g);
        (&w[0], &w[1])
    }

    /// Group `g`'s claim ticket: racing claims of its blocks draw ranks from it
    /// (`Veb::try_claim_ranked`).
    #[inline(always)]
    fn claim_ticket(&self, g: usize) -> &'a Atom32 {
        &self.group_words(g)[2]
    }

    /// Group `g`'s words at `format_lock_off` (see `FORMAT_WORDS_PER_GROUP`).
    #[inline(always)]
    fn group_words(&self, g: usize) -> &'a [Atom32] {
        let per = FORMAT_WORDS_PER_GROUP as usize;
        // SAFETY: the layout reserved FORMAT_WORDS_PER_GROUP * NUM_GROUPS words at
        // format_lock_off (a `g` past the groups panics at the slice below).
        let all = unsafe {
            crate::atomic::words32(self.segs.meta() + self.layout().format_lock_off, per * NUM_GROUPS)
        };
        &all[g * per..][..per]
    }

    /// The reclaim-window counters: reclaims started, reclaims ended. A reclaim's window spans
    /// the whole time it holds the segment's flag, from before its CAS: from its removal of
    /// the segment's blocks from their group's tree until the segment is in the segment tree
    /// (or the blocks are back), neither tree shows that memory: a claim that finds both empty
    /// reports out of memory only if no window overlapped its look (as the vEB trees do for
    /// their summary windows), so that null means full.
    #[inline(always)]
    fn reclaim_windows(&self) -> (&'a Atom64, &'a Atom64) {
        // SAFETY: the layout reserved two words at reclaim_off.
        let w = unsafe { crate::atomic::words(self.segs.meta() + self.layout().reclaim_off, 2) };
        (&w[0], &w[1])
    }

    /// Runs `hide` as a reclaim window: `hide` takes memory out of view (a reclaim's removal
    /// of a segment's blocks from their tree, a host trim's take of a run out of its slot)
    /// and puts it back in view elsewhere (the segment tree, the blocks' tree) before it
    /// returns; a claim whose look at the trees overlaps the window waits for it rather than
    /// report out of memory (see `reclaims_stayed_quiet`).
    #[inline(always)]
    pub(crate) fn in_reclaim_window<T>(&self, hide: impl FnOnce() -> T) -> T {
        let (started, ended) = self.reclaim_windows();
        // AcqRel: sequenced before `hide`'s first removal (an acq_rel or release RMW), so a
        // claimer that saw that removal and then fences also sees this count.
        started.fetch_add_acq_rel(1);
        let r = hide();
        // Release: what `hide` put back in view happens-before a claimer that acquires this
        // count.
        ended.fetch_add_release(1);
        r
    }

    /// The reclaim-window counts before a look at the trees: (ended, started).
    #[inline(always)]
    fn reclaim_snapshot(&self) -> (u64, u64) {
        let (started, ended) = self.reclaim_windows();
        // Acquire: the inserts of every reclaim that had ended are visible to the look.
        let e = ended.load_acquire();
        // Acquire: read after `ended`, so equal counts mean no reclaim was under way then.
        (e, started.load_acquire())
    }

    /// Whether no reclaim window overlapped a look at the trees since `snap`.
    #[inline(always)]
    fn reclaims_stayed_quiet(&self, snap: (u64, u64)) -> bool {
        // Acquire fence: a removal the look saw was sequenced after its window's start (an
        // acq_rel RMW), which this makes visible below.
        crate::arch::fence_acq_rel_gpu();
        // Relaxed: ordered by the fence above.
        snap.0 == snap.1 && self.reclaim_windows().0.load_relaxed() == snap.1
    }

    /// Whether group `g`'s tree and the segment tree are both empty, by exact searches during
    /// which no reclaim moved memory between them: the out-of-memory decision of a claim.
    #[inline(never)]
    fn out_of_blocks(&self, g: usize) -> bool {
        let snap = self.reclaim_snapshot();
        self.segs.seg_tree().successor(0).is_none()
            && self.block_tree(g).is_empty()
            && self.reclaims_stayed_quiet(snap)
    }

    /// Enters the class's formatter semaphore if fewer than `max` formatters are in.
    fn enter_format(lock: &Atom32, max: u32) -> bool {
        // Relaxed: the CAS decides.
        let v = lock.load_relaxed();
        // AcqRel: entering orders our format after earlier formatters' inserts.
        v < max && lock.cas_acq_rel(v, v + 1).is_ok()
    }

    /// Takes up to `k` blocks (at least one) from the tree of group `g`, in one leaf word,
    /// and counts them out of their segment.
    fn claim_from_tree(&self, g: usize, k: u32) -> Option<BlockBatch> {
        // One pass (no exactness check): claim_blocks retries, and confirms "empty" with the
        // exact successor before it reports out of memory.
        let t0 = crate::trace::now();
        // Racers draw where they try: ranks by the group's ticket, ranks by a hash of the
        // thread, or positions by that hash (see `ranks_claims`, `hashes_claims`).
        let hash = (crate::arch::global_thread_x() as u32).wrapping_mul(THREAD_HASH_MUL);
        let got = if ranks_claims(g) {
            self.block_tree(g).try_claim_ranked(self.claim_ticket(g), k)
        } else if hashes_claims(g) {
            self.block_tree(g).try_claim_rank((hash >> SPREAD_SHIFT) % HASH_RANK_SPAN, k)
        } else {
            // Racing claimers spread over the bits of the lowest free word (see claim_spread).
            self.block_tree(g).try_claim_bits(hash >> SPREAD_SHIFT, k)
        };
        if crate::trace::ON {
            crate::trace::add(self.segs.meta(), crate::trace::Event::TreeNs, crate::trace::now() - t0);
            crate::trace::add(self.segs.meta(), crate::trace::Event::TreeMisses, got.is_none() as u64);
        }
        let batch = got?;
        // Relaxed: a count. A reclaimer whose CAS saw the count without ours fails its
        // removal on the blocks we took (the tree word's RMWs are totally ordered: ours took
        // them first, or we got none), and as an RMW our add continues the release sequence
        // through which its CAS acquires the releasers' inserts. The count never wraps: our
        // add comes before the release (the slot swap, or our own subtraction in
        // `release_batch`) after which anyone subtracts these blocks. A zero seen meanwhile
        // can only leave a stale pending mark or a reclaim whose removal fails, as before.
        // (Review of r33.)
        self.segs.seg_out(batch.seg).fetch_add_relaxed(batch.mask.count_ones());
        Some(batch)
    }

    /// Takes up to `k` (1..=64) free blocks of group `g`, at least one, formatting a fresh
    /// segment when the group has none. The blocks are parked (free count zero); the caller
    /// installs them or marks them whole. `None` means that the group's tree and the segment
    /// tree were both seen empty (or, after `FORMAT_WAIT_NS`, that another thread's format
    /// never ended).
    #[inline(never)]
    pub(crate) fn claim_blocks(&self, g: usize, k: u32) -> Option<BlockBatch> {
        // At most `formatters(g)` threads format segments for a group at once here, so that a
        // burst of claimers that find the tree empty does not format a segment each (and
        // spread the heap); each formatter formats its share of what the waiting claimers
        // need. A group with one block per segment formats directly: nothing to share.
        // (Claimers of a whole segment's blocks format theirs outside the semaphore, see
        // `claim_whole_fresh_segment`, as run rows do, `fresh_segment`: each keeps all of it.)
        let bps = group_blocks_per_segment(g);
        // A fresh segment's first blocks are the formatter's own batch.
        let k = k.clamp(1, bps.min(crate::veb::WORD_BITS as u32));
        let locked = bps > 1;
        let (lock, waiters) = self.format_lock(g);
        let mut wait = crate::Wait::new(crate::FORMAT_WAIT_NS);
        let mut waiting = false;
        let mut got;
        loop {
            got = self.claim_from_tree(g, k);
            if got.is_some() {
                break;
            }
            if !locked || Self::enter_format(lock, formatters(g)) {
                crate::trace::add(self.segs.meta(), crate::trace::Event::FormatEntries, 1);
                got = if locked { self.claim_from_tree(g, k) } else { None };
                if got.is_none() {
                    // Relaxed: a sizing hint (blocks wanted, ours included).
                    let want = waiters.load_relaxed().max(k);
                    let segs = if locked {
                        want.div_ceil(bps * formatters(g)).clamp(1, MAX_FORMAT_BATCH)
                    } else {
                        1
                    };
                    let t0 = crate::trace::now();
                    for i in 0..segs {
                        // One pass, as for the blocks: "empty" is confirmed below.
                        let Some(seg) = self.segs.seg_tree().try_claim_spread(0, 0) else { break };
                        self.format_segment(seg as u32, g, if i == 0 { k } else { 0 });
                        if i == 0 {
                            got = Some(BlockBatch { seg: seg as u32, base: 0, mask: u64::MAX >> (64 - k) });
                        }
                    }
                    crate::trace::add_since(self.segs.meta(), crate::trace::Event::FormatNs, t0);
                }
                if locked {
                    // Release: our inserts happen-before the next formatter's entry.
                    lock.fetch_sub_acq_rel(1);
                }
                got = got.or_else(|| self.claim_from_tree(g, k));
                // Out of memory only when both trees are empty by the exact searches (the
                // one-pass claims above may miss an index for a moment); a claim that lost its
                // races to other claimers, or missed, tries again.
                if got.is_some() || self.out_of_blocks(g) {
                    break;
                }
            }
            if locked && !waiting {
                waiting = true;
                // Relaxed: a sizing hint for the formatters, in blocks (a formatter that
                // entered reads it after its own second claim, by when the claimers that
                // found the semaphore full have counted themselves).
                waiters.fetch_add_relaxed(k);
            }
            crate::trace::add(self.segs.meta(), crate::trace::Event::ClaimSleeps, 1);
            if !wait.sleep() {
                crate::trace::add(self.segs.meta(), crate::trace::Event::TimeoutFormat, 1);
                break;
            }
        }
        if waiting {
            // Relaxed: as above.
            waiters.fetch_add_relaxed(k.wrapping_neg());
        }
        got
    }

    /// Every block of a fresh segment of group `g`, when its tree looks empty: for an install
    /// that wants a whole segment's blocks (runs of 1 MiB blocks, 16 to a segment). Under a
    /// burst the tree is empty, and `claim_blocks` would miss in it twice around its formatter
    /// semaphore before it formats the same lowest free segment with every block kept (the
    /// semaphore keeps claimers of a few blocks from formatting a segment each; this claimer
    /// takes all of one). `None` when the tree has a free block (lowest first: those go
    /// first) or no fresh segment was found in one pass: the caller then claims as usual,
    /// which confirms an empty heap exactly. The blocks are parked.
    #[inline(never)]
    pub(crate) fn claim_whole_fresh_segment(&self, g: usize) -> Option<BlockBatch> {
        let bps = group_blocks_per_segment(g);
        // A batch is one word of bits and a slot's run at most MAX_RUN_BLOCKS blocks: groups
        // of more blocks to a segment never want a whole one (their runs are shorter).
        if bps > MAX_RUN_BLOCKS || self.block_tree(g).has_free_hint() {
            return None;
        }
        let seg = self.segs.seg_tree().try_claim_spread(0, 0)? as u32;
        let t0 = crate::trace::now();
        self.format_segment(seg, g, bps);
        crate::trace::add_since(self.segs.meta(), crate::trace::Event::FormatNs, t0);
        Some(BlockBatch { seg, base: 0, mask: mask_range(0, bps) })
    }

    /// The lowest run of `k` contiguous free blocks of group `g` from its tree (across
    /// segments where `runs_cross_segments(g)`), by one pass through the summaries: `None`
    /// may be transient (see `claim_run_exact`). The blocks are parked; the caller marks them.
    #[inline(never)]
    pub(crate) fn try_claim_run(&self, g: usize, k: u32) -> Option<u64> {
        let gid = self.block_tree(g).try_claim_run(k)?;
        self.count_run_out(g, gid, k);
        Some(gid)
    }

    /// As `try_claim_run`, but `None` only when the tree had no such run by an exact search
    /// that no segment reclaim overlapped (or, after `FORMAT_WAIT_NS`, when reclaims kept
    /// overlapping it): the out-of-memory decision for runs of whole blocks.
    #[inline(never)]
    pub(crate) fn claim_run_exact(&self, g: usize, k: u32) -> Option<u64> {
        let mut wait = crate::Wait::new(crate::FORMAT_WAIT_NS);
        loop {
            let snap = self.reclaim_snapshot();
            if let Some(gid) = self.claim_run_in_tree(g, k) {
                return Some(gid);
            }
            if self.reclaims_stayed_quiet(snap) {
                return None;
            }
            if !wait.sleep() {
                crate::trace::add(self.segs.meta(), crate::trace::Event::TimeoutRun, 1);
                return None;
            }
        }
    }

    /// Claims the lowest free segment and formats it for group `g`, its first `kept` blocks
    /// staying with the caller (the others go into the group's tree). `None` only when the
    /// segment tree was seen empty by an exact search that no segment reclaim overlapped
    /// (or, after `FORMAT_WAIT_NS`, when reclaims kept overlapping it).
    #[inline(never)]
    pub(crate) fn fresh_segment(&self, g: usize, kept: u32) -> Option<u32> {
        let mut wait = crate::Wait::new(crate::FORMAT_WAIT_NS);
        loop {
            let snap = self.reclaim_snapshot();
            if let Some(seg) = self.segs.seg_tree().claim_from(0) {
                let t0 = crate::trace::now();
                self.format_segment(seg as u32, g, kept);
                crate::trace::add_since(self.segs.meta(), crate::trace::Event::FormatNs, t0);
                return Some(seg as u32);
            }
            if self.reclaims_stayed_quiet(snap) {
                return None;
            }
            if !wait.sleep() {
                crate::trace::add(self.segs.meta(), crate::trace::Event::TimeoutRun, 1);
                return None;
            }
        }
    }

    /// Formats the lowest free segment for group `g` with every block in the group's tree,
    /// and marks it pending, so that a claim of fresh segments that finds none takes it back
    /// (`claim_fresh_run`) as it would the segment of a freed run, and booted, so that the
    /// group on the segment below it takes it back before it formats again, if its own group
    /// has not used it (see `take_back_after`). For the boot of a new heap
    /// (`DeviceHeap::boot`): the first install of a class then takes blocks from the tree
    /// instead of waiting for a format (r26's trace: 8 us of a cold malloc's 16 us on an
    /// H100). `segments` such segments, one after another (the group whose slots the boot
    /// fills gets two: see `DeviceHeap::boot`). False when no segment was free, or when the
    /// group's tree has a free block already (a boot run twice formats nothing), and for a
    /// `g` that is no group (it would format a segment for it before any bounds check).
    pub fn preformat(&self, g: usize, segments: u32) -> bool {
        if g >= NUM_GROUPS || !self.block_tree(g).is_empty() {
            return false;
        }
        let mut any = false;
        for _ in 0..segments {
            let Some(seg) = self.fresh_segment(g, 0) else { break };
            any = true;
            // Release: as in release_block (a drain decides from relaxed loads of the entry
            // and the count, which the format wrote before).
            self.pending_tree().insert(seg as u64);
            if seg < BOOTED_SEGMENTS {
                // Relaxed: the bit only elects one later claimer to try the segment's
                // reclaim, which orders itself (its CAS on the count acquires the format's add).
                self.booted().fetch_or_relaxed(1 << seg);
            }
        }
        any
    }

    /// The segments below `BOOTED_SEGMENTS` that a boot formatted ahead and that no claim has
    /// taken back yet (bit `s` for segment `s`, see `take_back_after`); cleared by a claim of
    /// fresh segment runs (`take_back_all_booted`) and by `trim` (`forget_booted`). A bit may
    /// outlive its segment's boot (a sweep that returned it, a format for another group
    /// since): then a take-back takes it only if no block of it is out, as a sweep would.
    #[inline(always)]
    fn booted(&self) -> &'a Atom64 {
        // SAFETY: the layout reserved one word at booted_off.
        unsafe { &crate::atomic::words(self.segs.meta() + self.layout().booted_off, 1)[0] }
    }

    /// Forgets every booted segment (for `trim`, which returns every wholly free segment
    /// itself, after which the heap is no longer new); returns the bits it cleared.
    pub fn forget_booted(&self) -> u64 {
        // Relaxed: a hint; the RMW below decides.
        if self.booted().load_relaxed() == 0 {
            return 0;
        }
        // Relaxed: the RMW only elects who tries each segment; the reclaims order themselves.
        self.booted().fetch_and_relaxed(0)
    }

    /// Takes back every booted segment that has no block out, and forgets the others (the
    /// segments of a run, and of the host pool, must be neighbours: booted segments left at
    /// the bottom of a new heap split its free segments, and a heap of 32 segments served
    /// one 64 MiB run fewer booted than not). For claims of fresh runs of segments. Bounded:
    /// one reclaim per bit.
    #[inline(never)]
    pub fn take_back_all_booted(&self) {
        let mut w = self.forget_booted();
        while w != 0 {
            let seg = w.trailing_zeros();
            w &= w - 1;
            self.trim_segment(seg);
        }
    }

    /// The booted segments not taken back yet, for `take_back_after` (a hint: relaxed).
    #[inline(always)]
    pub(crate) fn booted_hint(&self) -> u64 {
        // Relaxed: a hint; take_back_after's RMW decides.
        self.booted().load_relaxed()
    }

    /// After a claim of blocks in segment `seg` for group `g`, with `booted` (`booted_hint`)
    /// not zero: once all but `1 / TAKE_BACK_FROM` of the segment's blocks are out, takes
    /// back the booted segment right after it, or if another group keeps that one, the one
    /// right before it, if no block of it is out (its group has not used it), so that the group's
    /// next format gets it (the lowest free segment then) and its segments stay side by side.
    /// A boot formats the groups in `heap::BOOT_ORDER` on the lowest segments (group 0 on
    /// segments 0 and 1, group 2 on 2 and 3, ...): without this, a class that outgrew its
    /// booted segment went on past every booted segment (range / live of 2^20 x 16 B 5.75 against 1.69 without the
    /// boot, NOTES r28), which kept the boot off by default. The one before: a class whose
    /// next booted segment another group keeps grows into the unused one below its own
    /// rather than past every booted segment (CPU test
    /// `a_booted_class_grows_into_the_next_booted_segment`). It was meant to let a mixed
    /// burst fill group 0's unused second segment too, but on the GPU the groups' first
    /// formats come before any take-back (mixed sizes up to 64 B stayed at range / live
    /// 3.20, r33 `boot3/`). A booted segment of our own group is the room we grow into: kept
    /// (its bit stays for a claim of fresh runs). Here and not before a format (in
    /// `claim_blocks`): there the reclaim made ptxas give every claim more spills, and
    /// 128 B..4 KiB allocated 5-10% slower at 2^20 threads (H200, NOTES r32).
    #[inline(never)]
    pub(crate) fn take_back_after(&self, g: usize, seg: u32, booted: u64) {
        let is_booted = |s: u32| s < BOOTED_SEGMENTS && booted & (1 << s) != 0;
        // Relaxed: a hint of which group a segment serves; none past the heap (the segment
        // after the last one, which a booted segment may be after a boot on a full heap).
        let kind = |s: u32| (s < self.segs.count()).then(|| seg_kind(self.segs.seg_table(s).load_relaxed()));
        let cand = if is_booted(seg + 1) {
            seg + 1
        } else if seg > 0 && is_booted(seg - 1) && matches!(kind(seg + 1), Some(SegKind::Group(h)) if h != g)
        {
            // The one after was tried and another group keeps it (taken back, it would be
            // free: then the one before stays).
            seg - 1
        } else {
            return;
        };
        let bps = group_blocks_per_segment(g);
        // Relaxed: a hint of how full the segment is (the blocks a claim takes are spread
        // over its lowest free word, so the claim's index says little).
        if self.segs.seg_out(seg).load_relaxed() & OUT_COUNT_MASK < bps - bps / TAKE_BACK_FROM {
            return;
        }
        // Our group's own segment is kept (see above).
        if kind(cand) == Some(SegKind::Group(g)) {
            return;
        }
        // Relaxed: the bit only elects the one claimer that tries the segment; the reclaim
        // orders itself (its CAS on the count acquires the format's add).
        if self.booted().fetch_and_relaxed(!(1 << cand)) & (1 << cand) != 0 {
            // Taken back, or in use by its own group, which keeps it.
            self.trim_segment(cand);
        }
    }

    /// A run of `k` free blocks of group `g` that needs fresh segments. It begins with the
    /// group's free blocks right before the fresh segments, if any (the free tail of a
    /// partly used segment: so that runs of any length pack the heap, 20 MiB requests 97.7%
    /// of it rather than 62.5%), and goes on in `ceil((k - those) / blocks per segment)` fresh
    /// segments: the lowest `m = ceil(k / blocks per segment)` free ones (reclaiming the
    /// pending segments if there are none), or else the lowest `m - 1` consecutive free ones
    /// that the free blocks before them make up to `k` (any such, not only the lowest `m - 1`
    /// free ones: `Veb::claim_run_where`); those the free blocks make unnecessary go back. The
    /// run's blocks never pass through the tree (its fresh segments are formatted with them
    /// kept, the free blocks before them taken with one exact removal), so no other claim and
    /// no reclaim can take them in between (a format into the tree followed by a claim from
    /// it gave nulls under concurrency with most of the heap free). Fresh runs of a group are
    /// taken one at a time (its formatter semaphore, waited for at most `FORMAT_WAIT_NS`, then
    /// not), so that each finds the rest of the one before it: lanes of one warp that claimed
    /// fresh segments side by side each left a hole at the end of theirs. `None` when no such
    /// segments were free by an exact search that no reclaim overlapped.
    #[inline(never)]
    pub(crate) fn fresh_run(&self, g: usize, k: u32) -> Option<u64> {
        let (lock, _) = self.format_lock(g);
        let mut wait = crate::Wait::new(crate::FORMAT_WAIT_NS);
        // Bounded: a holder that never leaves costs a wait, then we go on without it.
        let locked = loop {
            if Self::enter_format(lock, formatters(g)) {
                break true;
            }
            if !wait.sleep() {
                crate::trace::add(self.segs.meta(), crate::trace::Event::TimeoutRun, 1);
                break false;
            }
        };
        // The rest of the last holder's segments may hold the run now.
        let got = self.try_claim_run(g, k).or_else(|| self.fresh_run_locked(g, k));
        if locked {
            // Release: our formats and inserts happen-before the next holder's look.
            lock.fetch_sub_acq_rel(1);
        }
        got
    }

    /// `fresh_run`'s work, under the group's formatter semaphore (or after a wait for it
    /// ran out).
    fn fresh_run_locked(&self, g: usize, k: u32) -> Option<u64> {
        let bps = group_blocks_per_segment(g);
        let m = k.div_ceil(bps);
        let tree = self.block_tree(g);
        let mut wait = crate::Wait::new(crate::FORMAT_WAIT_NS);
        loop {
            let snap = self.reclaim_snapshot();
            for have in [m, m - 1] {
                let claimed = if have == m {
                    self.claim_fresh_run(m as u64)
                } else if have > 0 {
                    // The lowest `have` free segments that the group's free blocks right
                    // before them make up to `k` blocks (not just the lowest `have`: those
                    // may follow another group's segment while higher ones follow free
                    // blocks of ours; a churn's 36 MiB run got null at 69.6% live that way).
                    let rest = k - have * bps;
                    self.segs
                        .seg_tree()
                        .claim_run_where(have as u64, |s| tree.free_before(gid_of(s as u32, 0), rest) >= rest)
                } else {
                    None
                };
                let Some(s) = claimed.map(|s| s as u32) else { continue };
                // The free blocks right before the segments: a hint, taken exactly below.
                let mut before = tree.free_before(gid_of(s, 0), k);
                let head = |before: u32| block_at(g, block_index(g, gid_of(s, 0)) - before as u64);
                if before > 0 && (k - before).div_ceil(bps) <= have {
                    if tree.remove_range_exact(head(before), before) {
                        self.count_run_out(g, head(before), before);
                    } else {
                        // Another claimer took some of them.
                        before = 0;
                    }
                }
                let used = (k - before).div_ceil(bps);
                if used > have {
                    // Never formatted: straight back.
                    self.segs.seg_tree().insert_range(s as u64, have as u64);
                    continue;
                }
                if used < have {
                    // As above.
                    self.segs.seg_tree().insert_range((s + used) as u64, (have - used) as u64);
                }
                let t0 = crate::trace::now();
                for t in 0..used {
                    let kept = (k - before - t * bps).min(bps);
                    self.format_segment(s + t, g, kept);
                }
                crate::trace::add_since(self.segs.meta(), crate::trace::Event::FormatNs, t0);
                return Some(head(before));
            }
            if self.reclaims_stayed_quiet(snap) {
                return None;
            }
            if !wait.sleep() {
                crate::trace::add(self.segs.meta(), crate::trace::Event::TimeoutRun, 1);
                return None;
            }
        }
    }

    /// A run of `k` free blocks of group `g` from its tree (exact search), counted out of
    /// their segments.
    fn claim_run_in_tree(&self, g: usize, k: u32) -> Option<u64> {
        let gid = self.block_tree(g).claim_run(k)?;
        self.count_run_out(g, gid, k);
        Some(gid)
    }

    /// Counts the `k` blocks of a run of group `g` from `gid`, just taken from their tree, out
    /// of their segments (one add per segment the run touches).
    #[inline(always)]
    fn count_run_out(&self, g: usize, gid: u64, k: u32) {
        for (seg, _, n) in segment_parts(g, gid, k) {
            // AcqRel: ordered before the run head's release store that hands the blocks on
            // (Relaxed would do, as in claim_from_tree; runs are rare, so it stays).
            self.segs.seg_out(seg).fetch_add_acq_rel(n);
        }
    }

    /// Returns block `gid` of group `g` to its tree. The last block of a segment to come back
    /// marks the segment in the pending-reclaim tree rather than reclaim it: a reclaim is a
    /// chain of a dozen dependent RMWs, and run by the last frees of a kernel it made free
    /// 16-24% slower from 128 B up (NOTES r26); the mark is one or two. Until memory runs
    /// short the segment keeps serving its group (its blocks are in the group's tree); then
    /// the reclaim sweep before a null (`trim_segment` of every segment) or a claim of fresh
    /// segments for a run that finds none (`fresh_run`) returns it.
    #[inline(never)]
    pub(crate) fn release_block(&self, g: usize, gid: u64) {
        let seg = split_gid(gid).0;
        self.block_tree(g).insert(gid);
        // AcqRel: after the insert, so a reclaimer that sees zero also sees our bit.
        let old = self.segs.seg_out(seg).fetch_sub_acq_rel(1);
        if old & crate::segment::OUT_COUNT_MASK == 1 {
            crate::trace::add(self.segs.meta(), crate::trace::Event::Pending, 1);
            // The insert is a release RMW, and that is needed: whoever takes the mark (an
            // acquire claim) decides from relaxed loads of the entry and the count whether to
            // try a reclaim, and must see our fetch_sub's zero.
            self.pending_tree().insert(seg as u64);
        }
    }

    /// Returns the `k` blocks of group `g` from `gid`, parked here (a run of whole blocks, or
    /// what a run row's segment did not hand out; the caller owns them; they may cross into
    /// the next segments, see `runs_cross_segments`), to their tree: each segment's part with
    /// one insert and one subtraction, the segment marked pending if that was its last block
    /// out (as `release_block`). A segment the run covers whole goes straight back to the
    /// segment tree (`return_whole_segment`), as runs of whole segments did before runs
    /// crossed segments: otherwise a freed 100 MiB run would leave its segments pending, out
    /// of the other groups' reach until memory ran short. So does, by a reclaim
    /// (`trim_segment`), an end segment of a run over several segments whose last block out
    /// this release brings back (a racing release that comes last leaves it pending, as
    /// before): pending, it stayed with the group while claims of one segment (the lowest
    /// free first) took the segments beside it that the run had covered whole, and came back
    /// only when memory ran short, as a lone free segment. In the CPU churn at 70% live, 13
    /// of the 17 free segments at a 36 MiB request's null (69.6% live, none three in a row)
    /// had been such ends, pending for up to 34 rounds; with this, 41 draws of 200 rounds
    /// got one null, at 71.8%. A run within one segment (the frequent small ones) leaves its
    /// segment pending, as a block does.
    #[inline(never)]
    pub(crate) fn release_run(&self, g: usize, gid: u64, k: u32) {
        let bps = group_blocks_per_segment(g);
        for (seg, local, n) in segment_parts(g, gid, k) {
            for b in local..local + n {
                self.park(seg, b, g);
            }
            if n < bps || !self.return_whole_segment(seg) {
                self.block_tree(g).insert_range(gid_of(seg, local), n);
                // AcqRel: after the insert, as in release_block.
                let old = self.segs.seg_out(seg).fetch_sub_acq_rel(n);
                if old & OUT_COUNT_MASK == n {
                    crate::trace::add(self.segs.meta(), crate::trace::Event::Pending, 1);
                    // Release: as in release_block.
                    self.pending_tree().insert(seg as u64);
                    if n < k {
                        // An end of a run over several segments (see above). Its mark stays
                        // either way: for a reclaim that a racing claim makes give up, and
                        // stale after one that succeeds (`trim_segment` skips it later).
                        // Bounded: one reclaim (`RECLAIM_RETRIES` tries), at most two a run.
                        self.trim_segment(seg);
                    }
                }
            }
        }
    }

    /// The run of `k` blocks at the first multiple of `a` blocks from segment 0 (the tree's
    /// dense ids: a multiple of `a` block sizes from segment 0's address) within the run of
    /// `k + a - 1` blocks of group `g` from `gid`, which the caller holds and has not marked;
    /// the blocks before and after it go back to their tree.
    pub(crate) fn align_run(&self, g: usize, gid: u64, k: u32, a: u32) -> u64 {
        debug_assert!(runs_cross_segments(g), "a run's blocks are consecutive ids");
        let id = block_index(g, gid);
        let skip = (id.next_multiple_of(a as u64) - id) as u32;
        let at = |i: u32| block_at(g, id + i as u64);
        if skip > 0 {
            self.release_run(g, gid, skip);
        }
        if a - 1 > skip {
            self.release_run(g, at(skip + k), a - 1 - skip);
        }
        at(skip)
    }

    /// Returns formatted segment `seg`, every block of which the caller holds out of its tree
    /// (parked), to the segment tree. False, with nothing changed, when the blocks-out count
    /// is not exactly the segment's blocks: a release of the segment's previous life whose
    /// subtraction lags its insert still counts there (see `try_reclaim`); then the caller
    /// inserts the blocks as any release does.
    fn return_whole_segment(&self, seg: u32) -> bool {
        let out = self.segs.seg_out(seg);
        // Relaxed: the entry is ours to read while we hold every block.
        let SegKind::Group(g) = seg_kind(self.segs.seg_table(seg).load_relaxed()) else { return false };
        // AcqRel: no one else counts blocks of this segment in or out while we hold them all,
        // so the count can only be ours (plus a lagging release's unit, which fails the CAS);
        // the flag keeps a reclaimer's CAS from 0 off the segment until it is free.
        if out.cas_acq_rel(group_blocks_per_segment(g), RECLAIMING).is_err() {
            return false;
        }
        // Release: the cleared entry before the segment becomes claimable (as try_reclaim).
        self.segs.seg_table(seg).store_release(0);
        // AcqRel: the count is 0 under the flag; clearing it leaves 0, as a reclaim does.
        out.fetch_and_acq_rel(!RECLAIMING);
        self.segs.seg_tree().insert(seg as u64);
        true
    }

    /// The pending-reclaim tree: segments whose last block came back since their last
    /// reclaim attempt (a mark may be stale: a block claimed again since, or the segment
    /// reclaimed by a sweep or at a run's release; `trim_segment` checks).
    #[inline(always)]
    fn pending_tree(&self) -> crate::veb::Veb<'a> {
        let l = self.layout().seg_tree;
        // SAFETY: the layout reserved `total_words` words (the segment tree's layout) at
        // pending_off.
        let w = unsafe {
            crate::atomic::words(self.segs.meta() + self.layout().pending_off, l.total_words as usize)
        };
        crate::veb::Veb::new(w, l)
    }

    /// Reclaims up to `max` segments of the pending-reclaim tree, lowest first (as far as
    /// each is still all free). Returns how many marks it took: fewer than `max` when the
    /// tree was seen empty. Not called on `claim_blocks`' path: there it made allocation
    /// 7-20% (before each format's claim of a segment) or 7-10% (after it) slower from 256 B
    /// up on the H100, and ptxas -v showed 64-88 bytes of spill stores in `claim_blocks`, none
    /// without it (NOTES r27).
    #[inline(never)]
    pub(crate) fn reclaim_pending(&self, max: u32) -> u32 {
        let pending = self.pending_tree();
        for taken in 0..max {
            // One pass: a mark missed for a moment is taken by the next drain, or the segment
            // by the sweep.
            let Some(seg) = pending.try_claim_spread(0, 0) else { return taken };
            self.trim_segment(seg as u32);
        }
        max
    }

    /// The lowest run of `k` free segments (`Veb::claim_run`), and if there is none, the same
    /// after reclaiming every pending segment (a run needs neighbours, not just any segment).
    fn claim_fresh_run(&self, k: u64) -> Option<u64> {
        self.take_back_all_booted();
        let tree = self.segs.seg_tree();
        tree.claim_run(k).or_else(|| {
            // Bounded: one mark per segment at most.
            if self.reclaim_pending(self.segs.count()) > 0 {
                tree.claim_run(k)
            } else {
                None
            }
        })
    }

    /// Formats the just-claimed segment `seg` for group `g`. Its first `kept` blocks
    /// stay with the caller; every other block goes into the group's tree.
    #[inline(never)]
    pub(crate) fn format_segment(&self, seg: u32, g: usize, kept: u32) {
        let bps = group_blocks_per_segment(g);
        crate::trace::add(self.segs.meta(), crate::trace::Event::Formats, 1);
        // The blocks' metadata needs no reset: a slot that served before was parked when its
        // block went back to its tree (and every block of a reclaimed segment had), and a slot
        // never installed is all zeros, which no stale warp can name.
        // Relaxed: published by the release inserts below (claimers of the other blocks
        // acquire them), and for the kept blocks by the caller's release that hands them out
        // (the slot install, or the whole block's kind); `free` reads the entry only for
        // pointers handed out after one of those.
        self.segs.seg_table(seg).store_relaxed(SegFlags::FORMATTED.bits() | g as u32);
        // The kept blocks are out. An add, not a store or a swap: every write to the count is
        // a delta (or the reclaimer's flag), so that a release of the segment's previous life
        // whose decrement lags its tree insert (the reclaim took the block already, see
        // try_reclaim) still finds its unit here, and a reclaimer between its CAS and its
        // fetch_and keeps its flag (loom model (6) lost the count with a plain store). AcqRel:
        // the release inserts below order it before any claimer's count of another block, and
        // a reclaimer's CAS acquires them.
        self.segs.seg_out(seg).fetch_add_acq_rel(kept);
        if bps > kept {
            self.block_tree(g).insert_range(gid_of(seg, kept), bps - kept);
        }
    }

    /// Takes segment `seg` back from its group once all its blocks are free. One reclaimer at
    /// a time (the `RECLAIMING` flag); gives up if a block gets claimed, or if the segment is
    /// not formatted for a group when it holds the flag.
    #[inline(never)]
    pub(crate) fn try_reclaim(&self, seg: u32) {
        let out = self.segs.seg_out(seg);
        let base = gid_of(seg, 0);
        for _ in 0..RECLAIM_RETRIES {
            // The whole time we hold the flag is a reclaim window, not just the blocks' removal
            // until the segment is in the segment tree (when neither tree shows this memory):
            // a claimer of another group that finds the flag set (its own try failed) and
            // both trees empty must wait for us, not report out of memory (loom model (6)).
            let again = self.in_reclaim_window(|| {
                // AcqRel: exclusive right to reclaim; acquires the releasers' tree inserts and
                // the format's add (after its entry store).
                if out.cas_acq_rel(0, RECLAIMING).is_err() {
                    return false;
                }
                // The group now, not the caller's look at the entry: a segment reclaimed and
                // formatted for another group since would fail every removal below, and a
                // claimer waiting on our window would wait for nothing. Acquire: ordered after
                // our CAS; while we hold the flag with no block out the entry cannot change.
                let SegKind::Group(g) = seg_kind(self.segs.seg_table(seg).load_acquire()) else {
                    // AcqRel: as the clear below.
                    out.fetch_and_acq_rel(!RECLAIMING);
                    return false;
                };
                crate::trace::add(self.segs.meta(), crate::trace::Event::Reclaims, 1);
                if self.block_tree(g).remove_range_exact(base, group_blocks_per_segment(g)) {
                    // We own every block of the segment now.
                    // Release: the entry is cleared before the segment becomes claimable.
                    self.segs.seg_table(seg).store_release(0);
                    // The flag goes, the count stays: a release whose insert we just removed
                    // may not have subtracted its unit yet (a store of 0 made that subtraction
                    // wrap the count to 2^32 - 1). AcqRel: the release half as above.
                    out.fetch_and_acq_rel(!RECLAIMING);
                    self.segs.seg_tree().insert(seg as u64);
                    return false;
                }
                // A block was claimed meanwhile. AcqRel: if its owner has already released it
                // again (count back to zero, our flag aside), we try again now (its release
                // marked the segment pending too; that mark finds it reclaimed or busy).
                out.fetch_and_acq_rel(!RECLAIMING) & OUT_COUNT_MASK == 0
            });
            if !again {
                return;
            }
        }
    }

    /// Returns segment `seg` to the segment tree if it is formatted and none of its blocks is
    /// out (a pending segment, one formatted ahead for waiting claimers that nobody used, or
    /// one whose last reclaim gave up). For `trim`, the sweep, pending marks, the end segments
    /// of a released run over several segments (`release_run`, so also `align_run`'s tail) and
    /// the take-back of booted segments (`take_back_after`, `take_back_all_booted`). Nothing for
    /// `seg` past the heap's segments (the device reads no bounds: a word past an array is
    /// another array's).
    pub fn trim_segment(&self, seg: u32) {
        if seg >= self.segs.count() {
            return;
        }
        // Relaxed: a hint; try_reclaim decides under its flag.
        if let SegKind::Group(_) = seg_kind(self.segs.seg_table(seg).load_relaxed()) {
            // Relaxed: as above.
            if self.segs.seg_out(seg).load_relaxed() == 0 {
                self.try_reclaim(seg);
            }
        }
    }

    /// Frees a whole block, or a run of them. Of two frees of it, only one gets past the
    /// kind swap; the other (racing, or later: the block is parked) gets `NotHandedOut`,
    /// which the heap counts.
    #[inline(never)]
    pub(crate) fn free_block(&self, seg: u32, local: u32, g: usize) -> FreeOutcome {
        let meta = self.block_meta(seg, local);
        // AcqRel: decides between racing frees (and acquires malloc_whole's release of the
        // kind, with the run length before it); the release inserts in release_run publish
        // the new kinds to the blocks' next owners.
        if meta.kind.cas_acq_rel(KIND_WHOLE, KIND_FREE).is_err() {
            return FreeOutcome::NotHandedOut;
        }
        // Relaxed: ordered by the CAS above.
        let k = meta.freed.load_relaxed().max(1);
        self.release_run(g, gid_of(seg, local), k);
        FreeOutcome::Freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_see_a_slot_move_on() {
        let per_block = 256;
        // Full on block 7: still block 7 used up (more adds overshoot) → keep waiting.
        assert!(!slot_moved_on(slot_value(7, per_block), Some(7), per_block));
        assert!(!slot_moved_on(slot_value(7, per_block + 40), Some(7), per_block));
        // A new block, or block 7 recycled and installed again (count reset).
        assert!(slot_moved_on(slot_value(8, 0), Some(7), per_block));
        assert!(slot_moved_on(slot_value(8, per_block), Some(7), per_block));
        assert!(slot_moved_on(slot_value(7, 3), Some(7), per_block));
        // Retired: the next add elects an installer.
        assert!(slot_moved_on(0, Some(7), per_block));
        // Unelected on an empty slot: wait while the installer works, go once it is done
        // (a block) or gave up (the slot emptied again).
        assert!(!slot_moved_on(5, None, per_block)); // no block, 5 slices asked
        assert!(slot_moved_on(slot_value(3, 0), None, per_block));
        assert!(slot_moved_on(0, None, per_block));
    }

    /// An install that wants a whole segment's blocks takes a fresh segment directly only
    /// while its group's tree is empty: a block in the tree goes first (lowest first), and
    /// with no fresh segment left it gets `None`, so that the caller claims as usual.
    #[cfg(not(loom))]
    #[test]
    fn a_whole_segment_claim_takes_a_fresh_segment_only_while_the_tree_is_empty() {
        let cpu = crate::cpu::CpuHeap::new(2, 1);
        let b = cpu.heap().blocks();
        let g = group_of(crate::class::class_of(4096));
        let bps = group_blocks_per_segment(g);
        assert_eq!(bps, 16, "1 MiB blocks");
        let first = b.claim_whole_fresh_segment(g).expect("a fresh segment");
        assert_eq!((first.seg, first.base, first.mask), (0, 0, full_mask(bps)), "the lowest, whole");
        // Block 3 back in the tree (parked, as a give-back leaves it).
        b.park(0, 3, g);
        b.release_block(g, gid_of(0, 3));
        assert_eq!(b.claim_whole_fresh_segment(g), None, "the tree's block first");
        let back = b.claim_blocks(g, bps).expect("the freed block");
        assert_eq!((back.first(), back.mask.count_ones()), (gid_of(0, 3), 1));
        let second = b.claim_whole_fresh_segment(g).expect("the other segment");
        assert_eq!((second.seg, second.mask), (1, full_mask(bps)));
        assert_eq!(b.claim_whole_fresh_segment(g), None, "no fresh segment left");
        assert_eq!(b.claim_blocks(g, bps), None, "and the heap is full");
    }
}
