//! The size-class table and its reciprocal divisions, checked exhaustively.
#![cfg(not(loom))]

use veballoc_kernels::class::{
    block_bytes, block_divisor, block_run_len, blocks_per_segment, class_of, is_slice_class, slice_bytes,
    slice_divisor, slices_per_block, MAX_BLOCKS_PER_SEGMENT, MAX_CLASS_BYTES, MAX_SLICES_PER_BLOCK,
    MAX_SLICE_BYTES, NUM_CLASSES, RUN_CLASS,
};
use veballoc_kernels::SEGMENT_BYTES;

/// The smallest class holding `size`, found by a linear search (the reference).
fn smallest_class(size: u64) -> usize {
    (0..NUM_CLASSES).find(|&c| slice_bytes(c) >= size).expect("size within the table")
}

#[test]
fn class_sizes_are_increasing_16_byte_multiples() {
    assert_eq!(NUM_CLASSES, 68, "as docs/architecture.md says");
    assert_eq!(slice_bytes(0), 16);
    assert_eq!(slice_bytes(NUM_CLASSES - 1), MAX_CLASS_BYTES);
    let first: Vec<u64> = (0..12).map(slice_bytes).collect();
    assert_eq!(first, [16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256]);
    for c in 1..NUM_CLASSES {
        assert!(slice_bytes(c) > slice_bytes(c - 1));
        assert_eq!(slice_bytes(c) % 16, 0);
    }
}

/// Every size from 1 byte to the largest class maps to the smallest class that holds it, and
/// the waste bounds hold: within 16 bytes below 64 B, at most 25% from 64 B up. Exhaustive up
/// to 1 MiB + 1 MiB, then every size next to a class boundary and a dense stride between.
#[test]
fn every_size_gets_the_smallest_class_and_little_waste() {
    let check = |size: u64| {
        let c = class_of(size);
        assert_eq!(c, smallest_class(size), "size {size}");
        let got = slice_bytes(c);
        assert!(got >= size, "size {size} got {got}");
        if size < 64 {
            assert!(got - size < 16, "size {size} got {got}: within 16 bytes");
        } else {
            assert!(got * 4 <= size * 5, "size {size} got {got}: at most 25% more");
        }
    };
    for size in 1..=2 * MAX_SLICE_BYTES {
        check(size);
    }
    for c in 0..NUM_CLASSES {
        let s = slice_bytes(c);
        for size in [s - 1, s, s + 1] {
            if (1..=MAX_CLASS_BYTES).contains(&size) {
                check(size);
            }
        }
    }
    let mut size = 2 * MAX_SLICE_BYTES;
    while size <= MAX_CLASS_BYTES {
        check(size);
        size += 97;
    }
    check(MAX_CLASS_BYTES);
}

#[test]
fn block_geometry() {
    for c in 0..NUM_CLASSES {
        let (s, b, n, bps) = (slice_bytes(c), block_bytes(c), slices_per_block(c), blocks_per_segment(c));
        assert!(n.is_power_of_two() && n <= MAX_SLICES_PER_BLOCK, "class {c}");
        assert_eq!(b, s * n as u64);
        assert_eq!(bps as u64, SEGMENT_BYTES / b);
        assert!((1..=MAX_BLOCKS_PER_SEGMENT).contains(&bps), "class {c}: {bps} blocks");
        if is_slice_class(c) {
            assert!(b <= 1 << 20, "class {c}: slice blocks stay within 1 MiB");
            // What the segment's end leaves unused: less than a block, at most 1/16.
            assert!((SEGMENT_BYTES - bps as u64 * b) * 16 <= SEGMENT_BYTES, "class {c}");
        } else {
            assert_eq!(n, 1, "classes above the slice path have one slice per block");
        }
        if s <= 256 {
            assert_eq!(n, MAX_SLICES_PER_BLOCK);
        }
    }
}

/// The multiply-high divisions equal true division for every offset in a segment, for every
/// class's slice and block size (2 * 72 * 2^24 divisions).
#[test]
fn reciprocal_divisions_are_exact_for_every_offset() {
    for c in 0..NUM_CLASSES {
        for (d, div) in [(slice_bytes(c), slice_divisor(c)), (block_bytes(c), block_divisor(c))] {
            assert_eq!(div.value(), d);
            // The true quotient, kept by counting (no hardware division in the loop).
            let (mut q_true, mut next) = (0u64, d);
            for x in 0..=SEGMENT_BYTES {
                if x == next {
                    (q_true, next) = (q_true + 1, next + d);
                }
                let q = div.div(x);
                if q != q_true {
                    panic!("class {c}: {x} / {d} gave {q}");
                }
            }
        }
    }
}

/// Above the largest class, runs of 1 MiB blocks: never short, at most 25% over, for every
/// size up to a segment in steps of 16 bytes and at every block boundary.
#[test]
fn block_runs_waste_at_most_a_quarter() {
    let block = block_bytes(RUN_CLASS);
    assert_eq!(block, 1 << 20);
    let check = |size: u64| {
        let k = block_run_len(size) as u64;
        assert!(k * block >= size && (k - 1) * block < size, "size {size}: {k} blocks");
        assert!(k * block * 4 <= size * 5, "size {size}: {k} blocks, more than 25% over");
        assert!(k <= blocks_per_segment(RUN_CLASS) as u64);
    };
    let mut size = MAX_CLASS_BYTES + 1;
    while size <= SEGMENT_BYTES {
        check(size);
        size += 16;
    }
    for k in 5..=16u64 {
        for size in [k * block - 1, k * block, k * block + 1] {
            if size > MAX_CLASS_BYTES && size <= SEGMENT_BYTES {
                check(size);
            }
        }
    }
}
