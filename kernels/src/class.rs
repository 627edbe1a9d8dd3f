//! Size classes: the geometry of slices and blocks, with no heap state.
//!
//! Class sizes: 16, 24, 32, 48, 64 bytes, then eight per doubling up to `NARROW_TO_BYTES`
//! (72, 80, 88, ..., 128, 144, 160, ..., 256), four per doubling (320, 384, 448, 512, ...) up
//! to `FINE_FROM_BYTES` (4 KiB), sixteen in the next doubling (4352, 4608, 4864, ..., 8192),
//! then eight per doubling (9216, 10240, ...) up to `MAX_CLASS_BYTES` (1 MiB), 109 classes. So
//! a request of `size` bytes gets at most `size + 15` bytes below 64 B, at most `1.125 * size`
//! up to 256 B (a warp of one class; see below), at most `1.25 * size` up to 4 KiB, at most
//! `1.0625 * size` up to 8 KiB and at most `1.125 * size` above (the next class is at most an
//! eighth, a quarter or a sixteenth larger than the previous one, which is smaller than
//! `size`). Eight per doubling from 64 to 256 B, the sizes of small nodes and records: a heap
//! filled with 100-byte requests held 89.3% of itself as requested bytes with four (112-byte
//! slices), 96.2% with eight (104; H200, NOTES r31). There the odd classes (72, 88, ..., 240)
//! serve warps whose lanes all ask for one class; a lane of a warp of mixed sizes takes the
//! next class (`warp_class`, at most `1.25 * size`), so that mixed warps ask for as few classes
//! as four per doubling: eight per doubling for every lane and up to 4 KiB (119 classes, NOTES
//! r29) made mixed sizes 20-35% slower to allocate on a fresh heap (a warp of mixed sizes asks
//! for more classes, and each class's first block on each multiprocessor is an install the
//! warp waits for). Eight per doubling above 4 KiB, where a block holds at most 256 slices
//! and a quarter of a slice is a kilobyte or more: a heap filled with 70000-byte requests
//! held 80% of them as requested bytes with four (81920-byte slices), 93% with eight
//! (73728); sixteen just above 4 KiB, where requests of a page and a header land: 4097-byte
//! ones filled 80% with four (5120), 88.7% with eight (4608), 93.8% with sixteen (4352; the
//! H200, NOTES r30).
//!
//! Alignment: a slice of `m << e` bytes (odd `m`) lies at a multiple of `1 << e` from its
//! block, whose address is a multiple of 64 KiB from segment 0: 16 bytes for every class but
//! 24, 72, 88, 104 and 120 B, whose slices are 8-byte aligned. A type of 17..24, 65..72,
//! 81..88, 97..104 or 113..120 bytes needs no more (its size is a multiple of its alignment,
//! and none of those sizes is a multiple of 16; `align_of_request`); `malloc_layout` asks for
//! 32 bytes when 16 are needed.
//!
//! Classes share segments by group: a group is a block size, and a segment formatted for
//! group `g` is cut into blocks of `group_block_bytes(g)` (64 KiB << g), so a pointer's block is
//! a shift. A class's block size is 4096 slices of the largest size of its doubling (16 << d
//! for sizes in (8 << d, 16 << d]), at most 1 MiB (`BLOCK_TARGET_BYTES`), and at least four
//! such slices: 64 KiB for 16..24 B (24 B below its doubling's rule, see
//! `SMALLEST_BLOCKS_BELOW`), 128 KiB for 32 B, 256 KiB for 48..64 B, 512 KiB for
//! 72..128 B, 1 MiB for 144 B .. 256 KiB, 2 and 4 MiB above: seven groups. Every class of a
//! group takes blocks from the group's one tree and segments, so that a free block of 1 MiB
//! serves any class from 144 B to 256 KiB (with one group per doubling, 17 in all, free blocks
//! of one doubling's segments could not serve another's, and a churn of mixed sizes found no
//! room with a sixth of the heap in such blocks). Each block serves one class, recorded in its
//! metadata when it is installed, and holds `slices_per_block(c) = floor(block / slice)`
//! slices (what is left at the block's end is less than one slice: at most 1/16 of the block
//! up to 32 KiB slices, 1/8 down to six slices a block; the sizes of the classes with fewer,
//! above 160 KiB, take runs of 64 KiB blocks where those are smaller, see
//! `heap::takes_unit_run`). Classes up to `MAX_SLICE_BYTES` (1 MiB) serve slices (the
//! warp-coalesced path). Larger requests, up to the whole heap, take a run of
//! `block_run_len(size)` contiguous 256 KiB blocks of `RUN_GROUP`, which may cross segments
//! (less than 256 KiB over: at most 25% above 1 MiB).
//!
//! Every size here is `m << e` with an odd `m` below 32, so dividing by one is a shift and a
//! multiplication by a reciprocal of `m` ([`Divisor`], from the class table): `free` divides
//! by no variable.

use crate::SEGMENT_BYTES;

/// log2 of the smallest slice (16 B): also the unit of the hand-out bitmap.
pub const MIN_SLICE_SHIFT: u32 = 4;
/// Classes below the four-per-doubling ones: 16, 24, 32, 48 (64 is the first of the
/// four-per-doubling scheme, class `LINEAR_CLASSES`). 24 B makes requests of 17..24 bytes (a
/// pair of pointers and a count, say) take 24 bytes, not 32.
pub const LINEAR_CLASSES: usize = 4;
/// Mantissas and exponents of the classes below 64 B: 16, 24, 32, 48 (see `mant_exp`).
const LINEAR_SIZES: [(u32, u32); LINEAR_CLASSES] = [(1, 4), (3, 3), (1, 5), (3, 4)];
/// Requests above 64 B up to this get eight classes per doubling (72, 80, 88, ..., 128, 144,
/// 160, ..., 256), larger ones up to `FINE_FROM_BYTES` four.
pub const NARROW_TO_BYTES: u64 = 256;
/// log2 of the classes per doubling from 64 B to `NARROW_TO_BYTES`: eight, so that requests
/// of 65..256 bytes, the sizes of small nodes and records, get at most 12.5% more (100 and
/// 200 B took 112 and 224: a heap filled with them held 89.3% of itself as requested bytes).
pub const NARROW_SUB_CLASS_BITS: u32 = 3;
/// Classes from 64 B to `NARROW_TO_BYTES` (64 B itself included).
const NARROW_CLASSES: usize = (2 << NARROW_SUB_CLASS_BITS) + 1;
/// log2 of the classes per doubling from `NARROW_TO_BYTES` to `FINE_FROM_BYTES`.
pub const SUB_CLASS_BITS: u32 = 2;
/// Requests above this get finer classes: `1 << FIRST_FINE_SUB_CLASS_BITS` in the doubling
/// above it, `1 << FINE_SUB_CLASS_BITS` per doubling after that.
pub const FINE_FROM_BYTES: u64 = 4096;
/// log2 of the classes per doubling above `2 * FINE_FROM_BYTES`.
pub const FINE_SUB_CLASS_BITS: u32 = 3;
/// log2 of the classes in the doubling just above `FINE_FROM_BYTES` (4 KiB .. 8 KiB): sixteen,
/// so that a request a little over a page (a 4 KiB buffer and its header) gets at most 6.25%
/// more, not 12.5% (4097 B took a 4608-byte slice: a heap filled with them held 88.7% of
/// itself as requested bytes; with 4352-byte slices about 94%).
pub const FIRST_FINE_SUB_CLASS_BITS: u32 = 4;
/// Classes in the doubling just above `FINE_FROM_BYTES`.
const FIRST_FINE_CLASSES: usize = 1 << FIRST_FINE_SUB_CLASS_BITS;
/// log2 of `FINE_FROM_BYTES`.
const FINE_FROM_SHIFT: u32 = FINE_FROM_BYTES.trailing_zeros();
/// log2 of `NARROW_TO_BYTES`.
const NARROW_TO_SHIFT: u32 = NARROW_TO_BYTES.trailing_zeros();
/// The first class above `NARROW_TO_BYTES`.
const WIDE_CLASS0: usize = LINEAR_CLASSES + NARROW_CLASSES;
/// The first class above `FINE_FROM_BYTES` (the classes up to it: 16..64 B, eight per doubling
/// to 256 B, four per doubling from there).
pub const FINE_CLASS0: usize = WIDE_CLASS0 + ((FINE_FROM_SHIFT - NARROW_TO_SHIFT) << SUB_CLASS_BITS) as usize;
/// Largest class (and largest slice): 1 MiB.
pub const MAX_CLASS_BYTES: u64 = 1 << 20;
/// Number of size classes (16 B .. `MAX_CLASS_BYTES`).
pub const NUM_CLASSES: usize = class_of(MAX_CLASS_BYTES) + 1;
/// Largest request served by slices (the warp-coalesced path).
pub const MAX_SLICE_BYTES: u64 = MAX_CLASS_BYTES;
/// Number of groups (segment formats): one per block size, 64 KiB .. 4 MiB.
pub const NUM_GROUPS: usize = group_of(NUM_CLASSES - 1) + 1;
/// log2 of the smallest block (group 0: 64 KiB, 4096 slices of 16 B).
pub const MIN_BLOCK_SHIFT: u32 = MIN_SLICE_SHIFT + 12;
/// Most slices in a block (`GOT_BITS` in `heap.rs` must hold it).
pub const MAX_SLICES_PER_BLOCK: u32 = 8192;
/// Blocks for slices of 144 B .. 256 KiB are this large (smaller slices have 4096 of their
/// doubling's largest to a block, 24 B 2730 (`SMALLEST_BLOCKS_BELOW`), larger ones four): so
/// that a multiprocessor's current block holds little of a segment.
pub const BLOCK_TARGET_BYTES: u64 = 1 << 20;
/// Global block ids are `segment << BLOCK_ID_SHIFT | block in segment` for every group.
pub const BLOCK_ID_SHIFT: u32 = 8;
/// Bound on the blocks of a segment of any group (16-byte slices: 256 blocks of 64 KiB); the
/// stride of per-segment block metadata and of block ids.
pub const MAX_BLOCKS_PER_SEGMENT: u32 = 1 << BLOCK_ID_SHIFT;

/// The class of a request of `size` bytes (`1 <= size <= MAX_CLASS_BYTES`): the smallest class
/// whose slices hold it. O(1): the leading-zero count and the next two bits (four above 4 KiB,
/// three above 8 KiB), no loop.
#[inline(always)]
pub const fn class_of(size: u64) -> usize {
    if size <= 64 {
        // 1..=16 -> 0, 17..=24 -> 1, 25..=32 -> 2, 33..=48 -> 3, 49..=64 -> 4.
        let s = if size == 0 { 1 } else { size };
        let q = ((s - 1) >> MIN_SLICE_SHIFT) as usize;
        q + (q > 1 || s > 24) as usize
    } else {
        let x = size - 1;
        let l = 63 - x.leading_zeros();
        if size <= NARROW_TO_BYTES {
            // 64 <= x < 256 lies in [(8 + r) << (l - 3), (9 + r) << (l - 3)): the class above
            // that interval's start, (9 + r) << (l - 3), is class 5 + 8 * (l - 6) + r.
            LINEAR_CLASSES
                + 1
                + (((l - 6) as usize) << NARROW_SUB_CLASS_BITS)
                + sub_class(x, l, NARROW_SUB_CLASS_BITS)
        } else if size <= FINE_FROM_BYTES {
            // x >= 256 lies in [(4 + r) << (l - 2), (5 + r) << (l - 2)); the class above that
            // interval's start, (5 + r) << (l - 2), is class WIDE_CLASS0 + 4 * (l - 8) + r.
            WIDE_CLASS0
                + (((l - NARROW_TO_SHIFT) as usize) << SUB_CLASS_BITS)
                + sub_class(x, l, SUB_CLASS_BITS)
        } else if l == FINE_FROM_SHIFT {
            // 4096 <= x < 8192 lies in [(16 + r) << 8, (17 + r) << 8): the class above that
            // interval's start, (17 + r) << 8, is class FINE_CLASS0 + r.
            FINE_CLASS0 + sub_class(x, l, FIRST_FINE_SUB_CLASS_BITS)
        } else {
            // x >= 8192 lies in [(8 + r) << (l - 3), (9 + r) << (l - 3)): the class above that
            // interval's start, (9 + r) << (l - 3), is class FINE_CLASS0 + 16 + 8 * (l - 13) + r.
            FINE_CLASS0
                + FIRST_FINE_CLASSES
                + (((l - FINE_FROM_SHIFT - 1) as usize) << FINE_SUB_CLASS_BITS)
                + sub_class(x, l, FINE_SUB_CLASS_BITS)
        }
    }
}

/// `r` of `class_of`: the `bits` bits of `x` below its leading one (at bit `l`), which say
/// where in its doubling `x` lies.
#[inline(always)]
const fn sub_class(x: u64, l: u32, bits: u32) -> usize {
    ((x >> (l - bits)) & ((1 << bits) - 1)) as usize
}

/// Whether class `c` is one of the odd classes of the eight-per-doubling band (72, 88, 104,
/// 120, 144, 176, 208, 240 B): those serve warps whose active lanes all ask for that class;
/// see `warp_class`.
#[inline(always)]
pub const fn is_narrow_odd(c: usize) -> bool {
    c > LINEAR_CLASSES && c < WIDE_CLASS0 && (c - LINEAR_CLASSES) % 2 == 1
}

/// The class a lane of a warp takes for a request of class `c`: `c`, but in a warp whose
/// active lanes do not all ask for one class (`uniform` false) an odd class of the
/// eight-per-doubling band takes the next one (the band's even classes are the four per
/// doubling of the classes above 256 B), so that a warp of mixed sizes asks for no more
/// classes than it did before the band: eight per doubling for every lane made mixed sizes
/// 20-35% slower to allocate (each class a warp asks for is a round of the warp's loop, and on
/// a fresh heap an install per multiprocessor; NOTES r29). Still at most 25% over the size.
#[inline(always)]
pub const fn warp_class(c: usize, uniform: bool) -> usize {
    if is_narrow_odd(c) && !uniform {
        c + 1
    } else {
        c
    }
}

/// The alignment `malloc(size)` guarantees: 8 bytes for requests of the classes that are odd
/// multiples of 8 (24, 72, 88, 104, 120 B: requests of 17..24, 65..72, 81..88, 97..104 and
/// 113..120 bytes, none of them a multiple of 16, so no type of such a size needs 16), 16 for
/// every other size.
#[inline(always)]
pub const fn align_of_request(size: u64) -> u64 {
    if size > 16 && size <= 128 && slice_bytes(class_of(size)) % 16 == 8 {
        8
    } else {
        16
    }
}

/// Mantissa and exponent of class `c`'s slice size: `slice_bytes(c) = m << e`, with `m` in
/// 1 or 3 (classes below `LINEAR_CLASSES`), 8..=16 (up to 256 B), 5..=8 (up to 4 KiB),
/// 17..=32 (up to 8 KiB) or 9..=16 (above).
#[inline(always)]
const fn mant_exp(c: usize) -> (u32, u32) {
    if c < LINEAR_CLASSES {
        LINEAR_SIZES[c]
    } else if c == LINEAR_CLASSES {
        (1, 6)
    } else if c < WIDE_CLASS0 {
        let k = (c - LINEAR_CLASSES - 1) as u32;
        let bits = NARROW_SUB_CLASS_BITS;
        ((1 << bits) + (k & ((1 << bits) - 1)) + 1, 6 - bits + (k >> bits))
    } else if c < FINE_CLASS0 {
        let k = (c - WIDE_CLASS0) as u32;
        (5 + (k & 3), NARROW_TO_SHIFT - SUB_CLASS_BITS + (k >> SUB_CLASS_BITS))
    } else if c < FINE_CLASS0 + FIRST_FINE_CLASSES {
        let k = (c - FINE_CLASS0) as u32;
        ((1 << FIRST_FINE_SUB_CLASS_BITS) + k + 1, FINE_FROM_SHIFT - FIRST_FINE_SUB_CLASS_BITS)
    } else {
        let k = (c - FINE_CLASS0 - FIRST_FINE_CLASSES) as u32;
        let r = k & ((1 << FINE_SUB_CLASS_BITS) - 1);
        (
            (1 << FINE_SUB_CLASS_BITS) + r + 1,
            FINE_FROM_SHIFT + 1 - FINE_SUB_CLASS_BITS + (k >> FINE_SUB_CLASS_BITS),
        )
    }
}

/// Bytes of one slice of class `c` (from the class table: one cached load at run time).
#[inline(always)]
pub const fn slice_bytes(c: usize) -> u64 {
    CLASS_TABLE[c].slice_bytes as u64
}

/// Bytes of one slice of class `c`, derived (for the class table).
const fn derive_slice_bytes(c: usize) -> u64 {
    let (m, e) = mant_exp(c);
    (m as u64) << e
}

/// What the hot paths need of a class, derived once: `malloc` and `free` read one 16-byte
/// entry (a cached load) instead of rederiving the geometry from the class index, which cost
/// free about a hundred instructions per warp (ncu, r25).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
struct ClassInfo {
    /// `slice_divisor(c).magic`.
    magic: u64,
    /// `slice_bytes(c)`.
    slice_bytes: u32,
    /// `slices_per_block(c)`.
    per_block: u16,
    /// `slice_divisor(c).shift`.
    shift: u8,
    /// `group_of(c)`.
    group: u8,
}

/// The class-table entries past the request classes: geometries that only packed rows use
/// (`PACKED_CLASSES`), as `(slice bytes, log2 of the block)`. One: 16-byte units in 128 KiB
/// blocks (group 1), so that the 16-byte packed row, which serves every mixed warp's requests
/// up to 256 B, installs half as many blocks as with class 16 B's 64 KiB (a burst of 2^20
/// mixed requests up to 32 B installed 567 blocks, 4.3 a multiprocessor one after another,
/// about 7 us of claim each; NOTES r46). `class_of` never returns them, and no class row
/// has them.
const PACKED_ONLY: [(u64, u32); 1] = [(16, MIN_BLOCK_SHIFT + 1)];
/// Entries of the class table: the `NUM_CLASSES` request classes, then `PACKED_ONLY`'s.
/// Kind words name any of them (a packed block's names its row's class).
pub const TABLE_CLASSES: usize = NUM_CLASSES + PACKED_ONLY.len();
/// The packed-only class of 16-byte units in 128 KiB blocks (`PACKED_ONLY`'s first).
pub const PACKED16_CLASS: usize = NUM_CLASSES;

/// Mantissa, exponent and log2 of the block of class-table entry `c` (see `TABLE_CLASSES`).
const fn table_geometry(c: usize) -> (u32, u32, u32) {
    if c < NUM_CLASSES {
        let (m, e) = mant_exp(c);
        (m, e, block_shift_for(derive_slice_bytes(c)))
    } else {
        let (s, shift) = PACKED_ONLY[c - NUM_CLASSES];
        (1, s.trailing_zeros(), shift)
    }
}

/// One entry per class-table entry (see [`ClassInfo`], `TABLE_CLASSES`).
const CLASS_TABLE: [ClassInfo; TABLE_CLASSES] = {
    let mut t = [ClassInfo { magic: 0, slice_bytes: 0, per_block: 0, shift: 0, group: 0 }; TABLE_CLASSES];
    let mut c = 0;
    while c < TABLE_CLASSES {
        let (m, e, shift) = table_geometry(c);
        let d = Divisor::new(m, e);
        let s = (m as u64) << e;
        let per = d.div(1 << shift);
        assert!(s <= u32::MAX as u64 && per <= u16::MAX as u64 && d.shift <= u8::MAX as u32);
        t[c] = ClassInfo {
            magic: d.magic,
            slice_bytes: s as u32,
            per_block: per as u16,
            shift: d.shift as u8,
            group: (shift - MIN_BLOCK_SHIFT) as u8,
        };
        c += 1;
    }
    t
};

/// Smallest power of two >= `size`, as its log2 (`size` >= 1).
#[inline(always)]
pub const fn ceil_log2(size: u64) -> u32 {
    if size <= 1 {
        0
    } else {
        64 - (size - 1).leading_zeros()
    }
}

/// Slices below this size take the smallest blocks (64 KiB, group 0: 4096 of 16 B, 2730 of
/// 24 B). With 4096 of 32 B to a block (128 KiB), one partly used 24-byte block per
/// multiprocessor was most of a burst's range: 1M x 24 B range / live 1.60-1.66 -> 1.33, mixed
/// sizes up to 64 B 3.20 -> 3.00, for 24 B allocating 9% slower (twice the installs; NOTES r36).
pub const SMALLEST_BLOCKS_BELOW: u64 = 32;

/// log2 of the block size for slices of `s` bytes: 4096 of the largest size of their
/// doubling (`1 << ceil_log2(s)`), at most `BLOCK_TARGET_BYTES`, and at least four of them;
/// the smallest for slices below `SMALLEST_BLOCKS_BELOW`.
#[inline(always)]
const fn block_shift_for(s: u64) -> u32 {
    let k = ceil_log2(s);
    let target = BLOCK_TARGET_BYTES.trailing_zeros();
    let small = if s < SMALLEST_BLOCKS_BELOW { MIN_BLOCK_SHIFT } else { k + 12 };
    let large = if k + 2 > target { k + 2 } else { target };
    if small < large {
        small
    } else {
        large
    }
}

/// The group (segment format) of class `c`: its block size (see the module docs).
#[inline(always)]
pub const fn group_of(c: usize) -> usize {
    CLASS_TABLE[c].group as usize
}

/// log2 of the block size of group `g`.
#[inline(always)]
pub const fn group_block_shift(g: usize) -> u32 {
    MIN_BLOCK_SHIFT + g as u32
}

/// Bytes of a block of group `g`.
#[inline(always)]
pub const fn group_block_bytes(g: usize) -> u64 {
    1 << group_block_shift(g)
}

/// Blocks in a segment of group `g` (they tile it).
#[inline(always)]
pub const fn group_blocks_per_segment(g: usize) -> u32 {
    1 << (SEGMENT_BYTES.trailing_zeros() - group_block_shift(g))
}

/// Slices in a block of class `c`: floor(block / slice).
#[inline(always)]
pub const fn slices_per_block(c: usize) -> u32 {
    CLASS_TABLE[c].per_block as u32
}

/// `ceil(2^32 / slices_per_block(c))` for every class-table entry: `div_per_block` multiplies
/// by it.
const PER_BLOCK_RECIPROCALS: [u64; TABLE_CLASSES] = {
    let mut t = [0u64; TABLE_CLASSES];
    let mut c = 0;
    while c < TABLE_CLASSES {
        t[c] = (1u64 << 32).div_ceil(slices_per_block(c) as u64);
        c += 1;
    }
    t
};

/// Largest `x` that `div_per_block` divides exactly (beyond any slice index of a run).
pub const PER_BLOCK_DIVIDEND_LIMIT: u32 = 1 << 19;

/// `x / slices_per_block(c)` for `x < PER_BLOCK_DIVIDEND_LIMIT` (a slice index in a slot's
/// run of blocks), with no division by a variable: a multiply-high by a reciprocal from a
/// table. Exact: with `d = slices_per_block(c)` and `M = (2^32 + t) / d` (`0 <= t < d`),
/// `x * M / 2^32 = x / d + x * t / (d * 2^32)`, and the second term is below `1 / d` while
/// `x * t < 2^32` (`x < 2^19`, `t < d <= 2^13`), so it cannot carry the fraction of `x / d`
/// (at most `(d - 1) / d`) past the next integer. (The tests check every index of every
/// class.)
#[inline(always)]
pub const fn div_per_block(c: usize, x: u32) -> u32 {
    ((x as u64 * PER_BLOCK_RECIPROCALS[c]) >> 32) as u32
}

/// Bytes of a block of class `c` (its group's).
#[inline(always)]
pub const fn block_bytes(c: usize) -> u64 {
    group_block_bytes(group_of(c))
}

/// Blocks in a segment of class `c`'s group.
#[inline(always)]
pub const fn blocks_per_segment(c: usize) -> u32 {
    group_blocks_per_segment(group_of(c))
}

/// Largest odd part of a class size: `1 << (FIRST_FINE_SUB_CLASS_BITS + 1)` - 1 (31, of the
/// 7936-byte class).
const MAX_ODD: u64 = (1 << (FIRST_FINE_SUB_CLASS_BITS + 1)) - 1;

/// Largest dividend a [`Divisor`] divides exactly: `(x >> shift) * (t <= MAX_ODD) < 2^32` (see
/// `Divisor::div`). Offsets in a segment (< 2^24) are well below it.
pub const DIVIDEND_LIMIT: u64 = 1 << (32 - (FIRST_FINE_SUB_CLASS_BITS + 1));
const _: () = assert!(MAX_ODD * DIVIDEND_LIMIT <= 1 << 32);

/// Division by `odd << shift` (odd up to `MAX_ODD`) without a divide instruction: a shift,
/// then a multiply-high by `magic = ceil(2^32 / odd)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    pub shift: u32,
    pub magic: u64,
}

impl Divisor {
    /// The divisor `m << e` (`m` >= 1 with an odd part of at most `MAX_ODD`). For the class
    /// table, built at compile time: the division here never runs on the device.
    #[inline(always)]
    pub const fn new(m: u32, e: u32) -> Self {
        let tz = m.trailing_zeros();
        let odd = (m >> tz) as u64;
        assert!(odd <= MAX_ODD, "class sizes have an odd part of at most MAX_ODD");
        Self { shift: e + tz, magic: (1u64 << 32).div_ceil(odd) }
    }

    /// The divisor's value.
    pub const fn value(self) -> u64 {
        let odd = if self.magic == 1 << 32 { 1 } else { ((1u64 << 32) / self.magic) + 1 };
        odd << self.shift
    }

    /// `x / divisor` for `x < DIVIDEND_LIMIT`. Proof: with `y = x >> shift`,
    /// `floor(y / odd) = floor(x / divisor)`; `magic = (2^32 + t) / odd` with `0 <= t < odd`, so
    /// `y * magic / 2^32 = y / odd + y * t / (odd * 2^32)`; writing `y = q * odd + rho`
    /// (`rho <= odd - 1`), that is `q + (rho + y * t / 2^32) / odd`, whose floor is `q` while
    /// `y * t < 2^32`: true for `y < DIVIDEND_LIMIT`, `t < odd <= MAX_ODD`. (The tests check
    /// every offset in a segment for every class.)
    #[inline(always)]
    pub const fn div(self, x: u64) -> u64 {
        ((x >> self.shift) * self.magic) >> 32
    }
}

/// Bytes of the blocks that runs of whole blocks are made of.
pub const RUN_BLOCK_BYTES: u64 = 256 << 10;
/// The group whose blocks (256 KiB, 64 to a segment) serve runs of whole blocks, for
/// requests above `MAX_SLICE_BYTES` up to a segment, and the tails of multi-segment runs.
pub const RUN_GROUP: usize = (RUN_BLOCK_BYTES.trailing_zeros() - MIN_BLOCK_SHIFT) as usize;

/// The group whose blocks (64 KiB, the smallest) serve runs of whole blocks for requests of
/// `heap::UNIT_RUN_MIN` bytes up to `MAX_SLICE_BYTES` (see `heap::takes_unit_run`).
pub const UNIT_RUN_GROUP: usize = 0;
/// The groups whose blocks serve runs of whole blocks, one slot row each (see
/// `slice::run_row`): a run row's current "block" is a whole segment of the group, and a run is
/// taken from it with one atomic, as slices are taken from a block.
pub const RUN_GROUPS: [usize; 2] = [UNIT_RUN_GROUP, RUN_GROUP];

/// Blocks of `RUN_GROUP` in a run for `size` bytes (`MAX_SLICE_BYTES < size`, up to the heap).
#[inline(always)]
pub const fn block_run_len(size: u64) -> u32 {
    ((size + RUN_BLOCK_BYTES - 1) >> RUN_BLOCK_BYTES.trailing_zeros()) as u32
}

/// Division by `slice_bytes(c)`.
#[inline(always)]
pub const fn slice_divisor(c: usize) -> Divisor {
    let e = &CLASS_TABLE[c];
    Divisor { shift: e.shift as u32, magic: e.magic }
}

const fn check_table() {
    let mut c = 0;
    while c < NUM_CLASSES {
        let s = slice_bytes(c);
        assert!(s == derive_slice_bytes(c));
        let (m, e) = mant_exp(c);
        let d = Divisor::new(m, e);
        assert!(slice_divisor(c).shift == d.shift && slice_divisor(c).magic == d.magic);
        assert!(
            s.is_multiple_of(16) || (s.is_multiple_of(8) && s <= 128),
            "16-byte multiples, or 8 below 128 B"
        );
        assert!(
            s.is_multiple_of(16) || c == 0 || slice_bytes(c - 1) == s - 8,
            "an odd multiple of 8 follows its 8 below"
        );
        assert!(class_of(s) == c, "a class's own size maps to it");
        assert!(c == 0 || class_of(slice_bytes(c - 1) + 1) == c);
        assert!(slice_divisor(c).value() == s);
        let g = group_of(c);
        assert!(group_block_shift(g) == block_shift_for(s), "a group is a block size");
        assert!(c == 0 || group_of(c - 1) <= g, "groups follow the classes");
        assert!(slices_per_block(c) as u64 == block_bytes(c) / s);
        assert!(slices_per_block(c) >= 4 && slices_per_block(c) <= MAX_SLICES_PER_BLOCK);
        assert!(MAX_SLICES_PER_BLOCK as u64 * PER_BLOCK_DIVIDEND_LIMIT as u64 <= 1 << 32);
        c += 1;
    }
    let mut g = 0;
    while g < NUM_GROUPS {
        let n = group_blocks_per_segment(g);
        assert!(n >= 1 && n <= MAX_BLOCKS_PER_SEGMENT);
        assert!(n as u64 * group_block_bytes(g) == SEGMENT_BYTES);
        g += 1;
    }
    // The packed-only entries: powers of two (packed units are shifts) of at least 16 bytes,
    // so that a block has at most one unit per 16-byte bound bit (`layout::BOUND_BITS_PER_UNIT`
    // per 64 KiB; asserted there for every packed class), in a group's block size.
    while c < TABLE_CLASSES {
        let s = slice_bytes(c);
        assert!(s.is_power_of_two() && s >= 1 << MIN_SLICE_SHIFT && slice_divisor(c).value() == s);
        assert!(group_of(c) < NUM_GROUPS && slices_per_block(c) as u64 == block_bytes(c) / s);
        assert!(slices_per_block(c) <= MAX_SLICES_PER_BLOCK);
        c += 1;
    }
    assert!(slice_bytes(NUM_CLASSES - 1) == MAX_CLASS_BYTES);
    assert!(group_blocks_per_segment(0) == MAX_BLOCKS_PER_SEGMENT);
    // Runs: 256 KiB blocks tile a segment, and a run of them is less than 256 KiB over its
    // size, at most 25% above MAX_SLICE_BYTES.
    assert!(group_block_bytes(RUN_GROUP) == RUN_BLOCK_BYTES);
}
const _: () = check_table();
const _: () = assert!(RUN_BLOCK_BYTES * 4 <= MAX_SLICE_BYTES, "runs of blocks are within 25%");

/// Classes whose blocks serve packed allocations (`malloc_packed`), one slot row each: their
/// slice size is the packing unit (16, 64 or 256 bytes) of a request's band
/// (`heap::packed_band`), and a block serves many warps whatever their sizes. The 16-byte
/// band's is the packed-only `PACKED16_CLASS` (128 KiB blocks, not class 16 B's 64 KiB).
pub const PACKED_CLASSES: [usize; 3] = [PACKED16_CLASS, class_of(64), class_of(256)];

/// Most slices a block of a "mask class" holds: one bit each in a 64-bit free mask.
pub const MASK_MAX_SLICES: u32 = 64;

/// Whether class `c` keeps a free mask per block (see `block::Blocks::free_mask`) instead of a
/// free count: its blocks hold at most `MASK_MAX_SLICES` slices (16 KiB and up), so that a
/// block whose slices are partly free can hand those out again (`slice::Slots::take_partial`).
/// A block of many small slices empties often enough under churn to come back whole; one of
/// 4..64 slices rarely does (at 70% live, retired blocks of these classes held about three
/// times their live bytes on the CPU model, NOTES r30).
#[inline(always)]
pub const fn is_mask_class(c: usize) -> bool {
    // Not the packed-only entries past the request classes (`TABLE_CLASSES`).
    c >= MASK_CLASS0 && c < NUM_CLASSES
}

/// The first mask class (see `is_mask_class`): every class from it up has at most
/// `MASK_MAX_SLICES` slices per block, every class below more.
pub const MASK_CLASS0: usize = {
    let mut c = 0;
    while slices_per_block(c) > MASK_MAX_SLICES {
        c += 1;
    }
    c
};
/// Mask classes, one partial-block index each.
pub const MASK_CLASSES: usize = NUM_CLASSES - MASK_CLASS0;
/// Ids per segment in a mask class's partial-block index (`block::block_index` of its
/// blocks): the most blocks a segment of a mask class's group holds.
pub const PARTIAL_IDS_PER_SEGMENT: u32 = group_blocks_per_segment(group_of(MASK_CLASS0));

const _: () = {
    let mut c = MASK_CLASS0;
    while c < NUM_CLASSES {
        assert!(slices_per_block(c) <= MASK_MAX_SLICES, "every class from MASK_CLASS0 up");
        assert!(group_blocks_per_segment(group_of(c)) <= PARTIAL_IDS_PER_SEGMENT);
        c += 1;
    }
    let mut i = 0;
    while i < PACKED_CLASSES.len() {
        assert!(!is_mask_class(PACKED_CLASSES[i]), "packed blocks count their frees");
        i += 1;
    }
};
