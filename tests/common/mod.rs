//! Helpers shared by the CPU test binaries (each includes this module with `mod common;`).
// Not every test binary that includes this module calls every helper.
#![allow(dead_code)]

/// Fills `size` bytes at `p` with a tag-derived pattern (for large blocks, the first and
/// last 4 KiB only, to keep tests fast).
pub fn fill(p: *mut u8, size: u64, tag: u64) {
    for (off, len) in spans(size) {
        // SAFETY: p holds `size` bytes handed out by the heap.
        let s = unsafe { std::slice::from_raw_parts_mut(p.add(off as usize) as *mut u64, len as usize / 8) };
        for (i, w) in s.iter_mut().enumerate() {
            *w = tag ^ (off / 8 + i as u64);
        }
    }
}

/// Checks what `fill(p, size, tag)` wrote.
pub fn check(p: *mut u8, size: u64, tag: u64) {
    for (off, len) in spans(size) {
        // SAFETY: as in fill.
        let s = unsafe { std::slice::from_raw_parts(p.add(off as usize) as *const u64, len as usize / 8) };
        for (i, w) in s.iter().enumerate() {
            assert_eq!(*w, tag ^ (off / 8 + i as u64), "allocation {p:?} (size {size}) was overwritten");
        }
    }
}

/// After a trim, the heap validates and is whole: no live byte or block, every segment back
/// in the segment tree.
pub fn assert_empty(h: &veballoc::kernels::DeviceHeap) {
    h.trim();
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.bytes_in_use, s.blocks_in_use()), (0, 0), "{s:?}");
    assert_eq!(s.free_segments, h.layout().num_segments as u64, "every segment back in the tree: {s:?}");
}

/// Marks the slices of take `t` of class `c` handed out in a heap with the checks
/// (`take_slices` leaves that to its caller, as `malloc` does it; the validator checks the
/// marks): both pieces of a take that crosses a block of its run.
pub fn mark_taken(h: &veballoc::kernels::DeviceHeap, c: usize, t: &veballoc::kernels::slice::Taken) {
    if h.checking() {
        // SAFETY: the tests pass a take of class `c` from `h` (`take_slices`) that they hold
        // and have not marked yet, as `malloc` marks its own.
        unsafe {
            h.hand_out().mark_handed_out(t.base, c, t.got);
            if t.got2 > 0 {
                h.hand_out().mark_handed_out(t.base2, c, t.got2);
            }
        }
    }
}

fn spans(size: u64) -> Vec<(u64, u64)> {
    let size = size / 8 * 8;
    const EDGE: u64 = 4096;
    if size <= 2 * EDGE {
        vec![(0, size)]
    } else {
        vec![(0, EDGE), (size - EDGE, EDGE)]
    }
}

/// `DeviceHeap::take_slices` with its contract checked: `n` in 1..=`MAX_TAKE`.
pub fn take_slices(
    h: &veballoc::kernels::DeviceHeap,
    c: usize,
    n: u32,
) -> Option<veballoc::kernels::slice::Taken> {
    assert!((1..=veballoc::kernels::slice::MAX_TAKE).contains(&n), "a take of {n} slices");
    // SAFETY: n is in 1..=MAX_TAKE (asserted above).
    unsafe { h.take_slices(c, n) }
}
