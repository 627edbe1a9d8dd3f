//! Blocks of the classes of at most 64 slices a block (`class::is_mask_class`: 16 KiB and up)
//! keep a free mask: their freed slices are handed out again while the block's other slices
//! are live (issue 9: such blocks came back only when every slice was free, and under churn
//! at 70% live they held about three times their live bytes). The validator runs after each
//! step.

mod common;

use common::take_slices;
use veballoc::kernels::arch::set_host_thread_index;
use veballoc::kernels::block::{block_bytes, class_of, slice_bytes, slices_per_block, NUM_CLASSES};
use veballoc::kernels::class::{is_mask_class, MASK_MAX_SLICES};
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::takes_unit_run;
use veballoc::kernels::DeviceHeap;

/// A mask class's request: 25 slices of 40960 bytes to a 1 MiB block.
const SIZE: u64 = 40_000;

fn heap() -> CpuHeap {
    CpuHeap::with_checks(4, 1, veballoc::kernels::CHECKS)
}

/// Slice blocks of class `c` and its live slices, by the validator.
fn blocks_and_live(h: &DeviceHeap, c: usize) -> (u64, u64) {
    let s = h.validate().expect("consistent");
    (s.slice_blocks[c], s.live_slices[c])
}

fn assert_empty(h: &DeviceHeap) {
    h.trim();
    let s = h.validate().expect("consistent");
    assert_eq!((s.bytes_in_use, s.blocks_in_use()), (0, 0), "{s:?}");
    assert_eq!(s.free_segments, h.layout().num_segments as u64, "{s:?}");
    assert_eq!((s.invalid_frees, s.double_frees), (0, 0), "{s:?}");
}

#[test]
fn mask_classes_are_those_of_at_most_64_slices_a_block() {
    for c in 0..NUM_CLASSES {
        assert_eq!(is_mask_class(c), slices_per_block(c) <= MASK_MAX_SLICES, "class {c}");
    }
    assert!(is_mask_class(class_of(16 << 10)));
    assert!(!is_mask_class(class_of((16 << 10) - 1024)));
    assert!(is_mask_class(class_of(SIZE)) && !takes_unit_run(SIZE));
}

/// Every other slice of a block freed: the next requests get exactly those slices back,
/// lowest first, and no block is claimed for them.
#[test]
fn freed_slices_of_a_live_block_are_handed_out_again() {
    let cpu = heap();
    let h = cpu.heap();
    set_host_thread_index(0);
    let c = class_of(SIZE);
    let per = slices_per_block(c) as usize;
    let ptrs: Vec<*mut u8> = (0..per).map(|_| h.malloc(SIZE)).collect();
    let base = ptrs[0] as u64;
    for (i, p) in ptrs.iter().enumerate() {
        assert_eq!(*p as u64, base + i as u64 * slice_bytes(c), "one block, in order");
    }
    // The last take installed the slot's next block.
    let (blocks, live) = blocks_and_live(h, c);
    assert_eq!((blocks, live), (2, per as u64));
    for p in ptrs.iter().step_by(2) {
        // SAFETY: the even slices came from the mallocs above (one each); each is freed once here
        // and not used until the heap hands it out again below.
        unsafe { h.free(*p) };
        h.validate().expect("consistent after a free");
    }
    let freed = per.div_ceil(2);
    assert_eq!(blocks_and_live(h, c), (2, (per - freed) as u64));
    for p in ptrs.iter().step_by(2) {
        let q = h.malloc(SIZE);
        assert_eq!(q, *p, "the lowest freed slice");
        h.validate().expect("consistent after a take");
    }
    assert_eq!(blocks_and_live(h, c), (2, per as u64), "no block claimed for them");
    // The slot's block is untouched: the next request takes its first slice.
    let next = h.malloc(SIZE);
    assert_eq!(next as u64, base + block_bytes(c), "the next block's first slice");
    for p in ptrs.into_iter().chain([next]) {
        // SAFETY: every slice is live again (the odd ones never freed, the even ones taken again
        // above) and so is `next`: each freed once, unused after.
        unsafe { h.free(p) };
    }
    assert_eq!(blocks_and_live(h, c).1, 0);
    assert_empty(h);
}

/// A retired slot gives back the slices its block did not hand out as free bits: the block
/// stays out (it has live slices) and its class hands them out before any other block's.
#[test]
fn a_retired_blocks_unhanded_slices_are_handed_out() {
    let cpu = heap();
    let h = cpu.heap();
    set_host_thread_index(0);
    let c = class_of(SIZE);
    let a: Vec<*mut u8> = (0..3).map(|_| h.malloc(SIZE)).collect();
    h.trim();
    assert_eq!(blocks_and_live(h, c), (1, 3), "the block stays out with its live slices");
    let b = h.malloc(SIZE);
    assert_eq!(b as u64, a[0] as u64 + 3 * slice_bytes(c), "its fourth slice, from its free bits");
    assert_eq!(blocks_and_live(h, c), (1, 4));
    // Freeing every slice fills the mask: the block recycles, and the heap is empty.
    for p in a.into_iter().chain([b]) {
        // SAFETY: a's slices and b came from the mallocs above; each is freed once, unused after.
        unsafe { h.free(p) };
    }
    assert_eq!(blocks_and_live(h, c), (0, 0), "recycled by the last free");
    assert_empty(h);
}

/// A warp's take gets one run of free slices (the lowest), at most what it asks for; the
/// rest of the group takes again.
#[test]
fn a_take_gets_the_lowest_run_of_free_slices() {
    // No hand-out bitmap: the test gives slices back in bulk, as `settle_packed` does.
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    set_host_thread_index(0);
    let c = class_of(SIZE);
    let per = slices_per_block(c);
    let t = take_slices(h, c, per).expect("a block");
    assert_eq!(t.got, per);
    // Free slices 3, 4, 5 and 9 (one atomic each, as `free` gives them back).
    let (seg, local) = h.block_of(t.base, c);
    for (first, k) in [(3, 3), (9, 1)] {
        // SAFETY: slices of t (taken above, handed to no one), each given back once.
        unsafe { h.slots().release_slices(seg, local, c, first, k) };
    }
    let u = take_slices(h, c, 8).expect("free slices");
    assert_eq!((u.base, u.got, u.got2), (t.base + 3 * slice_bytes(c), 3, 0));
    let v = take_slices(h, c, 8).expect("free slices");
    assert_eq!((v.base, v.got), (t.base + 9 * slice_bytes(c), 1));
    h.validate().expect("consistent");
    // SAFETY: every slice of the block is now held by this test (t's rest, u and v), handed
    // to no one: the whole block goes back once.
    unsafe { h.slots().release_slices(seg, local, c, 0, per) };
    assert_empty(h);
}

/// Marks of blocks whose free slices were all taken again stay until a take looks at them,
/// and a take looks at a few marks only: before a request falls back to a larger class or gets
/// null it looks at every mark, so a free slice behind many stale marks is found. A full heap
/// of one segment (16 blocks of 25 slices), nine stale marks below a block with a free slice:
/// without the full look the request got null.
#[test]
fn a_free_slice_behind_stale_marks_is_found_before_null() {
    let cpu = CpuHeap::with_checks(1, 1, veballoc::kernels::CHECKS);
    let h = cpu.heap();
    set_host_thread_index(0);
    let c = class_of(SIZE);
    let per = slices_per_block(c) as usize;
    let ptrs: Vec<*mut u8> = (0..16 * per).map(|_| h.malloc(SIZE)).collect();
    assert!(ptrs.iter().all(|p| !p.is_null()), "the segment's 16 blocks");
    assert!(h.malloc(SIZE).is_null(), "the heap is full");
    for b in 0..9 {
        // SAFETY: slice 0 of block b came from the mallocs above and is live; freed once, then
        // taken again by the malloc checked next.
        unsafe { h.free(ptrs[b * per]) };
        assert_eq!(h.malloc(SIZE), ptrs[b * per], "block {b}'s free slice, taken again");
    }
    let lone = ptrs[12 * per + 3];
    // SAFETY: `lone` came from the mallocs above and is live; freed once, then taken again below.
    unsafe { h.free(lone) };
    h.validate().expect("consistent, with stale marks");
    let again = h.malloc(SIZE);
    assert_eq!(again, lone, "the one free slice, behind nine stale marks");
    assert_eq!(h.usable_size(again), slice_bytes(c));
    for p in ptrs {
        // SAFETY: every slice is live again (each freed above was taken again, as asserted): each
        // freed once, unused after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}
