//! Helpers shared by the CPU test binaries (each includes this module with `mod common;`).

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

fn spans(size: u64) -> Vec<(u64, u64)> {
    let size = size / 8 * 8;
    const EDGE: u64 = 4096;
    if size <= 2 * EDGE {
        vec![(0, size)]
    } else {
        vec![(0, EDGE), (size - EDGE, EDGE)]
    }
}
