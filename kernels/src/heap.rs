//! The heap: the `Copy` handle kernels receive, which composes the layers (`Segments`,
//! `Blocks`, `Slots`, `HandOut`, each a `Copy` view of its part of the metadata, built from
//! the layout in `layout.rs`), the public `malloc` / `free` / `calloc` / `realloc` that
//! dispatch to slices, whole blocks or runs of segments, the event counters, and the reclaim
//! sweep that runs before any null.

use crate::arch;
use crate::atomic::Atom64;
use crate::block::{
    bits_between, block_at, block_index, bound_unit, group_block_bytes, group_block_shift, group_of,
    kind_parts, slice_bytes, slice_class, slices_per_block, split_gid, Blocks, FreeOutcome, KIND_FREE,
    KIND_PACKED, KIND_RUN_TAIL, KIND_SLICES, KIND_WHOLE, MAX_SLICE_BYTES, NUM_CLASSES,
};
use crate::check::HandOut;
use crate::class::{
    align_of_request, block_bytes, block_run_len, class_of, is_mask_class, is_narrow_odd, slice_divisor,
    warp_class, MIN_BLOCK_SHIFT, RUN_GROUPS, TABLE_CLASSES, UNIT_RUN_GROUP,
};
use crate::segment::{seg_kind, SegKind, Segments};
use crate::slice::{packed_row, Slots, Taken, PACKED_CLASSES};
use crate::{SEGMENT_BYTES, SEGMENT_SHIFT};

pub use crate::layout::{counter, row_shard_log2, HeapLayout, HEADER_BYTES, PIN_SHIFT, ROW_TABLE};
pub use crate::slice::BOOT_SLOT_CLASS;

/// Current-block slots per class: one per multiprocessor on the GPUs we target (an H100 has
/// 132), so warps on different SMs bump different counters.
/// A power of two, so that picking a slot is a mask.
pub const DEFAULT_SHARDS: u32 = 256;
/// Smallest unit of packed allocations (`malloc_packed`): requests are rounded up to the unit
/// of their size's band (16, 64 or 256 bytes, see `slice::PACKED_CLASSES` and `packed_band`).
pub const PACKED_UNIT: u64 = 16;
/// Most units a request of any band takes: 16, so that a warp's run in one band is at most
/// `PACKED_UNITS_PER_WARP` units (32 x 16), at most an eighth of a packed block.
pub const PACKED_MAX_UNITS: u64 = 16;
/// Most units one warp's run in one band takes: 32 requests of `PACKED_MAX_UNITS`, an eighth of
/// a packed block of 4096 units (64 and 256 B) and a sixteenth of one of 8192 (16 B), so that
/// a packed block serves at least eight warps.
pub const PACKED_UNITS_PER_WARP: u32 = 32 * PACKED_MAX_UNITS as u32;

/// Which packed class (index into `PACKED_CLASSES`) serves a request of `size` bytes
/// (1..=`PACKED_MAX_BYTES`): the smallest unit that the request fills in at most
/// `PACKED_MAX_UNITS` units. Each lane picks its own, so a request is rounded by its own
/// size, never by its warp's: up to 256 B to 16 bytes (at most 15 bytes over), up to 1 KiB to
/// 64 (at most 63 over 257 B: under 25%), up to 4 KiB to 256 (at most 255 over 1025 B).
#[inline(always)]
pub const fn packed_band(size: u64) -> usize {
    // Each band up is 4x the unit (a shift of 2).
    let mut i = 0;
    while i + 1 < PACKED_CLASSES.len() && size > (PACKED_MAX_UNITS * PACKED_UNIT) << (2 * i as u32) {
        i += 1;
    }
    i
}
/// Bits of a band's field in the warp's one prefix sum of every band's units (`malloc_packed`):
/// a field holds up to `PACKED_UNITS_PER_WARP` (512).
const PACKED_FIELD_BITS: u32 = 10;
const _: () = assert!(PACKED_UNITS_PER_WARP < 1 << PACKED_FIELD_BITS);
const _: () = assert!(PACKED_CLASSES.len() as u32 * PACKED_FIELD_BITS <= u32::BITS);
/// Largest request in a warp of mixed sizes that `malloc` packs (`malloc_packed`'s runs)
/// instead of taking a slice of each class: a warp whose lanes want several classes would
/// hold a current block of each on every multiprocessor, and a burst of mixed sizes up to
/// 64 B left 2.6 times the bytes asked between its lowest and highest address (1.8 up to
/// 512 B); packed, 1.3 and 1.13 (r44). Requests of 16 KiB and up (mask classes) and whole
/// blocks go their own ways first; among the rest, a warp with any request above this keeps
/// the class path, and a warp of one size on two heaps counts as mixed.
pub const MIXED_PACKED_MAX_BYTES: u64 = 512;
/// Largest request `malloc_packed` packs (the largest slice): `PACKED_MAX_UNITS` of the
/// largest band's unit.
pub const PACKED_MAX_BYTES: u64 = 4096;
const _: () = {
    let mut i = 0;
    while i < PACKED_CLASSES.len() {
        assert!(slice_bytes(PACKED_CLASSES[i]) == PACKED_UNIT << (2 * i), "bands are 4x apart");
        assert!(slices_per_block(PACKED_CLASSES[i]) >= 8 * PACKED_UNITS_PER_WARP, "eight warps a block");
        i += 1;
    }
    assert!(PACKED_MAX_BYTES == PACKED_MAX_UNITS * slice_bytes(PACKED_CLASSES[i - 1]));
};
/// Runs of slices thread 0 takes for a thread block in `malloc_block`: the current heap
/// block's rest and the next one's start cover any thread block of up to 4096 threads in
/// classes of 4096 slices per block (up to 256-byte slices; 24 B has 2730, still more than a
/// thread block's 1024); with fewer slices per block, the threads left over allocate per warp.
pub const CTA_RUNS: usize = 2;
/// How much larger a slice a request may take when its own class has no room left (see
/// `DeviceHeap::take_group`): up to the smallest class that holds `FALLBACK_FACTOR` of its
/// class's slices, two doublings (16 classes from 64 to 256 B, 8 from there to 1 KiB; 11-24
/// from there to 8 KiB, whose fallbacks reach into or start in the sixteen classes from 4 to
/// 8 KiB, and 4352 B reaches 18432 B, 4.2 times; 16 above), and below 64 B at least the first
/// class of the 1 MiB blocks (`FALLBACK_FLOOR`: four times 24 or 32 B is in a group of smaller
/// blocks, which a small heap may have no segment for), only when the alternative is null.
/// One doubling above 4 KiB (8 classes there) gave 38x the nulls in the GPU test that churns
/// a 90%-full heap of sizes up to 64 KiB (4.57 M against 0.12 M at 8eed155, H200).
pub const FALLBACK_FACTOR: u64 = 4;
/// The class that requests below 64 B may fall back to at least (see `FALLBACK_FACTOR`): the
/// first whose blocks are `BLOCK_TARGET_BYTES` (144 B).
pub const FALLBACK_FLOOR: usize = {
    let mut c = 0;
    while block_bytes(c) < crate::class::BLOCK_TARGET_BYTES {
        c += 1;
    }
    c
};

/// The largest class a request of class `c` may fall back to (see `FALLBACK_FACTOR`).
#[inline(always)]
pub const fn fallback_last(c: usize) -> usize {
    let top = slice_bytes(c) * FALLBACK_FACTOR;
    let by_size = class_of(if top < MAX_SLICE_BYTES { top } else { MAX_SLICE_BYTES });
    if slice_bytes(c) < 64 && by_size < FALLBACK_FLOOR {
        FALLBACK_FLOOR
    } else {
        by_size
    }
}
/// Requests above this (up to `MAX_SLICE_BYTES`) take a run of whole 64 KiB blocks of
/// `UNIT_RUN_GROUP` (at most 25% over the size) instead of a slice: the classes above it
/// have 4-7 slices per block, and a block comes back only when all of them are free, so under
/// churn about half of their blocks' bytes were dead (issue 9).
pub const UNIT_RUN_MIN: u64 = 256 << 10;
/// Index in `RUN_GROUPS` of the runs of 64 KiB blocks (`UNIT_RUN_GROUP`), for `UNIT_RUN_MIN..`
/// bytes up to `MAX_SLICE_BYTES`.
pub const UNIT_RUNS: usize = 0;
/// Index in `RUN_GROUPS` of the runs of 256 KiB blocks (`class::RUN_GROUP`), above
/// `MAX_SLICE_BYTES` up to a segment.
pub const BLOCK_RUNS: usize = 1;
const _: () =
    assert!(RUN_GROUPS[UNIT_RUNS] == UNIT_RUN_GROUP && RUN_GROUPS[BLOCK_RUNS] == crate::class::RUN_GROUP);
/// Blocks of `UNIT_RUN_GROUP` in a run for `size` bytes.
#[inline(always)]
pub const fn unit_run_len(size: u64) -> u32 {
    size.div_ceil(group_block_bytes(UNIT_RUN_GROUP)) as u32
}
/// Requests above this take a run instead of a slice where the run is no larger than the
/// slice's share of its block (`block / slices_per_block`): 128, 192 and 208..256 KiB (8, 5
/// and 4 slices per 1 MiB block), and 176 KiB, whose blocks leave much at their end (five
/// slices and 14% of the block left, so 205 KiB a slice; a run of 192 KiB is less).
pub const UNIT_RUN_EXACT_MIN: u64 = 96 << 10;

/// Whether `malloc` serves `size` (at most `MAX_SLICE_BYTES`) with a run of whole 64 KiB
/// blocks rather than a slice: above `UNIT_RUN_MIN`, or above `UNIT_RUN_EXACT_MIN` where the
/// run is no larger than what a slice takes of its block. Either way at most the class's
/// rounding, or the run's (less than 64 KiB over).
#[inline(always)]
pub const fn takes_unit_run(size: u64) -> bool {
    size > UNIT_RUN_MIN
        || (size > UNIT_RUN_EXACT_MIN && {
            let c = class_of(size);
            unit_run_len(size) as u64 * group_block_bytes(UNIT_RUN_GROUP) * slices_per_block(c) as u64
                <= block_bytes(c)
        })
}

/// Whether `malloc` serves `size` with a slice (not null for 0, nor a run of blocks): the
/// collective paths (`malloc_warp`, `malloc_block`) serve such sizes together and the rest
/// as `malloc` does (they gave 96 KiB..1 MiB requests that `malloc` serves with a run of
/// 64 KiB blocks a slice of a 2 or 4 MiB block; review of r39).
#[inline(always)]
pub const fn takes_slice(size: u64) -> bool {
    size != 0 && (size <= UNIT_RUN_EXACT_MIN || (size <= MAX_SLICE_BYTES && !takes_unit_run(size)))
}

/// Index of the slice of class `c` at `in_block` bytes into its block, and whether one
/// starts there (inside the block's slices): with no short-circuit, so that the class
/// entry's fields load together and one branch decides (`free`'s hot path).
#[inline(always)]
pub fn slice_at(c: usize, in_block: u64) -> (u64, bool) {
    let index = slice_divisor(c).div(in_block);
    (index, (index * slice_bytes(c) == in_block) & (index < slices_per_block(c) as u64))
}

/// Groups that a boot formats a segment ahead for (`DeviceHeap::boot`): those of 64 KiB ..
/// 1 MiB blocks, the classes from 16 B to 256 KiB.
pub const BOOT_GROUPS: usize = 5;
/// The order in which a boot formats its groups' segments ahead (`DeviceHeap::boot_all`), so
/// that the lowest segments go to group 0 (two), then groups 2, 3 and 4, and group 1 last: the
/// group of 32 B and of the 16-byte packed band (`class::PACKED16_CLASS`), which serves every
/// warp of mixed sizes up to 256 B, grows from its booted segment into the fresh ones right
/// after it. Second, as the groups' own order put it, it grew through the other groups' booted
/// segments by take-backs (`Blocks::take_back_after`) that came after its formats (its
/// bursts install a block on every multiprocessor at once, more than its segment's 128):
/// mixed sizes up to 64 B spanned 2.40-2.55 times their live bytes, last 1.32 (H200, NOTES
/// r47 `b/`-`e/`). Its cost: a burst of 48 B, group 2's, takes group 1's booted segment back
/// near its end and allocates 8-10% slower at 2^20 threads (a probe that kept that segment
/// from the other groups brought 48 B back and left 64 B at 1.39 times its live bytes, r47
/// `g/`; one that boots group 2 right below group 1 brought it back and left 48 B at 1.33,
/// `j/`). A heap that boots fewer groups (`boot_groups`) boots the lowest ones, in this order.
pub const BOOT_ORDER: [usize; BOOT_GROUPS] = [0, 2, 3, 4, 1];
const _: () = {
    let mut seen = [false; BOOT_GROUPS];
    let mut i = 0;
    while i < BOOT_GROUPS {
        assert!(BOOT_ORDER[i] < BOOT_GROUPS && !seen[BOOT_ORDER[i]], "every group to boot once");
        seen[BOOT_ORDER[i]] = true;
        i += 1;
    }
    assert!(BOOT_ORDER[0] == group_of(BOOT_SLOT_CLASS), "the boot slots' group on the lowest segments");
};
/// Segments of heap per group formatted ahead: a heap of fewer than `BOOT_GROUPS` times this
/// many formats fewer groups ahead (none under this many), so that at most 1/16 of it is
/// (5/48 with the second segments of `boot_segments`).
pub const BOOT_SEGMENTS_PER_GROUP: u32 = 16;

/// How many groups (0, 1, ...) a heap of `num_segments` segments formats a segment ahead for.
#[inline(always)]
pub const fn boot_groups(num_segments: u32) -> usize {
    let n = (num_segments / BOOT_SEGMENTS_PER_GROUP) as usize;
    if n < BOOT_GROUPS {
        n
    } else {
        BOOT_GROUPS
    }
}

/// Segments the boot formats ahead for group `g` in a heap of `num_segments` segments: one
/// for each of the first `boot_groups` groups, two for the group whose slots the boot fills
/// (`DeviceHeap::boot_slot`) and for `BOOT_TWICE_GROUP` when more than one group boots. The
/// first installs after the boot's blocks all come at once, one per multiprocessor, and found
/// half of a single booted segment taken: the take-back of the next group's segment then ran
/// while they formatted past it (r33: range / live of 2^20 x 16 B 5.5 against 1.45).
pub const fn boot_segments(g: usize, num_segments: u32) -> u32 {
    let groups = boot_groups(num_segments);
    if g >= groups {
        0
    } else if (g == group_of(BOOT_SLOT_CLASS) || g == BOOT_TWICE_GROUP) && groups > 1 {
        2
    } else {
        1
    }
}

/// The group of 48 and 64 B, which the boot formats two segments ahead for
/// (`boot_segments`): its segment holds 64 blocks, as many as each of its two rows has slots
/// in a heap of 8 GiB, so a launch that reaches every slot of one class (2^15 threads and
/// up) took the whole segment and waited for a format and for the take-back of the next
/// group's segment inside an install. With two: 2^16 x 64 B 0.030-0.035 ->
/// 0.025-0.029 ms, 2^18 0.057-0.062 -> 0.048-0.052, 2^20 x 48 B 0.110-0.114 -> 0.101-0.105,
/// 64 B 0.125-0.126 -> 0.115-0.116, mixed up to 64 B 0.139-0.143 -> 0.129-0.132; range / live
/// of 2^18 x 64 B 1.64-1.77 -> 1.05-1.27, mixed up to 64 B 2.80-3.00 -> 2.63-2.64, the rest
/// unchanged (H200, NOTES r38 `h/`). Not for the 32 B group as well: 1M x 32 B then spanned 3.2
/// times its live bytes in two rounds of three (r38 `g/`).
pub const BOOT_TWICE_GROUP: usize = 2;
const _: () =
    assert!(group_of(class_of(48)) == BOOT_TWICE_GROUP && group_of(class_of(64)) == BOOT_TWICE_GROUP);

/// Bits of the slice count in the word a group leader shares (the class served is above).
const GOT_BITS: u32 = 14;
const _: () = assert!(crate::SLICES_PER_BLOCK < 1 << GOT_BITS);
/// Bits of the second piece's slice count (a warp's take spans at most two blocks of a run and
/// takes at most 32 slices), above `GOT_BITS`; the class served is above both.
const GOT2_BITS: u32 = 6;
const _: () = assert!(arch::WARP_SIZE < 1 << GOT2_BITS && NUM_CLASSES < 1 << (32 - GOT_BITS - GOT2_BITS));
/// Rounds a warp's slice loop may take: each round serves at least one lane, so 32 suffice;
/// the slack covers lanes joining a group late.
pub const WARP_ROUNDS: u32 = 64;

/// The match key of a lane that leaves `malloc_slice_in`'s rounds: its low byte (255) names no
/// class or packed row (`class_key`), so the lane matches no lane that stays.
const LEAVING_KEY: u64 = u64::MAX;

/// The heap as a kernel sees it: a `Copy` handle passed by value as a kernel argument. It is
/// `Copy` and `Clone` in device code only: on the host a copy could outlive a CPU heap's
/// memory, so `cpu::CpuHeap::heap` lends it by reference.
///
/// A handle is made by the heap's owner: the host runtime (`veballoc::Heap::handle`, passed
/// to kernels as `veballoc::Heap::arg`), the CPU model (`cpu::CpuHeap::heap`), or
/// [`DeviceHeap::from_raw_parts`] (unsafe: its addresses must name a live heap). Its fields
/// are private, so safe code cannot point one at arbitrary memory; [`DeviceHeap::mem`],
/// [`DeviceHeap::meta`] and [`DeviceHeap::num_segments`] read them.
///
/// ```compile_fail,E0451
/// // Safe code cannot make a handle from arbitrary numbers (malloc would write there).
/// let heap = veballoc_kernels::DeviceHeap { mem: 0, meta: 0, num_segments: 0 };
/// ```
///
/// # Example (device side)
/// ```ignore
/// #[no_mangle]
/// pub unsafe extern "ptx-kernel" fn my_kernel(heap: DeviceHeap, out: *mut *mut u8) {
///     let p = heap.malloc(64);          // null when the heap is full
///     if !p.is_null() {
///         // SAFETY: p is fresh from this heap's malloc (64 bytes, 16-aligned) and freed once.
///         unsafe { p.write(7); heap.free(p) };
///     }
/// }
/// ```
#[repr(C)]
#[derive(Debug)]
#[cfg_attr(target_arch = "nvptx64", derive(Clone, Copy))]
pub struct DeviceHeap {
    /// Address of segment 0.
    pub(crate) mem: u64,
    /// Address of the metadata (`layout().meta_bytes` bytes, 8-aligned), which starts with
    /// the layout (see `HEADER_BYTES`).
    pub(crate) meta: u64,
    /// `layout().num_segments`, carried here so that `free` checks its pointer and finds the
    /// segment table, the kind copies and the block metadata from its arguments alone, with no
    /// header load before them (ncu, r30). A `u64`, so that the handle has no padding bytes (the host
    /// copies it to the GPU as plain data).
    pub(crate) num_segments: u64,
}

/// Byte offsets of the handle's words (`mem`, `meta`, `num_segments`, each a `u64`): a host
/// type that a kernel receives as its `DeviceHeap` (`veballoc::HeapArg`) must put the same
/// words at the same offsets.
pub const HANDLE_WORD_OFFSETS: [usize; 3] = [
    core::mem::offset_of!(DeviceHeap, mem),
    core::mem::offset_of!(DeviceHeap, meta),
    core::mem::offset_of!(DeviceHeap, num_segments),
];
const _: () = assert!(core::mem::size_of::<DeviceHeap>() == 24);

impl DeviceHeap {
    /// A handle from its parts: segment 0's address, the metadata's address and the segment
    /// count. What the host runtime and the CPU model build theirs with.
    ///
    /// # Safety
    /// Every method of the handle (and of its copies) trusts these numbers: for as long as
    /// the handle or a copy of it is used,
    /// - `meta` is the address of a heap's metadata in global memory (not shared or local
    ///   memory: on the GPU the atomics use the global state space, see `atomic::words`),
    ///   readable and writable (atomically) by every thread that uses the handle:
    ///   `layout.meta_bytes` bytes, 8-aligned, starting
    ///   with the header `layout.header_words()` of that heap's [`HeapLayout`], the rest zeroed
    ///   and then initialised with [`DeviceHeap::init_word`] for every word below
    ///   `layout.init_words()` before any other method is called (or the metadata of a heap
    ///   initialised so, which nothing but veballoc writes since);
    /// - `num_segments` is that layout's `num_segments`;
    /// - `mem` is the address of `num_segments` segments of `SEGMENT_BYTES` bytes, a multiple
    ///   of 16 (of `SEGMENT_BYTES` for `malloc_layout` to give alignments above 16), that the
    ///   heap owns: nothing else accesses them but through the pointers the heap hands out,
    ///   and they are readable and writable by the threads that use those pointers;
    /// - no other heap uses the same metadata or segments.
    ///
    /// A handle that is only read from (`validate`, `layout`, `usable_size`, the statistics)
    /// needs the conditions on `meta` and `num_segments` only: the heap itself touches segment
    /// memory only in `calloc` (zeroing) and `realloc` / `realloc_layout` (copying).
    #[inline(always)]
    pub const unsafe fn from_raw_parts(mem: u64, meta: u64, num_segments: u64) -> Self {
        Self { mem, meta, num_segments }
    }

    /// A copy of this handle for the crate's calls that take it by value (in registers, for
    /// the device's non-inlined paths). The handle is `Copy` and `Clone` only in device code,
    /// where the launch that passes it vouches for its memory (see `from_raw_parts`); on the
    /// host a copy could outlive a CPU heap's memory (`CpuHeap::heap`).
    #[inline(always)]
    pub(crate) const fn dup(&self) -> Self {
        Self { mem: self.mem, meta: self.meta, num_segments: self.num_segments }
    }

    /// Address of segment 0 (the allocations' alignment is relative to it).
    #[inline(always)]
    pub const fn mem(&self) -> u64 {
        self.mem
    }

    /// Address of the metadata, which starts with the layout (see `HEADER_BYTES`).
    #[inline(always)]
    pub const fn meta(&self) -> u64 {
        self.meta
    }

    /// Segments in the heap (the layout's `num_segments`, carried in the handle).
    #[inline(always)]
    pub const fn num_segments(&self) -> u64 {
        self.num_segments
    }

    /// The layout, from the metadata header.
    #[inline(always)]
    pub fn layout(&self) -> &HeapLayout {
        // SAFETY: the heap's creator wrote the layout at the start of the metadata, which
        // lives as long as the heap and never changes.
        unsafe { &*(self.meta as usize as *const HeapLayout) }
    }

    internals! {
        /// The segment layer: segment tree, table, blocks-out counts, runs. The layers are
        /// the allocator's internals: public with the crate's feature `internals` (the tests,
        /// the loom models and tools), crate-private without it, so that a kernel's code sees
        /// `malloc`, `free` and their kin. Safe to have because they come from a valid heap:
        /// their methods that keep the heap's invariants only when called as the heap calls
        /// them (give-backs, marks and maintenance by caller-given index) are `unsafe fn`s;
        /// the takes, claims, trims and readers are safe.
        #[inline(always)]
        fn segments(&self) -> Segments<'_> {
            // SAFETY: the layout is this heap's metadata header and `mem` its segment 0
            // (from_raw_parts's contract), valid while the handle is.
            unsafe { Segments::new(self.mem, self.layout()) }
        }
    }

    internals! {
        /// The block layer (with the segments beneath): block metadata, block trees,
        /// formatters. Public with the feature `internals` (see `segments`).
        #[inline(always)]
        fn blocks(&self) -> Blocks<'_> {
            Blocks::new(self.segments())
        }
    }

    internals! {
        /// The slice layer (with the blocks beneath): the current-block slots. Public with
        /// the feature `internals` (see `segments`).
        #[inline(always)]
        fn slots(&self) -> Slots<'_> {
            Slots::new(self.blocks())
        }
    }

    internals! {
        /// The hand-out bitmap. Panics on a heap that has none (not `checking()`), whose
        /// `bits_off` is 0: its words would be the metadata header's (review of r39). Public
        /// with the feature `internals` (see `segments`).
        #[inline(always)]
        fn hand_out(&self) -> HandOut<'_> {
            assert!(self.checking(), "this heap has no hand-out bitmap");
            // SAFETY: as in `segments`, and the heap has the bitmap (checked above).
            unsafe { HandOut::new(self.mem, self.layout()) }
        }
    }

    /// Whether this heap runs the checks (compiled in and given a bitmap).
    #[inline(always)]
    pub fn checking(&self) -> bool {
        crate::CHECKS && self.layout().checks != 0
    }

    /// Bytes of segment memory managed.
    pub fn capacity(&self) -> u64 {
        (self.layout().num_segments as u64) << SEGMENT_SHIFT
    }

    /// Writes init word `i` (0 .. layout.init_words()) of a zeroed metadata buffer: the init
    /// kernel runs one thread per word; the host twin loops.
    ///
    /// # Safety
    /// The heap is being initialised (see [`DeviceHeap::from_raw_parts`]): its metadata is its
    /// header followed by zeros and init words, and no other method of the heap runs until
    /// every init word is written and published (the init kernel's end, or the initialising
    /// thread's join). On a heap in use, it would mark segments free that are handed out.
    /// `i` must be below `layout().init_words()` (the CPU model checks it).
    pub unsafe fn init_word(&self, i: u32) {
        // SAFETY: the caller's contract is the segment layer's.
        unsafe { self.segments().init_word(i) }
    }

    /// Counter `i` (see [`counter`]).
    pub fn counter(&self, i: usize) -> &Atom64 {
        // SAFETY: the layout reserved counter::COUNT words at counters_off.
        unsafe { &crate::atomic::words(self.meta + self.layout().counters_off, counter::COUNT)[i] }
    }

    /// Completed reclaim sweeps times two, plus one while a sweep runs.
    #[inline(always)]
    fn sweep_word(&self) -> &Atom64 {
        // SAFETY: the layout reserved one word at sweep_off.
        unsafe { &crate::atomic::words(self.meta + self.layout().sweep_off, 1)[0] }
    }

    /// Called by a request that found no memory, before it returns null: waits until a
    /// reclaim sweep has run from start to end after this call began, running it itself if
    /// none is under way. A sweep is `trim_idle`: every current block with no live slice is
    /// retired (what it did not hand out goes back, so it returns to its tree; blocks with
    /// live slices stay current, see `retire_if_idle`), and every formatted segment with no
    /// block out goes back to the segment tree. Failing requests share sweeps. False if no sweep completed within
    /// `SWEEP_WAIT_NS` (the request returns null then too).
    #[inline(never)]
    pub(crate) fn reclaim_before_null(&self) -> bool {
        let word = self.sweep_word();
        // Acquire: pairs with the sweeper's release below.
        let start = word.load_acquire();
        // A sweep under way when we came may have passed our memory already: wait for the
        // next one's end.
        let done = start + if start.is_multiple_of(2) { 2 } else { 3 };
        let mut wait = crate::Wait::new(crate::SWEEP_WAIT_NS);
        loop {
            // Acquire: a completed sweep's gives-back happen-before our retry.
            let v = word.load_acquire();
            if v >= done {
                return true;
            }
            // AcqRel: one sweeper at a time; acquires the previous sweep's end.
            if v.is_multiple_of(2) && word.cas_acq_rel(v, v + 1).is_ok() {
                crate::trace::add(self.meta, crate::trace::Event::Sweeps, 1);
                self.slots().trim_idle();
                // Acquire fence: a slot the sweep read empty (relaxed) was emptied by a
                // retirement whose reclaim window started before; this makes that window's
                // start visible to our waiters (see Blocks::in_reclaim_window).
                crate::arch::fence_acq_rel_gpu();
                // Release: publishes the sweep's gives-back to the waiters (only the sweeper
                // writes the word while it is odd).
                word.store_release(v + 2);
            } else if !wait.sleep() {
                crate::trace::add(self.meta, crate::trace::Event::TimeoutSweep, 1);
                return false;
            }
        }
    }

    /// `claim_host` (a run of `k` segments for the host pool), after a reclaim sweep if the
    /// segment tree has no such run.
    pub fn claim_host_reclaiming(&self, k: u64) -> Option<u32> {
        // The host pool's runs of segments, like the device's, start past no booted segment.
        self.slots().retire_boot_slots();
        self.blocks().take_back_all_booted();
        self.retry_after_reclaim(|| self.segments().claim_host(k))
    }

    /// `take()`, and if it found no memory, again after a reclaim sweep.
    #[inline(always)]
    fn retry_after_reclaim<T>(&self, take: impl Fn() -> Option<T>) -> Option<T> {
        take().or_else(|| if self.reclaim_before_null() { take() } else { None })
    }

    #[inline(always)]
    pub(crate) fn bump(&self, i: usize) {
        self.bump_by(i, 1);
    }

    #[inline(always)]
    fn bump_by(&self, i: usize, n: u64) {
        // Relaxed: a statistic, read by the host after the kernel ends.
        self.counter(i).fetch_add_relaxed(n);
    }

    /// Allocates `size` bytes (aligned to `class::align_of_request(size)`: 16 bytes, 8 for
    /// 17..24, 65..72, 81..88, 97..104 and 113..120). Null for `size == 0` or when the heap is
    /// full; never blocks for long (every retry loop is bounded).
    #[inline]
    pub fn malloc(&self, size: u64) -> *mut u8 {
        if size == 0 {
            core::ptr::null_mut()
        } else if takes_slice(size) {
            self.malloc_slice(slice_class(size), size)
        } else if size <= MAX_SLICE_BYTES {
            self.malloc_whole(UNIT_RUNS, unit_run_len(size), 1)
        } else if size <= self.capacity() {
            self.malloc_whole(BLOCK_RUNS, block_run_len(size), 1)
        } else {
            // More than the heap holds: no sweep can help.
            self.null_for_run()
        }
    }

    /// Null for a request of a run of whole blocks that the heap cannot serve, counted.
    #[inline(always)]
    fn null_for_run(&self) -> *mut u8 {
        crate::trace::add(self.meta, crate::trace::Event::NullWhole, 1);
        self.bump(counter::OUT_OF_MEMORY);
        core::ptr::null_mut()
    }

    /// The key by which `malloc` groups a warp's lanes: class `c` of this heap. Converged
    /// lanes may call `malloc` on two heaps (a kernel given two), and one take must serve one
    /// heap's lanes only. Exact: classes are below 256, and `meta`, an 8-aligned user-space
    /// address, is below 2^59 on every platform CUDA runs on (48- to 57-bit address spaces).
    #[inline(always)]
    fn class_key(&self, c: usize) -> u64 {
        const _: () = assert!(
            NUM_CLASSES + PACKED_CLASSES.len() < 256,
            "a row fits in the key's low byte, below LEAVING_KEY's"
        );
        // `meta` is 8-aligned: its low three bits carry nothing.
        (self.meta >> 3) << 8 | c as u64
    }

    /// Warp-coalesced slice allocation: the lanes that want class `c` elect a leader, which
    /// takes slices for all of them with one atomic; each lane gets `base + rank * size`.
    /// Mask classes (`class::is_mask_class`) go out of line: their takes first look at their
    /// partly live blocks, and that call inside the small classes' loop made their allocation
    /// 4-10% slower (H200, r31 `spill/`).
    #[inline]
    fn malloc_slice(&self, c: usize, size: u64) -> *mut u8 {
        // The band's odd classes serve uniform warps only (see `class::warp_class`). A ballot
        // first: the match that tells uniform from mixed only where a lane needs it, taken by
        // every active lane (the ballot is the same in each).
        let active = arch::activemask();
        // SAFETY: `active` names the lanes that execute this code with this lane (activemask,
        // no branch between), and the ballot's result is the same in each of them, so all of
        // them reach the match too.
        let c = unsafe {
            if arch::ballot_sync(active, is_narrow_odd(c)) != 0 {
                warp_class(c, arch::match_any_sync(active, c as u32) == active)
            } else {
                c
            }
        };
        if is_mask_class(c) {
            self.dup().malloc_mask_slice(c)
        } else {
            self.malloc_slice_in::<false>(c, size)
        }
    }

    /// `malloc_slice` of a mask class. By value, as `free_not_slice`.
    #[inline(never)]
    fn malloc_mask_slice(self, c: usize) -> *mut u8 {
        // A mask class's slices are larger than any request that packs.
        self.malloc_slice_in::<true>(c, u64::MAX)
    }

    /// A routed request of a mixed warp (`malloc_slice_in`): `malloc_packed`'s path, null
    /// (uncounted) where the packed rows found no block, so that the class path tries next.
    /// Out of line and by value, as `malloc_mask_slice`: uniform warps' code stays as it was.
    #[inline(never)]
    fn malloc_mixed_packed(self, size: u64) -> *mut u8 {
        // Routed requests are 1..=MIXED_PACKED_MAX_BYTES, within PACKED_MAX_BYTES.
        self.malloc_packed_in::<true>(size)
    }

    /// `malloc_slice`'s rounds for a request of `size` bytes; `PARTIAL`: `c` is a mask class
    /// (see `serve_group`). Whether a mixed warp packs is decided before the loop, not in its
    /// first round: a collective under a test of the lane's round would be wrong, since lanes
    /// of one warp at different rounds can run the loop's code together (independent thread
    /// scheduling groups the lanes at an instruction whatever their iteration; r45: such a
    /// test hung a churn, and one not the same in every lane got nulls with the heap 10% full).
    #[inline(always)]
    fn malloc_slice_in<const PARTIAL: bool>(&self, c: usize, size: u64) -> *mut u8 {
        let (active, mut peers) = self.class_peers(c);
        // A warp of mixed small sizes (this lane's class group is not every active lane, so
        // no group is: the test is the same in each lane; and no lane here asks for more than
        // `MIXED_PACKED_MAX_BYTES`) packs its requests: one take a unit, where its classes
        // would each hold a current block. The lanes here are the class-path ones: requests
        // of 16 KiB and up (mask classes, `PARTIAL`) and whole blocks left before.
        if !PARTIAL
            && peers != active
            // SAFETY: every active lane evaluates the ballot or none does (the test before it
            // is the same in each: every lane here is at its first round), and `active` names
            // them.
            && unsafe { arch::ballot_sync(active, size > MIXED_PACKED_MAX_BYTES) } == 0
        {
            let p = self.dup().malloc_mixed_packed(size);
            if !p.is_null() {
                return p;
            }
            // No packed block to be had: the class path, whose blocks may have room (null
            // means full for this request's class, not for the packed rows), for the lanes
            // still here, regrouped.
            peers = self.class_peers(c).1;
        }
        for round in 0..WARP_ROUNDS {
            // SAFETY: every lane of `peers` wants class `c` of this heap (its match) and makes
            // this call next: the lanes of a match before the loop all take this path (the
            // routing test is the same in each), and each round's lanes left unserved match
            // again below, those that stay by their class's key.
            if let Some(p) = unsafe { self.serve_group::<PARTIAL>(c, peers) } {
                return p;
            }
            // A lane on its last round matches under a key that no class has, so no group
            // names it (it would wait at shuffles that the lane never reaches: a review of
            // r45's first form), and leaves after the match. Leaving before the match, the
            // lane's own exit, made 16..64 B 6-13% slower to allocate (ptxas saved more
            // convergence-barrier state on the hot path; r46 `g/`, `h/`).
            peers =
                Self::peers_by_key(if round + 1 == WARP_ROUNDS { LEAVING_KEY } else { self.class_key(c) }).1;
        }
        core::ptr::null_mut()
    }

    /// The lanes that run this code with this lane (`activemask`), and those of them that want
    /// class `c` of this heap.
    #[inline(always)]
    fn class_peers(&self, c: usize) -> (u32, u32) {
        Self::peers_by_key(self.class_key(c))
    }

    /// The lanes that run this code with this lane (`activemask`), and those of them whose
    /// `key` is this lane's.
    #[inline(always)]
    fn peers_by_key(key: u64) -> (u32, u32) {
        let active = arch::activemask();
        // SAFETY: the mask is activemask's, the lanes that execute this call with this lane,
        // and all of them reach the match (no branch between).
        (active, unsafe { arch::match_any_sync_u64(active, key) })
    }

    /// One round for the group `peers` (lanes that all want class `c`): its leader takes
    /// slices for all with one atomic. `Some(p)`: this lane is done (`p` null when out of
    /// memory); `None`: the run ran out before this lane's rank, try again. `PARTIAL`: `c` is
    /// a mask class, whose takes look at its partly live blocks first (see `take_group`).
    ///
    /// # Safety
    /// Every lane of `peers` (this lane among them) makes this call together, converged,
    /// with class `c` and a handle of this heap: the leader takes slices for all of them,
    /// sized by its `c`, and the others compute their addresses from what it shares.
    #[inline(always)]
    unsafe fn serve_group<const PARTIAL: bool>(&self, c: usize, peers: u32) -> Option<*mut u8> {
        let leader = peers.trailing_zeros();
        let rank = (peers & arch::lanemask_lt()).count_ones();
        // `got`, `got2` and the class served, which one shuffle carries (see `GOT2_BITS`); the
        // second piece starts at the block after the first's, which every lane can compute.
        let (mut base, mut word) = (0u64, 0u32);
        if arch::lane_id() == leader {
            match self.take_group::<PARTIAL>(c, peers.count_ones()) {
                Some((t, served)) => {
                    base = t.base;
                    word = t.got | t.got2 << GOT_BITS | (served as u32) << (GOT_BITS + GOT2_BITS);
                }
                // Every lane of the group gets null: count requests, not groups.
                None => {
                    crate::trace::add(self.meta, crate::trace::Event::NullSlice, peers.count_ones() as u64);
                    self.bump_by(counter::OUT_OF_MEMORY, peers.count_ones() as u64)
                }
            }
        }
        // SAFETY: every lane of `peers`, the leader among them, makes this call (the
        // caller's contract), and the leader's branch above rejoins here.
        let (base, word) =
            unsafe { (arch::shfl_sync_u64(peers, base, leader), arch::shfl_sync_u32(peers, word, leader)) };
        let served = (word >> (GOT_BITS + GOT2_BITS)) as usize;
        let got2 = (word >> GOT_BITS) & ((1 << GOT2_BITS) - 1);
        let shift = group_block_shift(group_of(served));
        let t = Taken {
            base,
            got: word & ((1 << GOT_BITS) - 1),
            base2: if got2 == 0 { 0 } else { self.mem + ((((base - self.mem) >> shift) + 1) << shift) },
            got2,
        };
        // Orders the leader's acquire take before the peers' use of their slices: shuffles
        // order no memory, bar.warp.sync does among its lanes (PTX ISA, bar.warp.sync).
        // SAFETY: every lane of `peers` reaches it (no branch since the shuffles).
        unsafe { arch::syncwarp(peers) };
        if t.total() == 0 {
            Some(core::ptr::null_mut())
        } else if rank < t.total() {
            Some(t.addr(rank, slice_bytes(served)) as usize as *mut u8)
        } else {
            None
        }
    }

    /// Takes up to `n` (1..=`slice::MAX_TAKE`) slices of class `c` for a group of threads: at most two
    /// pieces of consecutive slices (see `slice::Taken`), or `None` when the heap is out of
    /// memory. A mask class's free slices in its partly live blocks first.
    ///
    /// A take of more than `MAX_TAKE` would carry into the slot word's block id, so the call
    /// is `unsafe`:
    ///
    /// ```compile_fail,E0133
    /// let cpu = veballoc_kernels::cpu::CpuHeap::new(1, 1);
    /// let _ = cpu.heap().take_slices(0, u32::MAX);
    /// ```
    ///
    /// # Safety
    /// `n` is 1..=`slice::MAX_TAKE` (see [`Slots::take_in_row`]).
    #[inline]
    pub unsafe fn take_slices(&self, c: usize, n: u32) -> Option<Taken> {
        // SAFETY: the caller's contract.
        unsafe { self.slots().take_in_class(c, n) }
    }

    /// `take_slices`, marking the slices handed out when the heap runs the checks: what
    /// every caller that hands slices to threads uses. `PARTIAL`: whether `c` may be a mask
    /// class (false: it is not, and the hot path has no partial take in it).
    #[inline(always)]
    pub(crate) fn take_marked<const PARTIAL: bool>(&self, c: usize, n: u32) -> Option<Taken> {
        debug_assert!(PARTIAL || !is_mask_class(c));
        // SAFETY: `n` is a group's size, 1..=1024 (a warp's lanes or a thread block's threads).
        let taken = unsafe {
            if PARTIAL {
                self.take_slices(c, n)
            } else {
                self.slots().take_in_row(c, n)
            }
        };
        self.mark_taken(taken, c)
    }

    /// Marks the slices of `taken` (of class `c`) handed out when the heap runs the checks.
    #[inline(always)]
    fn mark_taken(&self, taken: Option<Taken>, c: usize) -> Option<Taken> {
        if let (Some(t), true) = (taken, self.checking()) {
            // SAFETY: `taken` is a take of class `c` from this heap (the callers pass their
            // take's result), its two pieces not yet handed out.
            unsafe {
                self.hand_out().mark_handed_out(t.base, c, t.got);
                if t.got2 > 0 {
                    self.hand_out().mark_handed_out(t.base2, c, t.got2);
                }
            }
        }
        taken
    }

    /// Slices for a group of `n` threads that want class `c`: of class `c` (after a reclaim
    /// sweep if there were none), or, when the heap has no room left for class `c` (no block
    /// of it and no free segment: each group takes whole segments, so a small heap may hold
    /// fewer groups than are asked for), of the next larger slice class that has some, up to
    /// `fallback_last(c)`. Returns the slices and their class.
    /// `PARTIAL`: as in `take_marked`.
    #[inline(always)]
    pub(crate) fn take_group<const PARTIAL: bool>(&self, c: usize, n: u32) -> Option<(Taken, usize)> {
        match self.take_marked::<PARTIAL>(c, n) {
            Some(t) => Some((t, c)),
            None => self.take_group_after_none(c, n),
        }
    }

    /// `take_group` once class `c` had nothing: after a reclaim sweep, class `c` again, then
    /// the larger classes (kept out of line: the fast path stays small).
    #[inline(never)]
    fn take_group_after_none(&self, c: usize, n: u32) -> Option<(Taken, usize)> {
        if self.reclaim_before_null() {
            if let Some(t) = self.take_marked::<true>(c, n) {
                return Some((t, c));
            }
        }
        // Before a larger class or null: every partly free block of a mask class, not just the
        // first few marks (stale marks of blocks taken empty since come first, lowest first).
        if is_mask_class(c) {
            if let Some(t) = self.mark_taken(self.slots().take_partial_in(c, n, u32::MAX), c) {
                return Some((t, c));
            }
        }
        let last = fallback_last(c);
        // A class of 16-byte-aligned slices never falls back to one of 8-byte-aligned slices
        // (24 B and the band's odd classes): its requests may need 16 (`align_of_request`;
        // found by review: 64 B took 72-byte slices, 16 B 24-byte ones, once their own
        // group had no room).
        let need16 = slice_bytes(c).is_multiple_of(16);
        (c + 1..=last)
            .filter(|&up| !need16 || slice_bytes(up).is_multiple_of(16))
            .find_map(|up| self.take_marked::<true>(up, n).map(|t| (t, up)))
    }

    /// Collective `malloc` for a warp whose active lanes ask for sizes of one class (the same
    /// size, typically): one atomic for the warp, and the lanes' slices are adjacent. Any
    /// sizes are served: when the lanes' classes differ it checks that (a shuffle and a vote)
    /// and serves them as `malloc` does. [`DeviceHeap::malloc_warp_unchecked`] skips the check.
    ///
    /// ```ignore
    /// // SAFETY: every lane of the warp reaches this line together (warp-uniform code), on
    /// // this one heap.
    /// let buf = unsafe { heap.malloc_warp(256) }; // every lane: 256 bytes, adjacent slices
    /// ```
    ///
    /// A collective, so an `unsafe fn`, as CUDA's warp intrinsics are in Rust:
    ///
    /// ```compile_fail,E0133
    /// fn per_lane(heap: veballoc_kernels::DeviceHeap) -> *mut u8 {
    ///     heap.malloc_warp(64) // error: call to unsafe function
    /// }
    /// ```
    ///
    /// # Safety
    /// The lanes of the warp that are active when it is called ([`arch::activemask`]) make this
    /// one call together, on a handle of the same heap (the others compute their addresses
    /// from one lane's take), and none of them leaves it early: call it from code that those
    /// lanes reach together (every lane of the warp, or lanes that took one branch together).
    /// Independent thread scheduling may run lanes of the warp's other calls at this call site
    /// with them (a loop's next iteration, reached by lanes served earlier): those count among
    /// the active lanes, so every call a warp makes at one call site must be on one heap. The
    /// lanes check that their classes agree, then take slices as one group of exactly those
    /// lanes, round after round: lanes of a call that comes later never join the group (r45),
    /// and a lane that left would hang the shuffles.
    #[inline]
    pub unsafe fn malloc_warp(&self, size: u64) -> *mut u8 {
        if !takes_slice(size) {
            return self.malloc(size);
        }
        let c = slice_class(size);
        let active = arch::activemask();
        // SAFETY: `active` names the lanes that execute this call with this lane, all of
        // which reach both collectives (no branch between).
        let agree = unsafe {
            let leaders = arch::shfl_sync_u32(active, c as u32, active.trailing_zeros());
            arch::ballot_sync(active, c as u32 == leaders) == active
        };
        if !agree {
            return self.malloc_slice(c, size);
        }
        // SAFETY: every lane of `active` asks for class `c` (checked above) and makes this
        // call (`agree` is the same in each), on one heap (the caller's contract).
        unsafe { self.malloc_warp_lanes(c, active) }
    }

    /// `malloc_warp` without the check that the lanes' classes agree.
    ///
    /// # Safety
    /// As for [`DeviceHeap::malloc_warp`] (the active lanes make this one call together, on
    /// one heap, and none leaves early), and every active lane that asks for a slice
    /// (`takes_slice`) must ask for a size of the same slice class as every other such lane
    /// (the same size suffices), lanes of the warp's other calls at this call site included
    /// (see `malloc_warp`: a size that changes from one iteration of a loop to the next needs
    /// `malloc_warp`, which checks). Otherwise a lane can get a
    /// slice smaller than it asked for, or one that overlaps another lane's.
    #[inline]
    pub unsafe fn malloc_warp_unchecked(&self, size: u64) -> *mut u8 {
        if !takes_slice(size) {
            return self.malloc(size);
        }
        // SAFETY: the active lanes here are the caller's slice lanes, which all ask for the
        // class of `size` and make this call (the caller's contract).
        unsafe { self.malloc_warp_lanes(slice_class(size), arch::activemask()) }
    }

    /// `malloc_warp`'s slices of class `c` for the lanes of `lanes`.
    ///
    /// # Safety
    /// Every lane of `lanes` (this lane among them) makes this call, with class `c`, on a
    /// handle of this heap, and none leaves it early.
    #[inline(always)]
    unsafe fn malloc_warp_lanes(&self, c: usize, lanes: u32) -> *mut u8 {
        // SAFETY: the caller's contract; the branch is the same in every lane (it depends on
        // `c` only).
        unsafe {
            if is_mask_class(c) {
                self.dup().malloc_mask_warp(c, lanes)
            } else {
                self.malloc_warp_in::<false>(c, lanes)
            }
        }
    }

    /// `malloc_warp_lanes` of a mask class (out of line, as `malloc_mask_slice`).
    ///
    /// # Safety
    /// As for `malloc_warp_in`.
    #[inline(never)]
    unsafe fn malloc_mask_warp(self, c: usize, lanes: u32) -> *mut u8 {
        // SAFETY: the caller's contract is malloc_warp_in's.
        unsafe { self.malloc_warp_in::<true>(c, lanes) }
    }

    /// `malloc_warp_lanes`'s rounds: the lanes of `lanes` not served yet are one group each
    /// round (a mask that only shrinks, never `activemask`: see `malloc_warp`); `PARTIAL` as
    /// in `serve_group`.
    ///
    /// # Safety
    /// As for `malloc_warp_lanes`.
    #[inline(always)]
    unsafe fn malloc_warp_in<const PARTIAL: bool>(&self, c: usize, mut lanes: u32) -> *mut u8 {
        for _ in 0..WARP_ROUNDS {
            // SAFETY: every lane of `lanes` wants class `c` of this heap and makes this call
            // (the caller's contract, and the ballot below for later rounds).
            let got = unsafe { self.serve_group::<PARTIAL>(c, lanes) };
            // SAFETY: every lane of `lanes` made the call above and reaches this ballot (no
            // branch between); the lanes still unserved go on together.
            lanes = unsafe { arch::ballot_sync(lanes, got.is_none()) };
            if let Some(p) = got {
                return p;
            }
        }
        core::ptr::null_mut()
    }

    /// Collective `malloc` for a whole (1-D) thread block: thread 0 takes slices for every
    /// thread with one atomic on its slot's run (another take when that run runs out midway;
    /// at most `CTA_RUNS` pieces) and shares them through shared memory, so that thread `t`
    /// gets slice `t` of the pieces and neighbours' buffers are adjacent within a heap block.
    /// Sizes may differ: a thread whose request needs a larger slice than thread 0's gives its
    /// slice back and allocates on its own, so the fast path is for blocks that ask for one
    /// size.
    ///
    /// ```ignore
    /// // SAFETY: every thread of this 1-D block reaches this line, on this one heap.
    /// let row = unsafe { heap.malloc_block(64 * 4) }; // one 256-byte row per thread
    /// ```
    ///
    /// # Safety
    /// Every thread of the thread block makes this call together, as it would call
    /// `__syncthreads` (it holds two block barriers, `bar.sync 0`): none has exited or waits at
    /// another barrier, and it is not called from code that only some threads reach. The block
    /// is one-dimensional (`blockDim.y == blockDim.z == 1`): thread 0 takes
    /// `block_dim_x()` slices and thread `thread_idx_x()` gets slice `thread_idx_x()`, so
    /// threads of a 2-D or 3-D block would share slices. Every thread calls it on a handle of
    /// the same heap (thread 0's take is shared with all). The leftover threads then call
    /// [`DeviceHeap::malloc_warp`] together, whose contract this one's implies.
    #[inline]
    pub unsafe fn malloc_block(&self, size: u64) -> *mut u8 {
        let fits = takes_slice(size);
        let c = if fits { slice_class(size) } else { NUM_CLASSES };
        let t = arch::thread_idx_x();
        // Thread 0's runs: [base0, got0, base1, got1 | (class + 1) << 32]; class 0 in the last
        // word's top half means no run (thread 0's own size is not a slice size).
        let mut runs = [0u64; CTA_RUNS * 2];
        if t == 0 && fits {
            let mut need = arch::block_dim_x();
            let mut k = 0;
            while k < CTA_RUNS && need > 0 {
                // Out of memory: the threads left over count themselves in malloc_warp.
                // SAFETY: `need` is at most the block's threads, 1024.
                let Some(taken) = (unsafe { self.take_slices(c, need) }) else { break };
                for (b, g) in [(taken.base, taken.got), (taken.base2, taken.got2)] {
                    if g == 0 {
                        continue;
                    }
                    if k == CTA_RUNS {
                        // No room for a third piece: it goes back, as if freed.
                        let (seg, local) = self.block_of(b, c);
                        let first = self.slice_in_block(b, c);
                        // SAFETY: slices first..first + g of that block were taken just above
                        // and not handed to any thread: given back once.
                        unsafe { self.slots().release_slices(seg, local, c, first, g) };
                        continue;
                    }
                    if self.checking() {
                        // SAFETY: b and the g slices after it (class c) were taken from this
                        // heap just above.
                        unsafe { self.hand_out().mark_handed_out(b, c, g) };
                    }
                    (runs[2 * k], runs[2 * k + 1]) = (b, g as u64);
                    need -= g;
                    k += 1;
                }
            }
            runs[2 * CTA_RUNS - 1] |= (c as u64 + 1) << 32;
        }
        // SAFETY: every thread of the block makes this call (the caller's contract), and
        // exactly one, thread 0, is the source; no branch is open here.
        let [b0, g0, b1, w3] = unsafe { arch::cta_broadcast4(runs, t == 0) };
        let (g1, run_class) = (w3 & u32::MAX as u64, (w3 >> 32) as usize);
        let t = t as u64;
        let mine = if t < g0 {
            Some(b0 + t * slice_bytes(run_class.saturating_sub(1)))
        } else if t < g0 + g1 {
            Some(b1 + (t - g0) * slice_bytes(run_class.saturating_sub(1)))
        } else {
            None
        };
        match mine {
            // A slice at least as large as asked, with the alignment asked for: a 72-byte
            // class's slices are 8-aligned, and a 64-byte request needs 16 (review of r39).
            Some(p) if fits && c < run_class && p.is_multiple_of(align_of_request(size)) => {
                p as usize as *mut u8
            }
            // Too small for this thread: give it back, then allocate alone.
            Some(p) => {
                // SAFETY: p is this thread's slice of thread 0's runs, handed out (and marked,
                // with the checks) above and not yet passed on: freed once, never used.
                unsafe { self.free(p as usize as *mut u8) };
                self.malloc(size)
            }
            // The runs fell short (contention or out of memory): the rest go per warp.
            // SAFETY: the threads left over are a suffix of the block (t >= g0 + g1), so
            // those of one warp reach this one call together from the same branch, on the
            // same heap (the caller's contract), and stay in it.
            None => unsafe { self.malloc_warp(size) },
        }
    }

    /// Mixed-size warp coalescing: each active lane's request is rounded up to the unit of its
    /// size's band (16 bytes up to 256 B, 64 up to 1 KiB, 256 up to 4 KiB: `packed_band`, so
    /// at most 15 bytes or 25% over), and the lanes of each band are packed back to back, in
    /// lane order, into one run of a packed block of that band taken with one atomic, so that
    /// neighbouring threads' data is adjacent whatever their sizes. Sizes above
    /// `PACKED_MAX_BYTES` go to `malloc`. `free` needs no header: a packed block counts
    /// objects, not bytes (the leader gives back each object's extra units at once).
    /// Each object's bounds are recorded (two bits of its block's bound bitmap), so
    /// `usable_size` returns its rounded size and `realloc` works as for any pointer. `malloc`
    /// takes this path for the small requests of a warp that asks for several size classes
    /// (`MIXED_PACKED_MAX_BYTES`).
    ///
    /// ```ignore
    /// let node = heap.malloc_packed(16 + 8 * degree as u64); // sizes differ per lane
    /// ```
    ///
    /// Not a collective that every lane must reach: as `malloc`, each round groups the lanes
    /// that are active at it (`activemask`), so a lane that calls it alone is served alone.
    #[inline]
    pub fn malloc_packed(&self, size: u64) -> *mut u8 {
        if size == 0 || size > PACKED_MAX_BYTES {
            return self.malloc(size);
        }
        self.malloc_packed_in::<false>(size)
    }

    /// `malloc_packed` of `size` in 1..=`PACKED_MAX_BYTES` (it never calls `malloc`, so the
    /// routed requests' path has no cycle through `malloc`). `ROUTED`: a null is not counted
    /// (the caller's class path decides whether the heap is full).
    #[inline(always)]
    fn malloc_packed_in<const ROUTED: bool>(&self, size: u64) -> *mut u8 {
        debug_assert!(size > 0 && size <= PACKED_MAX_BYTES);
        let band = packed_band(size);
        let c = PACKED_CLASSES[band];
        // Packed units are powers of two: a shift, not a division by a variable.
        let unit_shift = slice_bytes(c).trailing_zeros();
        let units = ((size + slice_bytes(c) - 1) >> unit_shift) as u32;
        // This lane's units sit in its band's field of the warp's one prefix sum, so that one
        // sum serves every band (no field carries: each holds at most PACKED_UNITS_PER_WARP).
        let field = band as u32 * PACKED_FIELD_BITS;
        let field_mask = (1u32 << PACKED_FIELD_BITS) - 1;
        for _ in 0..WARP_ROUNDS {
            // SAFETY: activemask names the lanes that execute this call with this lane, and all
            // of them reach the match.
            let active = unsafe { arch::match_any_sync_u64(arch::activemask(), self.meta) };
            // SAFETY: (this and the round's other collectives) `active` names the lanes that
            // execute this round with this lane on this heap (the match), and every one of them
            // reaches each collective below: the leaders' branches rejoin before them.
            let (before, total) = unsafe { warp_exclusive_sum(active, units << field) };
            let (before, total) = ((before >> field) & field_mask, (total >> field) & field_mask);
            // The lanes of this lane's band: two ballots tell the three bands apart.
            const _: () = assert!(PACKED_CLASSES.len() == 3, "two ballots tell three bands apart");
            // SAFETY: see the round's first collective.
            let (above0, above1) =
                unsafe { (arch::ballot_sync(active, band > 0), arch::ballot_sync(active, band > 1)) };
            let peers = match band {
                0 => active & !above0,
                1 => above0 & !above1,
                _ => above1,
            };
            // One leader a band: each takes its band's run, in the same code at once.
            let leader = peers.trailing_zeros();
            let (mut base, mut got) = (0u64, 0u32);
            if arch::lane_id() == leader {
                // A packed row's runs are one block: the take is one piece.
                let take = || {
                    // SAFETY: `total` is the band's units, at most 32 requests of at most
                    // PACKED_MAX_UNITS each (`packed_band`): at most PACKED_UNITS_PER_WARP
                    // (512), below MAX_TAKE.
                    unsafe { self.slots().take_in_row(packed_row(band), total) }
                };
                match self.retry_after_reclaim(take) {
                    Some(t) => (base, got) = (t.base, t.got),
                    // Every lane of the band gets null: count requests, not warps.
                    None if !ROUTED => self.bump_by(counter::OUT_OF_MEMORY, peers.count_ones() as u64),
                    None => {}
                }
            }
            // Each lane reads its own band's leader (in `active`).
            // SAFETY: see the round's first collective (the leaders' branch rejoins here).
            let (base, got) = unsafe {
                (arch::shfl_sync_u64(active, base, leader), arch::shfl_sync_u32(active, got, leader))
            };
            // Orders the leaders' acquire takes before the lanes' use of their runs (as in
            // serve_group).
            // SAFETY: see the round's first collective.
            unsafe { arch::syncwarp(active) };
            // Lanes whose whole run fits: a prefix of their band in lane order.
            let served = before + units <= got;
            // SAFETY: see the round's first collective.
            let served_lanes = unsafe { arch::ballot_sync(active, served) } & peers;
            if arch::lane_id() == leader && got > 0 {
                // SAFETY: base/got are the leader's take above (of class c's packed row), and
                // the served lanes' runs lie within it.
                unsafe { self.settle_packed(base, c, got, served_lanes.count_ones()) };
            }
            if got == 0 {
                return core::ptr::null_mut();
            }
            if served {
                let p = base + before as u64 * slice_bytes(c);
                // The band's objects' bounds, so that `usable_size` and `realloc` know sizes.
                // SAFETY: the lanes of `served_lanes` (this one among them) are this branch's
                // lanes of this band, converged here; their objects lie back to back from
                // `base` in lane order within the leader's take, not handed out yet.
                unsafe { self.mark_packed_run(served_lanes, base, p, c, units) };
                if self.checking() {
                    // SAFETY: p is the first unit of this lane's run of the take above.
                    unsafe { self.hand_out().mark_handed_out(p, c, 1) };
                }
                return p as usize as *mut u8;
            }
        }
        core::ptr::null_mut()
    }

    /// Records the bounds of a band's served objects in their block's bound bitmap: for an
    /// object of units `s..e`, bits `s` and `e` (none past the block's last unit) set and the
    /// bits between cleared, so that its size is the distance to the next set bit whatever a
    /// past life of the block left there (no other live object's writer touches these bits,
    /// so nothing clears the bitmap at install, recycle or `free`). A few writes a warp rather
    /// than two RMWs a lane: the lanes whose objects start in one bitmap word gather their
    /// start bits (and the last object's end), and the lowest of them writes the word (a store
    /// where the take holds the whole word, else two RMWs at the take's two ends). Returns
    /// after every write (`bar.warp.sync`), so each lane's `usable_size` sees its bounds. The
    /// CPU model, which hands out a take's objects one after another, calls it once an object,
    /// as a one-lane take (`mark_packed_object`).
    ///
    /// # Safety
    /// Every lane of `served` (this one among them) makes this call together, converged, with
    /// the same `base` and `c`: a take of class `c`'s packed row at `base`, whose served
    /// objects lie back to back from `base` in lane order (this lane's of `units` units at
    /// `p`) and are not handed out yet.
    #[inline(always)]
    unsafe fn mark_packed_run(&self, served: u32, base: u64, p: u64, c: usize, units: u32) {
        const BITS: u32 = crate::layout::BIT_WORD_BITS as u32;
        let (seg, local) = self.block_of(p, c);
        let g = group_of(c);
        let unit = bound_unit(local, g);
        // A unit's index in its block (packed units are powers of two: a shift).
        let unit_in_block = |addr: u64| {
            (((addr - self.mem) & (group_block_bytes(g) - 1)) >> slice_bytes(c).trailing_zeros()) as u32
        };
        let (s, r0) = (unit_in_block(p), unit_in_block(base));
        let last = u32::BITS - 1 - served.leading_zeros();
        let per = slices_per_block(c);
        // SAFETY: (this and the other collectives) every lane of `served` makes this call
        // (the caller's contract) and reaches each of them: no branch between.
        let end = unsafe { arch::shfl_sync_u32(served, s + units, last) };
        let w = s / BITS;
        // The fence (the last object's end, unless the block ends there) goes with the last
        // lane's start word, or on its own where it lies in the next word.
        let me_last = arch::lane_id() == last;
        let fence_here = me_last && end < per && end / BITS == w;
        let mine = 1u64 << (s % BITS) | if fence_here { 1 << (end % BITS) } else { 0 };
        // SAFETY: as above.
        let group = unsafe { arch::match_any_sync(served, w) };
        // SAFETY: as above (`group` is a subset of `served`, each of its lanes here).
        let value = unsafe {
            let lo = arch::reduce_or_sync(group, mine as u32);
            let hi = arch::reduce_or_sync(group, (mine >> u32::BITS) as u32);
            (hi as u64) << u32::BITS | lo as u64
        };
        let count = self.num_segments as u32;
        if arch::lane_id() == group.trailing_zeros() {
            // The take's units in this word: from its start (or the word's) to the fence (or
            // the word's end, or the block's).
            let from = r0.max(w * BITS) % BITS;
            let to = end.min(per - 1).min(w * BITS + BITS - 1) % BITS;
            self.blocks().write_bounds(count, seg, unit, w, bits_between(from, to + 1), value);
        }
        if me_last && end < per && end / BITS != w {
            let fw = end / BITS;
            self.blocks().write_bounds(
                count,
                seg,
                unit,
                fw,
                bits_between(0, end % BITS + 1),
                1 << (end % BITS),
            );
        }
        // Orders every lane's writes above before any lane's use of its pointer (bar.warp.sync
        // orders memory among its lanes, PTX ISA).
        // SAFETY: as above (the branches rejoin here).
        unsafe { arch::syncwarp(served) };
    }

    /// Records the packed object of `units` units of packed class `c` at `p` (not handed
    /// out yet) in its block's bound bitmap: the CPU model's packed warps, which hand out a
    /// take's objects one after another, each as a one-lane take of `mark_packed_run`.
    ///
    /// # Safety
    /// The object lies within one take of class `c`'s packed row of this heap, is not handed
    /// out yet, and overlaps no live object.
    #[cfg(all(not(target_arch = "nvptx64"), not(loom)))]
    pub(crate) unsafe fn mark_packed_object(&self, p: u64, c: usize, units: u32) {
        // SAFETY: on the host a warp is this one thread (lane 0: the mask is 1), which makes
        // the call alone; its take is this one object from `p`, not handed out yet (the
        // caller's contract).
        unsafe { self.mark_packed_run(1 << arch::lane_id(), p, p, c, units) };
    }

    /// The packed leader's second step: of the `got` units (of class `c`) taken at `base`,
    /// `served` objects were handed out. Each will give back one unit when freed; everything
    /// else (their extra units, and the tail no lane could use) goes back now.
    ///
    /// # Safety
    /// `base` and `got` are one take of this heap's packed row of class `c`
    /// (`take_in_row`), settled once, and `served <= got` objects of it were handed out, the
    /// first of them at `base` to the caller's thread, which frees it (if ever) after this.
    #[inline(always)]
    pub(crate) unsafe fn settle_packed(&self, base: u64, c: usize, got: u32, served: u32) {
        let credit = got - served;
        if credit > 0 {
            let (seg, local) = self.block_of(base, c);
            if served > 0 {
                // The take's first object (the leader's own: served objects are a prefix of
                // the take, which starts at the leader's) stays live at least until its free,
                // after this in the leader's program order: this cannot free the block.
                self.blocks().block_meta(seg, local).give_back_unused_held(credit);
            } else {
                // Packed classes count their frees (no mask): the first slice does not matter.
                // SAFETY: the caller's contract: `credit` units of that block were taken and
                // are handed to no one.
                unsafe { self.slots().release_slices(seg, local, c, 0, credit) };
            }
        }
    }

    /// Segment and block (of class `c`) of heap address `addr`: what `Slots::release_slices`
    /// takes.
    #[inline(always)]
    pub fn block_of(&self, addr: u64, c: usize) -> (u32, u32) {
        let off = addr - self.mem;
        (
            (off >> SEGMENT_SHIFT) as u32,
            ((off & (SEGMENT_BYTES - 1)) >> group_block_shift(group_of(c))) as u32,
        )
    }

    /// Index in its block (of class `c`) of the slice at heap address `addr`.
    #[inline(always)]
    pub fn slice_in_block(&self, addr: u64, c: usize) -> u32 {
        let in_block = (addr - self.mem) & (group_block_bytes(group_of(c)) - 1);
        slice_divisor(c).div(in_block) as u32
    }

    /// A run of `k` whole blocks of run group `RUN_GROUPS[i]` (it may cross segments, see
    /// `block::runs_cross_segments`) that starts at a multiple of `a` blocks from segment 0:
    /// freed blocks of the group first (the lowest run), else from the group's run row (runs
    /// of up to a quarter of a segment) or fresh segments, and before null an exact search of
    /// the tree, then the same after a reclaim sweep. For `a > 1` the run taken is `a - 1`
    /// blocks longer, and what lies before and after its first aligned `k` goes back at once.
    #[inline(never)]
    fn malloc_whole(&self, i: usize, k: u32, a: u32) -> *mut u8 {
        let g = RUN_GROUPS[i];
        let want = k + (a - 1);
        let take = || {
            self.blocks()
                .try_claim_run(g, want)
                .or_else(|| self.slots().take_run(i, want))
                .or_else(|| self.blocks().claim_run_exact(g, want))
        };
        let Some(gid) = self.retry_after_reclaim(take) else { return self.null_for_run() };
        let gid = if a > 1 { self.blocks().align_run(g, gid, k, a) } else { gid };
        let first = block_index(g, gid);
        for i in 1..k {
            let (seg, local) = split_gid(block_at(g, first + i as u64));
            // Relaxed: published by the release store of the head's kind below (the validator
            // and a `free` of a pointer into the run read it after the user's own
            // synchronisation with this malloc); one fence for a run of thousands of blocks.
            self.blocks().set_kind(seg, local, g, KIND_RUN_TAIL);
        }
        let (seg, local) = split_gid(gid);
        let meta = self.blocks().block_meta(seg, local);
        // Relaxed: published by the release store of the kind below.
        meta.freed.store_relaxed(k);
        // Relaxed: the head's copies only, published by the release store of the kind below;
        // the head's own word gets that store alone, so that a racing stale free's CAS from
        // WHOLE can only read it, and acquire the run length (review of r30).
        self.blocks().set_unit_kinds(seg, local, g, KIND_WHOLE);
        // Release: `free` of this pointer (after the user's own synchronisation) reads it.
        meta.kind.store_release(KIND_WHOLE);
        self.blocks().block_addr(g, gid) as usize as *mut u8
    }

    /// `size` bytes (at least 1) at a multiple of `align` (a power of two above the 64 KiB
    /// blocks of `UNIT_RUN_GROUP`, at most a segment) from segment 0, whose address is a
    /// multiple of a segment on the GPU: a run of 64 KiB blocks up to `MAX_SLICE_BYTES`, of
    /// 256 KiB blocks above, taken `align / block - 1` blocks longer than `size` needs and
    /// cut to its first aligned block (the blocks around it go back at once; so null only
    /// when no run that much longer is free). Null when `align` is out of that range. What
    /// `malloc_layout` uses for large alignments; `free` takes the result as any other.
    #[inline(never)]
    pub fn malloc_run_aligned(&self, size: u64, align: u64) -> *mut u8 {
        let unit = group_block_bytes(UNIT_RUN_GROUP);
        if size == 0 || !align.is_power_of_two() || align <= unit || align > SEGMENT_BYTES {
            return core::ptr::null_mut();
        }
        if size <= MAX_SLICE_BYTES {
            self.malloc_whole(UNIT_RUNS, unit_run_len(size), (align / unit) as u32)
        } else if size <= self.capacity() {
            let a = align.div_ceil(group_block_bytes(RUN_GROUPS[BLOCK_RUNS]));
            self.malloc_whole(BLOCK_RUNS, block_run_len(size), a as u32)
        } else {
            self.null_for_run()
        }
    }

    /// `p`'s offset from segment 0 and its segment, `None` when `p` is not in the heap: one
    /// compare against the handle's segment count (no header load) covers null, below the heap
    /// and past it (the difference wraps).
    #[inline(always)]
    fn offset_in_heap(&self, p: u64) -> Option<(u64, u32)> {
        let off = p.wrapping_sub(self.mem);
        (off >> SEGMENT_SHIFT < self.num_segments).then_some((off, (off >> SEGMENT_SHIFT) as u32))
    }

    /// Where `p` lives: its segment, offset in it, and what the segment holds; `None` when
    /// `p` is not in the heap.
    #[inline(always)]
    fn locate(&self, p: u64) -> Option<(u32, u64, SegKind)> {
        let (off, seg) = self.offset_in_heap(p)?;
        // Relaxed: `p` was handed out after the entry was set (malloc's acquire chain), and
        // the caller's free happens-after that malloc; relaxed reads that write or a later one.
        let entry = self.segments().seg_table(seg).load_relaxed();
        Some((seg, off & (SEGMENT_BYTES - 1), seg_kind(entry)))
    }

    /// Frees `ptr` (null is ignored). The memory may be handed out again at once, to any
    /// thread.
    ///
    /// ```
    /// let cpu = veballoc_kernels::cpu::CpuHeap::new(1, 1); // the CPU model: 16 MiB of host memory
    /// let heap = cpu.heap();
    /// let p = heap.malloc(64);
    /// assert!(!p.is_null());
    /// // SAFETY: p came from this heap's malloc above, is freed once, and not used after.
    /// unsafe { heap.free(p) };
    /// ```
    ///
    /// `free` is `unsafe`, as `GlobalAlloc::dealloc` and C's `free` are: a call outside
    /// `unsafe` does not compile.
    ///
    /// ```compile_fail,E0133
    /// let cpu = veballoc_kernels::cpu::CpuHeap::new(1, 1);
    /// let p = cpu.heap().malloc(64);
    /// cpu.heap().free(p);
    /// ```
    ///
    /// # Safety
    /// - `ptr` is null, or a pointer that this heap (through this handle or any copy of it)
    ///   returned from `malloc`, `malloc_warp`, `malloc_block`, `malloc_packed`, `calloc`,
    ///   `malloc_layout`, `malloc_run_aligned`, `realloc` or `realloc_layout` (or, for the
    ///   internals' users, a slice of a `take_slices` or `Slots` take), that has not been
    ///   freed since (by `free`, or by a `realloc` / `realloc_layout` that moved it or was
    ///   given size 0), and that no owner frees itself (a `DBox`, a `DVec`, a collection
    ///   using the heap as its allocator).
    /// - Every access to the memory happens before this call (the caller's own, and other
    ///   threads' through their synchronisation with it), and none follows it: the memory
    ///   may belong to another allocation from now on.
    ///
    /// What the heap does with other pointers is a diagnostic, not a guarantee: a pointer
    /// outside the heap, inside an allocation or in memory it never handed out is counted in
    /// `counter::INVALID_FREE` and ignored, and with the checks (`crate::CHECKS` and a heap
    /// created with `HeapLayout::checks`) so is a second free of a slice that has not been
    /// handed out again since (`counter::DOUBLE_FREE`). But a pointer whose memory was handed
    /// out again, or one that another owner still uses, cannot be told from a valid one: its
    /// free gives that live memory back, and a later malloc hands it out twice. So even with
    /// the checks, `free` is sound only for pointers that meet the conditions above.
    #[inline]
    pub unsafe fn free(&self, ptr: *mut u8) {
        let p = ptr as usize as u64;
        let Some((off, seg)) = self.offset_in_heap(p) else {
            if !ptr.is_null() {
                self.bump(counter::INVALID_FREE);
            }
            return;
        };
        // Two loads from the pointer alone, issued together: the segment's entry and the copy
        // of its block's kind word for this 64 KiB unit (the block's own word needs the
        // group first). Relaxed: `p` was handed out after both were written (malloc's acquire
        // chain, the install's release swap published the copies with the kind), and the
        // caller's free happens-after that malloc; relaxed reads that write or a later one.
        let entry = self.segments().seg_table(seg).load_relaxed();
        let copy =
            self.blocks().unit_kind_in(self.num_segments as u32, off >> MIN_BLOCK_SHIFT).load_relaxed();
        let SegKind::Group(g) = seg_kind(entry) else {
            self.bump(counter::INVALID_FREE);
            return;
        };
        let in_seg = off & (SEGMENT_BYTES - 1);
        let local = (in_seg >> group_block_shift(g)) as u32;
        let in_block = in_seg & (group_block_bytes(g) - 1);
        match kind_parts(copy) {
            // `free_slice` checks that the class's group is the entry's: the two loads are
            // independent, and a racing free of a stale pointer (a double free, a pointer of
            // the segment's earlier format) may read a new entry with an old copy. Geometry
            // from one and a class from the other would have the recycle park and insert
            // blocks of another group, past the block and the segment (review of r30,
            // reproduced on the CPU model); with the check, a stray free stays within its
            // block, as before. `TABLE_CLASSES`: a packed block may name a packed-only entry
            // (no writer pairs one with `KIND_SLICES`; `usable_size` and the validator reject
            // that pair, here it would cost a compare on the hot path).
            (KIND_SLICES | KIND_PACKED, c) if c < TABLE_CLASSES => {
                self.free_slice::<false>(seg, local, g, c, in_block, p)
            }
            // Whole blocks, parked blocks, run tails: from the block's own kind word.
            _ => self.dup().free_not_slice(seg, local, g, in_block, p),
        }
    }

    /// `free` of a pointer `in_block` bytes into block `local` of segment `seg` (of group `g`),
    /// which serves slices of class `c` by its kind copy, or by its own word (`FROM_WORD`). A
    /// class of another group (see `free`) goes from the copy to the block's own word, and
    /// from the word is invalid: so the two functions cannot call each other again.
    #[inline(always)]
    fn free_slice<const FROM_WORD: bool>(
        &self,
        seg: u32,
        local: u32,
        g: usize,
        c: usize,
        in_block: u64,
        p: u64,
    ) {
        // No division by a variable: multiply-high by the class's reciprocal. The three tests
        // are combined without short-circuits, so that the class entry's fields load together
        // and one branch decides (the group check alone waited for its load first).
        let (index, exact) = slice_at(c, in_block);
        let same_group = group_of(c) == g;
        if same_group & exact {
            self.free_slices_coalesced(seg, local, c, index as u32, p);
        } else if !same_group & !FROM_WORD {
            self.dup().free_not_slice(seg, local, g, in_block, p);
        } else {
            // Inside a slice, past the block's last one, or (a racing stale free) a word
            // naming a class of another group.
            self.bump(counter::INVALID_FREE);
        }
    }

    /// `free` of a pointer whose unit's kind copy is not a slice block's, or names a class of
    /// another group than the segment entry's: decided by the block's own kind word (the start of a run of whole blocks, or its second free; a
    /// parked block; inside a run). By value: a `&self` made every `free` store the handle
    /// to local memory for this rare call.
    #[inline(never)]
    fn free_not_slice(self, seg: u32, local: u32, g: usize, in_block: u64, p: u64) {
        // Relaxed: as the copy in `free`; a second free happens-after the first, so it reads
        // its kind or a later one.
        match kind_parts(self.blocks().block_meta(seg, local).kind.load_relaxed()) {
            // The group check is free_slice's (from the word: a class of another group is
            // counted as invalid).
            (KIND_SLICES | KIND_PACKED, c) if c < TABLE_CLASSES => {
                self.free_slice::<true>(seg, local, g, c, in_block, p)
            }
            // The start of a run of whole blocks (or its second free).
            (KIND_WHOLE | KIND_FREE, _) if in_block == 0 => {
                if self.blocks().free_block(seg, local, g) == FreeOutcome::NotHandedOut {
                    self.bump(counter::DOUBLE_FREE);
                }
            }
            // A slice of a parked block: not handed out.
            (KIND_FREE, _) => self.bump(counter::DOUBLE_FREE),
            // Inside a run of whole blocks.
            _ => self.bump(counter::INVALID_FREE),
        }
    }

    /// The lanes freeing slices of the same block give them back with one atomic: a count, or
    /// for a mask class (`class::is_mask_class`) the OR of their slices' bits (slice `index`
    /// is this lane's). With checks, each lane first clears its slice's hand-out bit; lanes
    /// whose bit was already clear are counted as double frees and give nothing back.
    #[inline(always)]
    fn free_slices_coalesced(&self, seg: u32, local: u32, c: usize, index: u32, addr: u64) {
        let masked = is_mask_class(c);
        // The block by its address, which no block of another heap shares (heaps' segments
        // are disjoint: converged lanes may free into two heaps), and whether its class keeps
        // a mask: lanes whose copies disagree on that (a racing stale free) are not peers, so
        // every peer takes the same path below. Not the class: under free's contract a live
        // slice pins its block's class, so lanes of one block agree on it.
        let block = self.segments().segment_addr(seg) + ((local as u64) << group_block_shift(group_of(c)));
        let key = block << 1 | masked as u64;
        // SAFETY: the mask is activemask's, the lanes that execute this code with this lane;
        // `peers`, those that free slices of this block, all run every collective below (the
        // branches on `self.checking()` and `masked` are the same in each of them, `masked`
        // being part of the key and the heap the same).
        let peers = unsafe { arch::match_any_sync_u64(arch::activemask(), key) };
        // SAFETY: as above; `addr` is a slice of this heap (free's contract).
        let owned = !self.checking() || unsafe { self.hand_out().unmark_warp(peers, addr) };
        // SAFETY: as above.
        let owned_lanes = unsafe { arch::ballot_sync(peers, owned) };
        let bits = if masked {
            let mine = if owned { 1u64 << index } else { 0 };
            // SAFETY: as above.
            let (lo, hi) = unsafe {
                (arch::reduce_or_sync(peers, mine as u32), arch::reduce_or_sync(peers, (mine >> 32) as u32))
            };
            (hi as u64) << 32 | lo as u64
        } else {
            0
        };
        // Orders every peer's last access to its slice before the leader's release RMW below
        // (and so before the block's recycler): match.any, vote and redux order no memory,
        // bar.warp.sync does among its lanes (PTX ISA, bar.warp.sync), and the release is
        // cumulative over what the leader has observed.
        // SAFETY: as above.
        unsafe { arch::syncwarp(peers) };
        if arch::lane_id() == peers.trailing_zeros() {
            let bad = (peers & !owned_lanes).count_ones();
            if bad > 0 {
                self.bump_by(counter::DOUBLE_FREE, bad as u64);
            }
            if masked {
                if bits != 0 {
                    let mask = self.blocks().free_mask_in(self.num_segments as u32, seg, local);
                    // SAFETY: `bits` are the slices of this block that the peers free and own
                    // (free's contract; with the checks, only those whose bit was set), once.
                    unsafe { self.slots().release_bits(mask, seg, local, c, bits) };
                }
            } else if owned_lanes != 0 {
                let meta = self.blocks().block_meta_in(self.num_segments as u32, seg, local);
                // SAFETY: as above, for the owning lanes' slices of this counting block.
                unsafe { self.slots().release_slices_of(meta, seg, local, c, owned_lanes.count_ones()) };
            }
        }
    }

    /// Bytes usable at `ptr` (its slice, block or run size, or a packed object's size rounded
    /// to its unit); 0 if the heap did not hand it out (a pointer inside a slice, a packed
    /// object or a run, as `free` tells them: `realloc` of one copied a neighbour's bytes;
    /// review of r39). A pointer to a slice or packed unit that is not live now (freed, or
    /// never handed out) may read a size, as a freed slice's is its class's.
    ///
    /// Safe for any `ptr`: it never reads through `ptr`, only the heap's metadata, at indices
    /// checked against the handle's segment count (a pointer outside the heap is 0). For a
    /// pointer the caller does not own, the answer may be stale by the time it returns.
    pub fn usable_size(&self, ptr: *const u8) -> u64 {
        match self.locate(ptr as usize as u64) {
            Some((seg, in_seg, SegKind::Group(g))) => {
                let meta = self.blocks().block_meta(seg, (in_seg >> group_block_shift(g)) as u32);
                let in_block = in_seg & (group_block_bytes(g) - 1);
                // Acquire: pairs with the release that published the kind.
                match kind_parts(meta.kind.load_acquire()) {
                    // Relaxed: published by that release (the run length).
                    (KIND_WHOLE, _) if in_block == 0 => {
                        group_block_bytes(g) * meta.freed.load_relaxed().max(1) as u64
                    }
                    // The start of a slice of this block, as `free_slice` checks it.
                    (KIND_SLICES, c) if c < NUM_CLASSES && group_of(c) == g && slice_at(c, in_block).1 => {
                        slice_bytes(c)
                    }
                    // A packed object: its bounds (`mark_packed_run`), where one starts.
                    (KIND_PACKED, c) if c < TABLE_CLASSES && group_of(c) == g => {
                        let unit_shift = slice_bytes(c).trailing_zeros();
                        if in_block & (slice_bytes(c) - 1) != 0 {
                            return 0;
                        }
                        let local = (in_seg >> group_block_shift(g)) as u32;
                        let u = (in_block >> unit_shift) as u32;
                        let (per, max) = (slices_per_block(c), PACKED_MAX_UNITS as u32);
                        match self.blocks().object_units(
                            self.num_segments as u32,
                            seg,
                            bound_unit(local, g),
                            u,
                            per,
                            max,
                        ) {
                            Some(k) => (k as u64) << unit_shift,
                            None => 0,
                        }
                    }
                    // A parked block hands out nothing, and no pointer starts in a run's later
                    // blocks.
                    _ => 0,
                }
            }
            _ => 0,
        }
    }

    /// `n * size` zeroed bytes; null on overflow or when full.
    pub fn calloc(&self, n: u64, size: u64) -> *mut u8 {
        let Some(total) = n.checked_mul(size) else {
            return core::ptr::null_mut();
        };
        let p = self.malloc(total);
        if !p.is_null() {
            // SAFETY: p holds at least round_up(total, 8) bytes (every usable size is a
            // multiple of 8) and is 8-aligned.
            unsafe { fill_words(p as *mut u64, total.div_ceil(8), 0) };
        }
        p
    }

    /// Resizes `ptr` to `size` bytes, keeping the contents up to the smaller size. Null `ptr`
    /// means malloc; `size == 0` frees and returns null. On failure returns null and leaves
    /// `ptr` untouched. Keeps `ptr` when it is already large enough.
    ///
    /// # Safety
    /// `ptr` is null or meets the conditions of [`DeviceHeap::free`]; no other thread writes
    /// its memory during the call (the contents are copied when the allocation moves). When
    /// the call frees `ptr` (it returns another non-null pointer, or `size` is 0), nothing
    /// accesses `ptr`'s memory after it, as after `free`; when it returns null for a
    /// non-zero `size`, `ptr` stays allocated.
    pub unsafe fn realloc(&self, ptr: *mut u8, size: u64) -> *mut u8 {
        // SAFETY: the caller's contract is realloc_with's (no alignment beyond malloc's).
        unsafe { self.realloc_with(ptr, size, 1, || self.malloc(size)) }
    }

    /// `realloc` with `fresh` allocating the new block (of at least `size` bytes, aligned to
    /// `align`), for the aligned form (`realloc_layout`): `ptr` is kept only where it has
    /// `align` and the alignment `malloc` promises for `size`.
    ///
    /// # Safety
    /// As for [`DeviceHeap::realloc`].
    #[inline(always)]
    pub(crate) unsafe fn realloc_with(
        &self,
        ptr: *mut u8,
        size: u64,
        align: u64,
        fresh: impl FnOnce() -> *mut u8,
    ) -> *mut u8 {
        if ptr.is_null() {
            return fresh();
        }
        if size == 0 {
            // SAFETY: the caller vouches for ptr (free's conditions), and does not use it after
            // a free.
            unsafe { self.free(ptr) };
            return core::ptr::null_mut();
        }
        let have = self.usable_size(ptr);
        if have == 0 {
            self.bump(counter::INVALID_FREE);
            return core::ptr::null_mut();
        }
        // In place only where the pointer has the alignment `size` is promised: a 72-byte
        // slice is 8-aligned, and a shrink to 64 bytes needs 16 (review of r31).
        if size <= have && (ptr as u64).is_multiple_of(align_of_request(size).max(align)) {
            return ptr;
        }
        let q = fresh();
        if !q.is_null() {
            // The smaller of the two sizes: a shrink that moves (for alignment) copied the old
            // usable size into the smaller new slice, past its end (review of r39).
            let words = (have / 8).min(size.div_ceil(8));
            // SAFETY: both are 8-aligned and do not overlap (q was free while ptr was live);
            // ptr holds `have` bytes and q at least `size` rounded up to 8 (every usable size
            // is a multiple of 8), so both hold `words` words; no other thread writes ptr's
            // (the caller's contract) and q is ours. Then ptr is freed once: the caller does
            // not use it after a move.
            unsafe {
                copy_words(ptr as *const u64, q as *mut u64, words);
                self.free(ptr);
            }
        }
        q
    }
}

/// The host's and the maintenance kernels' entry points into the layers.
impl DeviceHeap {
    /// Address of segment `seg`.
    #[inline(always)]
    pub fn segment_addr(&self, seg: u32) -> u64 {
        self.segments().segment_addr(seg)
    }

    /// Claims `k` contiguous segments for the host-side pool (see `Segments::claim_host`).
    pub fn claim_host(&self, k: u64) -> Option<u32> {
        self.segments().claim_host(k)
    }

    /// Returns `k` host-owned segments from `s` to the segment tree.
    ///
    /// # Safety
    /// Segments `s .. s + k` were claimed by `claim_host` (or `claim_host_reclaiming`) of this
    /// heap, are given back once, and are not used (by the host pool or its users) after this
    /// call: the next malloc may hand them out. Nothing checks it.
    pub unsafe fn release_host(&self, s: u32, k: u32) {
        // SAFETY: the caller's contract is the segment layer's.
        unsafe { self.segments().release_host(s, k) }
    }

    /// Takes free segments out of the segment tree for the host to return their memory (see
    /// `Segments::release_free_segments`); returns how many, listed in `out`.
    pub fn release_free_segments(&self, keep: u32, out: &mut [u32]) -> usize {
        self.segments().release_free_segments(keep, out)
    }

    /// Returns released segment `seg` (its memory mapped again) to the segment tree.
    ///
    /// # Safety
    /// `seg` was taken out by `release_free_segments` of this heap, is given back once, and
    /// its memory is mapped (readable and writable) again: the next malloc may hand it out.
    /// Nothing checks it.
    pub unsafe fn reacquire_segment(&self, seg: u32) {
        // SAFETY: the caller's contract is the segment layer's.
        unsafe { self.segments().reacquire_segment(seg) }
    }

    /// The boot of a new heap (`veballoc_boot`: `boot_all`, the groups in `BOOT_ORDER`; the
    /// host's `Heap::boot`, which every new heap runs): formats one segment ahead for group
    /// `g` (see `Blocks::preformat`; two for the 16-byte class's group and for 48-64 B, see
    /// `boot_segments`) if `g < boot_groups(..)` and its tree has no free block, so that the
    /// first mallocs of a kernel on a new heap take blocks from the tree rather than wait for
    /// a format. A class
    /// that outgrows its booted segments goes on in the next booted segment if that one's
    /// group has not used it (`Blocks::take_back_after`): without that, past the other
    /// groups' segments (r28: range / live of 1M x 16 B 5.7 against 1.7). Then `boot_slot`
    /// gives the 16-byte class's slots a block each. (Gallatin's init installs a block of
    /// every size for every multiprocessor; blocks installed ahead in the other groups'
    /// booted segments would keep those from the groups below, see `boot_slot`.)
    pub fn boot(&self, g: usize) -> bool {
        let segments = boot_segments(g, self.layout().num_segments);
        segments > 0 && self.blocks().preformat(g, segments)
    }

    /// `boot` of every group, in `BOOT_ORDER` (what `veballoc_boot` runs on a new heap, on
    /// one thread); true if any group formatted a segment.
    pub fn boot_all(&self) -> bool {
        BOOT_ORDER.iter().fold(false, |any, &g| self.boot(g) | any)
    }

    /// The boot's second step (`veballoc_boot_slots`, one thread per slot, after `boot`):
    /// installs a first block of the smallest class (16 B, `BOOT_SLOT_CLASS`) in slot `shard`
    /// of its row (see `Slots::preinstall`), for the slots that multiprocessors take from
    /// (`shard` below the row's slots and below `%nsmid`), in a heap large enough to boot the
    /// group (`boot_groups`; a second boot fills the empty slots again). Then a
    /// new heap's first 16-byte requests on every multiprocessor take one atomic: a launch of
    /// 2^15 threads on a new heap took 0.046 ms, most of it the first installs, 128 at once
    /// on the booted segment's leaf words, against Gallatin's 0.013, whose init installs a
    /// block of every size for every multiprocessor (H200, NOTES r33). Only the smallest
    /// class: its group's two booted segments are the lowest (`boot_segments`), so its
    /// bursts grow into its own second one and then into the next booted segment
    /// (`Blocks::take_back_after`); blocks installed ahead in another group's booted segment
    /// would keep that segment from the group below, whose bursts would go on past every
    /// booted segment. The blocks pin at most the row's share of the heap
    /// (`layout::PIN_SHIFT`; 132 x 64 KiB in 8 GiB on the H100), and go back with the
    /// slot's retirement like any current block (a trim, a sweep before a null).
    pub fn boot_slot(&self, shard: u64) -> bool {
        let row = BOOT_SLOT_CLASS;
        group_of(row) < boot_groups(self.layout().num_segments)
            && shard < self.layout().row_shards(row).min(arch::nsmid()) as u64
            && self.slots().preinstall(row, shard as u32)
    }

    /// Returns segment `seg` to the segment tree if it is formatted and none of its blocks is
    /// out (see `Blocks::trim_segment`).
    pub fn trim_segment(&self, seg: u32) {
        self.blocks().trim_segment(seg)
    }

    /// Retires current slot `shard` of row `row` (see `Slots::trim_slot`).
    pub fn trim_slot(&self, row: usize, shard: u32) {
        self.slots().trim_slot(row, shard)
    }

    /// Thread `i`'s part of the second step of `trim` run in parallel (after every slot's
    /// `trim_slot`; the host's `Heap::trim`): segment `i` back to the tree if wholly free,
    /// and for thread 0 the booted segments forgotten, as `trim` does last. The GPU's trim
    /// had kept them, so the first claim of a fresh run retired idle 16-byte slots and took
    /// booted segments back long after the boot (review of r39).
    pub fn trim_segments_part(&self, i: u64) {
        if i < self.layout().num_segments as u64 {
            self.trim_segment(i as u32);
        }
        if i == 0 {
            // Clears a hint word; the trims above do not read it.
            self.blocks().forget_booted();
        }
    }

    /// Retires every current block, then returns wholly free segments to the segment tree
    /// (see `Slots::trim`): what a reclaim sweep does.
    pub fn trim(&self) {
        self.slots().trim()
    }
}

/// This lane's exclusive prefix sum of `x` over the lanes of `active` (in lane order), and
/// their total. A full warp scans in 5 shuffle steps; a partial one takes one shuffle per
/// active lane.
///
/// # Safety
/// Every lane of `active` (this lane among them) makes this call together, converged.
#[inline(always)]
unsafe fn warp_exclusive_sum(active: u32, x: u32) -> (u32, u32) {
    let me = arch::lane_id();
    if active == u32::MAX {
        let mut incl = x;
        let mut d = 1;
        while d < arch::WARP_SIZE {
            // SAFETY: `active` is the full warp, and every lane of it makes this call.
            let v = unsafe { arch::shfl_up_full_u32(incl, d) };
            if me >= d {
                incl += v;
            }
            d *= 2;
        }
        // SAFETY: as above.
        let total = unsafe { arch::shfl_sync_u32(active, incl, arch::WARP_SIZE - 1) };
        return (incl - x, total);
    }
    let (mut before, mut total) = (0u32, 0u32);
    let mut m = active;
    while m != 0 {
        let j = m.trailing_zeros();
        // SAFETY: every lane of `active` makes this call and runs the same loop (over `active`).
        let v = unsafe { arch::shfl_sync_u32(active, x, j) };
        if j < me {
            before += v;
        }
        total += v;
        m &= m - 1;
    }
    (before, total)
}

/// # Safety
/// `p` must be valid for `n` aligned u64 writes.
unsafe fn fill_words(p: *mut u64, n: u64, v: u64) {
    for i in 0..n {
        // SAFETY: the caller vouches for p..p+n.
        unsafe { p.add(i as usize).write(v) };
    }
}

/// Copies `n` words as `MaybeUninit`: a slice's bytes past what its owner wrote (the slack
/// past the size asked, a vector's spare capacity) may be uninitialised, which a `u64` read
/// may not be.
///
/// # Safety
/// `src` and `dst` must be valid for `n` aligned u64 reads/writes and not overlap.
unsafe fn copy_words(src: *const u64, dst: *mut u64, n: u64) {
    let (src, dst) = (src as *const core::mem::MaybeUninit<u64>, dst as *mut core::mem::MaybeUninit<u64>);
    for i in 0..n {
        // SAFETY: the caller vouches for both ranges.
        unsafe { dst.add(i as usize).write(src.add(i as usize).read()) };
    }
}

const _: () = assert!(MAX_SLICE_BYTES < SEGMENT_BYTES);
