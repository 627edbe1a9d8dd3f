//! Size classes: the geometry of slices and blocks, with no heap state.
//!
//! Class sizes: 16, 32, 48, 64 bytes, then four per doubling (80, 96, 112, 128, 160, 192, 224,
//! 256, 320, ...) up to `MAX_CLASS_BYTES` (4 MiB), 68 classes: class `c >= 3` has slices of
//! `(4 + (c - 3) % 4) << (4 + (c - 3) / 4)` bytes. So a request of `size` bytes gets at most
//! `size + 15` bytes below 64 B and at most `1.25 * size` from 64 B up (the next class is at
//! most a quarter larger than the previous one, which is smaller than `size`).
//!
//! A block of class `c` holds `slices_per_block(c)` slices: 4096 up to 256-byte slices (blocks
//! of 64 KiB .. 1 MiB), then the largest power of two that keeps the block within
//! `BLOCK_TARGET_BYTES` (1 MiB), at least one. A segment holds
//! `blocks_per_segment(c) = floor(16 MiB / block_bytes(c))` blocks from its start; what is left
//! at its end (less than one block, at most 6.25% of the segment for slice classes) is unused.
//! Classes up to `MAX_SLICE_BYTES` (1 MiB) serve slices (the warp-coalesced path); larger
//! classes (up to `MAX_CLASS_BYTES`, 4 MiB), one slice per block, are handed out as whole
//! blocks. Requests above that and up to a segment take a run of `block_run_len(size)`
//! contiguous 1 MiB blocks of `RUN_CLASS` in one segment: less than 1 MiB (25% of 4 MiB) over.
//!
//! Every size here is `m << e` with an odd `m` of 1, 3, 5 or 7, so dividing by one is a shift
//! and a multiplication by a reciprocal of `m` ([`Divisor`]): `free` divides by no variable.

use crate::SEGMENT_BYTES;

/// log2 of the smallest slice (16 B): also the unit of the hand-out bitmap.
pub const MIN_SLICE_SHIFT: u32 = 4;
/// Classes of multiples of 16 bytes below the four-per-doubling ones: 16, 32, 48 (64 is the
/// first of the four-per-doubling scheme, class `LINEAR_CLASSES`).
pub const LINEAR_CLASSES: usize = 3;
/// log2 of the classes per doubling from 64 B up.
pub const SUB_CLASS_BITS: u32 = 2;
/// Largest class: 4 MiB (four blocks per segment).
pub const MAX_CLASS_BYTES: u64 = 4 << 20;
/// Number of size classes (16 B .. `MAX_CLASS_BYTES`).
pub const NUM_CLASSES: usize = class_of(MAX_CLASS_BYTES) + 1;
/// Largest request served by slices (the warp-coalesced path); the classes above it hand out
/// whole blocks of one slice.
pub const MAX_SLICE_BYTES: u64 = 1 << 20;
/// Most slices in a block (small classes).
pub const MAX_SLICES_PER_BLOCK: u32 = 4096;
/// Blocks of classes with more than 256-byte slices are at most this large, so that a
/// multiprocessor's current block holds little of a segment.
pub const BLOCK_TARGET_BYTES: u64 = 1 << 20;
/// Global block ids are `segment << BLOCK_ID_SHIFT | block in segment` for every class.
pub const BLOCK_ID_SHIFT: u32 = 8;
/// Bound on the blocks of a segment of any class (16-byte slices: 256 blocks of 64 KiB); the
/// stride of per-segment block metadata and of block ids.
pub const MAX_BLOCKS_PER_SEGMENT: u32 = 1 << BLOCK_ID_SHIFT;

/// The class of a request of `size` bytes (`1 <= size <= MAX_CLASS_BYTES`): the smallest class
/// whose slices hold it. O(1): the leading-zero count and the next two bits, no loop.
#[inline(always)]
pub const fn class_of(size: u64) -> usize {
    if size <= 64 {
        // 1..=16 -> 0, 17..=32 -> 1, 33..=48 -> 2, 49..=64 -> 3.
        let s = if size == 0 { 1 } else { size };
        ((s - 1) >> MIN_SLICE_SHIFT) as usize
    } else {
        // x >= 64 lies in [(4 + r) << (l - 2), (5 + r) << (l - 2)); the class above that
        // interval's start, (5 + r) << (l - 2), is class 4 * (l - 5) + r.
        let x = size - 1;
        let l = 63 - x.leading_zeros();
        let r = ((x >> (l - SUB_CLASS_BITS)) & 3) as u32;
        (4 * (l - 5) + r) as usize
    }
}

/// Mantissa and exponent of class `c`'s slice size: `slice_bytes(c) = m << e`, with `m` in
/// 1..=4 (classes 0..=3) or 4..=7.
#[inline(always)]
const fn mant_exp(c: usize) -> (u32, u32) {
    if c <= LINEAR_CLASSES {
        (c as u32 + 1, MIN_SLICE_SHIFT)
    } else {
        let k = (c - LINEAR_CLASSES) as u32;
        (4 + (k & 3), MIN_SLICE_SHIFT + (k >> SUB_CLASS_BITS))
    }
}

/// Bytes of one slice of class `c`.
#[inline(always)]
pub const fn slice_bytes(c: usize) -> u64 {
    let (m, e) = mant_exp(c);
    (m as u64) << e
}

/// Smallest power of two >= `size`, as its log2 (`size` >= 1).
#[inline(always)]
pub const fn ceil_log2(size: u64) -> u32 {
    if size <= 1 {
        0
    } else {
        64 - (size - 1).leading_zeros()
    }
}

/// log2 of the slices in a block of class `c`.
#[inline(always)]
pub const fn slices_per_block_shift(c: usize) -> u32 {
    let max = MAX_SLICES_PER_BLOCK.trailing_zeros();
    let target = BLOCK_TARGET_BYTES.trailing_zeros();
    let l = ceil_log2(slice_bytes(c));
    if l + max <= target {
        max
    } else {
        target.saturating_sub(l)
    }
}

/// Slices in a block of class `c` (a power of two, 1..=4096).
#[inline(always)]
pub const fn slices_per_block(c: usize) -> u32 {
    1 << slices_per_block_shift(c)
}

/// Bytes of one block of class `c`.
#[inline(always)]
pub const fn block_bytes(c: usize) -> u64 {
    slice_bytes(c) << slices_per_block_shift(c)
}

/// Blocks in a segment of class `c`: floor(16 MiB / block_bytes(c)), from the segment's start.
#[inline(always)]
pub const fn blocks_per_segment(c: usize) -> u32 {
    block_divisor(c).div(SEGMENT_BYTES) as u32
}

/// Whether class `c` serves slices (else its blocks, of one slice, are handed out whole).
#[inline(always)]
pub const fn is_slice_class(c: usize) -> bool {
    slice_bytes(c) <= MAX_SLICE_BYTES
}

/// Largest dividend a [`Divisor`] divides exactly: `(x >> shift) * (t < 8) < 2^32` (see
/// `Divisor::div`). Offsets in a segment (< 2^24) are well below it.
pub const DIVIDEND_LIMIT: u64 = 1 << 29;

/// Division by `odd << shift` (odd in 1, 3, 5, 7) without a divide instruction: a shift, then
/// a multiply-high by `magic = ceil(2^32 / odd)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    pub shift: u32,
    pub magic: u64,
}

impl Divisor {
    /// The divisor `m << e` (`m` >= 1 with an odd part of 1, 3, 5 or 7).
    #[inline(always)]
    pub const fn new(m: u32, e: u32) -> Self {
        let tz = m.trailing_zeros();
        let odd = m >> tz;
        // ceil(2^32 / odd), spelled out so that no division is left at run time.
        let magic = match odd {
            1 => 1 << 32,
            3 => 0x5555_5556,
            5 => 0x3333_3334,
            7 => 0x2492_4925,
            _ => panic!("class sizes have an odd part of 1, 3, 5 or 7"),
        };
        Self { shift: e + tz, magic }
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
    /// `y * t < 2^32`: true for `y < 2^29`, `t < 8`. (The tests check every offset in a
    /// segment for every class.)
    #[inline(always)]
    pub const fn div(self, x: u64) -> u64 {
        ((x >> self.shift) * self.magic) >> 32
    }
}

/// The class whose blocks (1 MiB, 16 to a segment) serve runs of whole blocks, for requests
/// above `MAX_CLASS_BYTES` up to a segment.
pub const RUN_CLASS: usize = class_of(BLOCK_TARGET_BYTES);

/// Blocks of `RUN_CLASS` in a run for `size` bytes (`MAX_CLASS_BYTES < size <= SEGMENT_BYTES`).
#[inline(always)]
pub const fn block_run_len(size: u64) -> u32 {
    ((size + BLOCK_TARGET_BYTES - 1) >> BLOCK_TARGET_BYTES.trailing_zeros()) as u32
}

/// Division by `slice_bytes(c)`.
#[inline(always)]
pub const fn slice_divisor(c: usize) -> Divisor {
    let (m, e) = mant_exp(c);
    Divisor::new(m, e)
}

/// Division by `block_bytes(c)`.
#[inline(always)]
pub const fn block_divisor(c: usize) -> Divisor {
    let (m, e) = mant_exp(c);
    Divisor::new(m, e + slices_per_block_shift(c))
}

const fn check_table() {
    let mut c = 0;
    while c < NUM_CLASSES {
        let s = slice_bytes(c);
        assert!(s.is_multiple_of(16), "slices are 16-byte multiples");
        assert!(class_of(s) == c, "a class's own size maps to it");
        assert!(c == 0 || class_of(slice_bytes(c - 1) + 1) == c);
        assert!(slice_divisor(c).value() == s);
        assert!(block_divisor(c).value() == block_bytes(c));
        assert!(blocks_per_segment(c) as u64 == SEGMENT_BYTES / block_bytes(c));
        assert!(blocks_per_segment(c) >= 1 && blocks_per_segment(c) <= MAX_BLOCKS_PER_SEGMENT);
        assert!(slices_per_block(c) <= MAX_SLICES_PER_BLOCK);
        c += 1;
    }
    assert!(slice_bytes(NUM_CLASSES - 1) == MAX_CLASS_BYTES);
    assert!(is_slice_class(class_of(MAX_SLICE_BYTES)) && !is_slice_class(class_of(MAX_SLICE_BYTES) + 1));
    assert!(blocks_per_segment(0) == MAX_BLOCKS_PER_SEGMENT);
    // Runs: 1 MiB blocks tile a segment, and a run of them is less than 1 MiB over its size,
    // at most 25% above MAX_CLASS_BYTES.
    assert!(block_bytes(RUN_CLASS) == BLOCK_TARGET_BYTES && BLOCK_TARGET_BYTES.is_power_of_two());
    assert!(blocks_per_segment(RUN_CLASS) as u64 * BLOCK_TARGET_BYTES == SEGMENT_BYTES);
    // Magic numbers: ceil(2^32 / odd).
    assert!(Divisor::new(3, 0).magic == (1u64 << 32).div_ceil(3));
    assert!(Divisor::new(5, 0).magic == (1u64 << 32).div_ceil(5));
    assert!(Divisor::new(7, 0).magic == (1u64 << 32).div_ceil(7));
}
const _: () = check_table();
const _: () = assert!(BLOCK_TARGET_BYTES * 4 <= MAX_CLASS_BYTES, "runs of 1 MiB blocks are within 25%");
