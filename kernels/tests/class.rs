//! The size-class table and its reciprocal divisions, checked exhaustively.
#![cfg(not(loom))]

use veballoc_kernels::class::{
    align_of_request, block_bytes, block_run_len, blocks_per_segment, class_of, group_block_bytes,
    group_blocks_per_segment, group_of, slice_bytes, slice_divisor, slices_per_block, warp_class,
    MAX_BLOCKS_PER_SEGMENT, MAX_CLASS_BYTES, MAX_SLICES_PER_BLOCK, NUM_CLASSES, NUM_GROUPS, RUN_BLOCK_BYTES,
    RUN_GROUP, SMALLEST_BLOCKS_BELOW, TABLE_CLASSES, UNIT_RUN_GROUP,
};
use veballoc_kernels::heap::{fallback_last, takes_unit_run, UNIT_RUN_EXACT_MIN, UNIT_RUN_MIN};
use veballoc_kernels::SEGMENT_BYTES;

/// The smallest class holding `size`, found by a linear search (the reference).
fn smallest_class(size: u64) -> usize {
    (0..NUM_CLASSES).find(|&c| slice_bytes(c) >= size).expect("size within the table")
}

#[test]
fn class_sizes_are_increasing_16_byte_multiples() {
    assert_eq!((NUM_CLASSES, NUM_GROUPS), (109, 7), "as docs/architecture.md says");
    assert_eq!(slice_bytes(0), 16);
    assert_eq!(slice_bytes(NUM_CLASSES - 1), MAX_CLASS_BYTES);
    let first: Vec<u64> = (0..25).map(slice_bytes).collect();
    assert_eq!(
        first,
        [
            16, 24, 32, 48, 64, 72, 80, 88, 96, 104, 112, 120, 128, 144, 160, 176, 192, 208, 224, 240, 256,
            320, 384, 448, 512
        ]
    );
    // A warp of mixed sizes takes the band's even classes: the four per doubling of before.
    let coarse: Vec<u64> = (4..=20).map(|c| slice_bytes(warp_class(c, false))).collect();
    assert_eq!(coarse, [64, 80, 80, 96, 96, 112, 112, 128, 128, 160, 160, 192, 192, 224, 224, 256, 256]);
    assert!((0..NUM_CLASSES).all(|c| warp_class(c, true) == c));
    let fine: Vec<u64> = (class_of(4096)..class_of(4096) + 19).map(slice_bytes).collect();
    let sixteenths: Vec<u64> = (16..=32).map(|m| m << 8).collect();
    assert_eq!(fine[..17], sixteenths[..], "sixteen classes from 4 KiB to 8 KiB");
    assert_eq!(fine[17..], [9216, 10240], "eight per doubling above");
    for c in 1..NUM_CLASSES {
        assert!(slice_bytes(c) > slice_bytes(c - 1));
        // Every class is a multiple of 16 (16-byte alignment) but 24, 72, 88, 104 and 120 B,
        // of 8.
        let align = if [24, 72, 88, 104, 120].contains(&slice_bytes(c)) { 8 } else { 16 };
        assert_eq!(slice_bytes(c) % align, 0);
        assert_eq!(align_of_request(slice_bytes(c)), align);
    }
    // What `malloc` promises is enough for any type of the size asked: a type's size is a
    // multiple of its alignment, so a request needs at most its size's largest power-of-two
    // factor (up to 16); the slices of its class, at any warp, are aligned to that.
    for size in 1..=4096u64 {
        let need = (1u64 << size.trailing_zeros()).min(16);
        assert!(align_of_request(size) >= need, "size {size}");
        for uniform in [false, true] {
            let s = slice_bytes(warp_class(class_of(size), uniform));
            assert!(s.is_multiple_of(align_of_request(size)), "size {size}: slice {s}");
        }
    }
}

/// Every size from 1 byte to the largest class maps to the smallest class that holds it, and
/// the waste bounds hold: within 16 bytes below 64 B, at most 12.5% up to 256 B (25% for a
/// lane of a mixed warp), at most 25% up to 4 KiB, at most 6.25%
/// up to 8 KiB, at most 12.5% above. Exhaustive up to the largest class (1 MiB).
#[test]
fn every_size_gets_the_smallest_class_and_little_waste() {
    let check = |size: u64| {
        let c = class_of(size);
        assert_eq!(c, smallest_class(size), "size {size}");
        let got = slice_bytes(c);
        assert!(got >= size, "size {size} got {got}");
        if size < 64 {
            assert!(got - size < 16, "size {size} got {got}: within 16 bytes");
        } else if size <= 256 {
            assert!(got * 8 <= size * 9, "size {size} got {got}: at most 12.5% more");
            // A lane of a warp of mixed sizes takes the band's even class: at most 25%.
            let coarse = slice_bytes(warp_class(c, false));
            assert!(
                coarse >= got && coarse * 4 <= size * 5 && coarse.is_multiple_of(16),
                "size {size}: {coarse}"
            );
        } else if size <= 4096 {
            assert!(got * 4 <= size * 5, "size {size} got {got}: at most 25% more");
        } else if size <= 8192 {
            assert!(got * 16 <= size * 17, "size {size} got {got}: at most 6.25% more");
        } else {
            assert!(got * 8 <= size * 9, "size {size} got {got}: at most 12.5% more");
        }
    };
    for size in 1..=MAX_CLASS_BYTES {
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
    check(MAX_CLASS_BYTES);
}

/// A request without room in its class may take a slice up to the smallest class holding
/// four of its class's slices (two doublings: 16 classes from 64 to 256 B, 8 from there to
/// 1 KiB, 11-24 from there to 8 KiB through the sixteen classes from 4 to 8 KiB, 16 above),
/// and below 64 B at least the first class of the 1 MiB group (`FALLBACK_FLOOR`, 144 B),
/// never past the largest class.
#[test]
fn fallback_spans_two_doublings() {
    let top = NUM_CLASSES - 1;
    for c in 0..NUM_CLASSES {
        let last = fallback_last(c);
        assert!(last >= (c + 8).min(top), "class {c}: at least 8 classes up");
        assert!(slice_bytes(last) >= (4 * slice_bytes(c)).min(MAX_CLASS_BYTES), "class {c}");
        assert!(last <= top);
        if slice_bytes(c) >= 64 {
            // The smallest class holding four slices (itself four slices but in the
            // sixteenths from 4 KiB to 8 KiB, whose odd multiples of 256 B are no class four
            // times over).
            assert_eq!(last, class_of((4 * slice_bytes(c)).min(MAX_CLASS_BYTES)), "class {c}");
        }
    }
    assert_eq!(slice_bytes(fallback_last(class_of(24))), 144, "the first class of 1 MiB blocks");
    assert_eq!(slice_bytes(fallback_last(class_of(32))), 144);
    assert_eq!(slice_bytes(fallback_last(class_of(5000))), 20480);
    assert_eq!(slice_bytes(fallback_last(class_of(4097))), 18432, "4 x 4352 B rounds up to a class");
    assert_eq!(fallback_last(class_of(9000)) - class_of(9000), 16, "two doublings of eight");
}

#[test]
fn block_geometry() {
    for g in 0..NUM_GROUPS {
        let (b, n) = (group_block_bytes(g), group_blocks_per_segment(g));
        assert!(b.is_power_of_two() && b >= 64 << 10, "group {g}");
        assert_eq!(n as u64 * b, SEGMENT_BYTES, "group {g}: blocks tile a segment");
        assert!((1..=MAX_BLOCKS_PER_SEGMENT).contains(&n));
    }
    for c in 0..NUM_CLASSES {
        let (s, b, n, g) = (slice_bytes(c), block_bytes(c), slices_per_block(c), group_of(c));
        // A group is a block size: 4096 of the largest size of the class's doubling, at
        // most 1 MiB, at least four of them; the smallest (64 KiB) below 32 B.
        let top = s.next_power_of_two();
        let want =
            if s < SMALLEST_BLOCKS_BELOW { 64 << 10 } else { (4096 * top).min((1 << 20).max(4 * top)) };
        assert_eq!(b, want, "class {c} in group {g}");
        assert_eq!(b, group_block_bytes(g));
        assert_eq!(blocks_per_segment(c), group_blocks_per_segment(g));
        assert_eq!(n as u64, b / s, "class {c}");
        assert!((4..=MAX_SLICES_PER_BLOCK).contains(&n), "class {c}: {n} slices");
        // What a block leaves past its last slice: less than a slice, at most 1/16 of the block
        // while blocks hold 32 slices or more, at most 1/8 down to six slices. Below, malloc
        // serves the sizes with runs of 64 KiB blocks where a slice's share of its block is
        // larger than such a run (`takes_unit_run`).
        let left = b - n as u64 * s;
        assert!(left < s);
        if n >= 6 {
            assert!(left * if n >= 32 { 16 } else { 8 } <= b, "class {c}: {left} of {b} left");
        }
    }
    // From 96 KiB to 256 KiB a request takes a run of 64 KiB blocks or a slice, whichever
    // takes less (a slice takes its share of its block), and a run above. What it takes is at
    // most a fifth more than it asked up to 96 KiB, a third above (just above 192 KiB: a run
    // of four blocks, or a 208 KiB slice, four to a 1 MiB block).
    let unit = group_block_bytes(UNIT_RUN_GROUP);
    let mut size = 4096;
    while size <= MAX_CLASS_BYTES {
        let c = class_of(size);
        let run = size.div_ceil(unit) * unit;
        let share = block_bytes(c) / slices_per_block(c) as u64;
        let took = if takes_unit_run(size) { run } else { share };
        if size > UNIT_RUN_MIN {
            assert!(takes_unit_run(size));
        } else if size > UNIT_RUN_EXACT_MIN {
            assert_eq!(took, run.min(share), "size {size}");
        } else {
            assert!(!takes_unit_run(size) && took * 5 <= size * 6, "size {size}: {took}");
        }
        assert!(took * 3 <= size * 4, "size {size}: {took}");
        size += 61;
    }
    // 24 B shares group 0's 64 KiB blocks with 16 B (2730 slices a block), where 4096 of
    // 32 B to a block left one 128 KiB block per multiprocessor partly used (NOTES r36).
    assert_eq!(group_of(class_of(24)), group_of(class_of(16)));
    assert_eq!((block_bytes(class_of(24)), slices_per_block(class_of(24))), (64 << 10, 2730));
    assert_eq!(block_bytes(class_of(32)), 128 << 10);
    // Every class from 144 B to 256 KiB shares the group of 1 MiB blocks (one tree, and
    // segments any of them can use).
    let g = group_of(class_of(144));
    assert_eq!(group_of(class_of(144)), group_of(class_of(160)));
    assert_eq!(group_block_bytes(g), 1 << 20);
    assert!((class_of(160)..=class_of(256 << 10)).all(|c| group_of(c) == g));
    assert!(group_of(class_of(128)) < g);
    assert!((0..g).all(|h| group_block_bytes(h) < 1 << 20));
}

/// The multiply-high division equals true division for every offset in a segment (which
/// covers every offset in a block), for every class-table entry's slice size (the request
/// classes and the packed-only ones: 110 * 2^24 divisions).
#[test]
fn reciprocal_divisions_are_exact_for_every_offset() {
    for c in 0..TABLE_CLASSES {
        let (d, div) = (slice_bytes(c), slice_divisor(c));
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

/// Above the largest class, runs of 256 KiB blocks: never short, at most 25% over, for every
/// size up to a segment in steps of 16 bytes and at every block boundary.
#[test]
fn block_runs_waste_at_most_a_quarter() {
    let block = group_block_bytes(RUN_GROUP);
    assert_eq!(block, RUN_BLOCK_BYTES);
    let check = |size: u64| {
        let k = block_run_len(size) as u64;
        assert!(k * block >= size && (k - 1) * block < size, "size {size}: {k} blocks");
        assert!(k * block * 4 <= size * 5, "size {size}: {k} blocks, more than 25% over");
        assert!(k <= group_blocks_per_segment(RUN_GROUP) as u64);
    };
    let mut size = MAX_CLASS_BYTES + 1;
    while size <= SEGMENT_BYTES {
        check(size);
        size += 16;
    }
    for k in 5..=64u64 {
        for size in [k * block - 1, k * block, k * block + 1] {
            if size > MAX_CLASS_BYTES && size <= SEGMENT_BYTES {
                check(size);
            }
        }
    }
}

/// The division of a slice index in a slot's run by the slices per block (a multiply-high by
/// a reciprocal from a table) equals true division for every index below its limit, for every
/// class-table entry.
#[test]
fn run_indices_divide_exactly_by_slices_per_block() {
    use veballoc_kernels::class::{div_per_block, PER_BLOCK_DIVIDEND_LIMIT};
    for c in 0..TABLE_CLASSES {
        let d = slices_per_block(c);
        let (mut q, mut next) = (0u32, d);
        for x in 0..PER_BLOCK_DIVIDEND_LIMIT {
            if x == next {
                (q, next) = (q + 1, next + d);
            }
            assert_eq!(div_per_block(c, x), q, "class {c}: {x} / {d}");
        }
    }
}

/// Which rows' install waiters poll fast (`slice::install_max_sleep`, used by `take_in_row` for
/// class and packed rows): in an 8 GiB heap with the default shards, the rows of 16 to 64 B
/// (slots shared by at most three of 132 multiprocessors) and none from 72 B up, whose slots
/// more multiprocessors share.
#[test]
fn install_waiters_poll_fast_only_where_few_share_a_slot() {
    use veballoc_kernels::class::PACKED_CLASSES;
    use veballoc_kernels::heap::DEFAULT_SHARDS;
    use veballoc_kernels::layout::{HeapLayout, RUN_ROW0};
    use veballoc_kernels::slice::{install_max_sleep, FAST_POLL_MAX_SLEEP_NS};
    let layout = HeapLayout::new(HeapLayout::segments_for_bytes(8 << 30), DEFAULT_SHARDS, false);
    let mut fast_rows = 0;
    for row in 0..RUN_ROW0 {
        let c = if row < NUM_CLASSES { row } else { PACKED_CLASSES[row - NUM_CLASSES] };
        let fast = install_max_sleep(layout.row_shards(row)) == FAST_POLL_MAX_SLEEP_NS;
        assert_eq!(fast, slice_bytes(c) <= 64, "row {row} ({} B): fast polling {fast}", slice_bytes(c));
        if fast {
            assert!(132u32.div_ceil(layout.row_shards(row)) <= 3, "row {row}");
            fast_rows += 1;
        }
    }
    // 16, 24, 32, 48 and 64 B (the band's odd classes among them), and the 16 and 64 B packed rows.
    assert!(fast_rows >= 7, "{fast_rows} rows poll fast");
    const { assert!(FAST_POLL_MAX_SLEEP_NS < veballoc_kernels::BACKOFF_MAX_NS) };
}

/// Only the odd classes of the eight-per-doubling band (72 .. 240 B) move up for a lane of a
/// mixed warp: every other class stays, so a mixed warp's lane never gets more than 25% over
/// its size (the first class above 256 B, 320 B, taking 384 B would be 49% over 257 B).
#[test]
fn mixed_warps_move_up_only_in_the_eight_per_doubling_band() {
    for c in 0..NUM_CLASSES {
        let s = slice_bytes(c);
        let moves = [72, 88, 104, 120, 144, 176, 208, 240].contains(&s);
        assert_eq!(warp_class(c, false), if moves { c + 1 } else { c }, "class {c} ({s} B)");
    }
    for size in 65..=8192u64 {
        let coarse = slice_bytes(warp_class(class_of(size), false));
        assert!(coarse * 4 <= size * 5, "size {size}: {coarse}");
    }
}

/// The slots each row uses in an 8 GiB heap with the default shards (`row_shard_log2`): 32
/// for rows of 512 KiB blocks, half a share (8) for rows of 1 MiB blocks and half of that
/// again (4) for the classes above 4 KiB; one slot where a share holds one block.
#[test]
fn row_slots_follow_the_pin_budget() {
    use veballoc_kernels::class::FINE_CLASS0;
    use veballoc_kernels::heap::DEFAULT_SHARDS;
    use veballoc_kernels::layout::HeapLayout;
    let layout = HeapLayout::new(HeapLayout::segments_for_bytes(8 << 30), DEFAULT_SHARDS, false);
    let slots = |size: u64| layout.row_shards(class_of(size));
    assert_eq!(block_bytes(class_of(128)), 512 << 10);
    assert_eq!(slots(128), 32, "512 KiB blocks: a full share");
    assert_eq!(block_bytes(class_of(144)), 1 << 20);
    assert_eq!(slots(144), 8, "1 MiB blocks: half a share");
    assert_eq!(slots(4096), 8, "the last class of four per doubling");
    assert_eq!(class_of(4097), FINE_CLASS0);
    assert_eq!(slots(4097), 4, "the first class above 4 KiB: a quarter share");
    assert_eq!(slots(MAX_CLASS_BYTES), 1, "a 4 MiB block is the whole quarter share");
    // A packed row has its unit's class row's slots: the 16-byte one's 128 KiB blocks as many
    // as class 16 B's 64 KiB (one a multiprocessor), not half.
    use veballoc_kernels::class::{PACKED16_CLASS, PACKED_CLASSES};
    use veballoc_kernels::slice::packed_row;
    assert_eq!((PACKED_CLASSES[0], block_bytes(PACKED16_CLASS)), (PACKED16_CLASS, 128 << 10));
    assert_eq!(layout.row_shards(packed_row(0)), slots(16));
    assert_eq!(slots(16), 256);
    for (i, &c) in PACKED_CLASSES.iter().enumerate().skip(1) {
        assert_eq!(layout.row_shards(packed_row(i)), layout.row_shards(c), "packed row {i}");
    }
}

/// The largest heap `checked_segments_for_bytes` and `try_new` accept is `MAX_SEGMENTS`
/// segments, exactly; one more segment is refused.
#[test]
fn the_largest_heap_is_accepted_and_one_segment_more_refused() {
    use veballoc_kernels::layout::HeapLayout;
    use veballoc_kernels::SEGMENT_SHIFT;
    let max = HeapLayout::MAX_SEGMENTS;
    let bytes = (max as u64) << SEGMENT_SHIFT;
    assert_eq!(HeapLayout::checked_segments_for_bytes(bytes), Some(max));
    assert_eq!(HeapLayout::checked_segments_for_bytes(bytes + SEGMENT_BYTES - 1), Some(max));
    assert_eq!(HeapLayout::checked_segments_for_bytes(bytes + SEGMENT_BYTES), None);
    assert_eq!(HeapLayout::checked_segments_for_bytes(SEGMENT_BYTES - 1), None);
    assert!(HeapLayout::try_new(max, 1, false).is_some());
    assert!(HeapLayout::try_new(max + 1, 1, false).is_none());
}
