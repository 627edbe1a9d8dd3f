//! The allocator on CPU threads: the same source as the device build, over host memory.
//! These carry the weight in CI, where there is no GPU.

mod common;

use std::sync::{Barrier, Mutex};

use rand::{rngs::StdRng, Rng, SeedableRng};
use veballoc::kernels::arch::set_host_thread_index;
use veballoc::kernels::block::{blocks_per_segment, class_of, slice_bytes, slices_per_block};
use veballoc::kernels::class::{align_of_request, block_run_len, MAX_SLICE_BYTES, RUN_BLOCK_BYTES};
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::counter;
use veballoc::kernels::{DeviceHeap, SEGMENT_BYTES, SLICES_PER_BLOCK};

use common::{check, fill};

/// Shards (current slots per class) for CPU heaps: one per test thread.
const SHARDS: u32 = 16;

/// Sizes as users ask for them: mostly small, some mid-size slices, some whole blocks,
/// rarely several segments.
fn random_size(rng: &mut StdRng) -> u64 {
    match rng.gen_range(0..100) {
        0..=84 => rng.gen_range(1..=4096),
        85..=96 => rng.gen_range(4097..=1 << 20),
        97..=98 => rng.gen_range((1 << 20) + 1..=8 << 20),
        _ => rng.gen_range(SEGMENT_BYTES + 1..=3 * SEGMENT_BYTES),
    }
}

/// Where the tests that need a still host clock stop it (`arch::set_host_clock`): any time far
/// from zero (a slot's pace word keeps the install time's upper bits, and zero means "none").
const STILL_CLOCK_NS: u64 = 1 << 40;

fn assert_empty(h: &DeviceHeap) {
    h.trim();
    let s = h.validate().expect("heap consistent");
    assert_eq!(s.bytes_in_use, 0, "{s:?}");
    assert_eq!(s.blocks_in_use(), 0, "{s:?}");
    assert_eq!(s.free_segments, h.layout().num_segments as u64, "every segment back in the tree: {s:?}");
    assert_eq!(s.invalid_frees, 0);
}

#[test]
fn threads_mixed_churn_returns_everything() {
    churn(SHARDS);
}

#[test]
fn threads_sharing_one_current_block_per_class() {
    // Every thread bumps the same block counters: the contended path of the device.
    churn(1);
}

fn churn(shards: u32) {
    const THREADS: usize = 8;
    const ROUNDS: usize = 20_000;
    let cpu = CpuHeap::new(96, shards);
    let h = cpu.heap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                set_host_thread_index(t as u64);
                let mut rng = StdRng::seed_from_u64(t as u64);
                let mut live: Vec<(*mut u8, u64, u64)> = Vec::new();
                for r in 0..ROUNDS {
                    if live.len() < 48 && rng.gen_bool(0.55) {
                        let size = random_size(&mut rng);
                        let p = h.malloc(size);
                        assert!(!p.is_null(), "heap of 1.5 GiB ran out at round {r}");
                        assert_eq!(p as u64 % align_of_request(size), 0);
                        assert!(h.usable_size(p) >= size);
                        let tag = (t as u64) << 48 | r as u64;
                        fill(p, size, tag);
                        live.push((p, size, tag));
                    } else if !live.is_empty() {
                        let (p, size, tag) = live.swap_remove(rng.gen_range(0..live.len()));
                        check(p, size, tag);
                        // SAFETY: p was this thread's alone (just taken out of `live`), from this heap's
                        // malloc: freed once, unused after.
                        unsafe { h.free(p) };
                    }
                }
                for (p, size, tag) in live {
                    check(p, size, tag);
                    // SAFETY: each p is this thread's live block from this heap's malloc, freed once.
                    unsafe { h.free(p) };
                }
            });
        }
    });
    assert_empty(h);
}

#[test]
fn phases_never_overlap_and_stats_match() {
    const THREADS: usize = 6;
    const PHASES: usize = 6;
    const PER_PHASE: usize = 300;
    let cpu = CpuHeap::new(64, SHARDS);
    let h = cpu.heap();
    let barrier = Barrier::new(THREADS + 1);
    let live: Mutex<Vec<Vec<(u64, u64)>>> = Mutex::new(vec![Vec::new(); THREADS]);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (barrier, live) = (&barrier, &live);
            s.spawn(move || {
                set_host_thread_index(t as u64);
                let mut rng = StdRng::seed_from_u64(100 + t as u64);
                let mut mine: Vec<(u64, u64)> = Vec::new();
                for _ in 0..PHASES {
                    for _ in 0..PER_PHASE {
                        let size = if rng.gen_bool(0.9) {
                            rng.gen_range(1..=4096)
                        } else {
                            rng.gen_range(4097..=300_000)
                        };
                        let p = h.malloc(size);
                        assert!(!p.is_null());
                        mine.push((p as u64, size));
                    }
                    live.lock().unwrap()[t] = mine.clone();
                    barrier.wait(); // main checks
                    barrier.wait();
                    let keep = mine.len() / 2;
                    for (p, _) in mine.drain(keep..) {
                        // SAFETY: each p is this thread's live block (only this thread frees `mine`; the main
                        // thread only reads the list), freed once and forgotten (drained).
                        unsafe { h.free(p as *mut u8) };
                    }
                }
                for (p, _) in mine {
                    // SAFETY: as above: each p is this thread's live block, freed once.
                    unsafe { h.free(p as *mut u8) };
                }
            });
        }
        for phase in 0..PHASES {
            barrier.wait();
            let mut all: Vec<(u64, u64)> = live.lock().unwrap().iter().flatten().copied().collect();
            all.sort();
            for pair in all.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                assert!(a.0 + h.usable_size(a.0 as *const u8) <= b.0, "phase {phase}: {a:?} overlaps {b:?}");
            }
            let expect: u64 = all.iter().map(|&(p, _)| h.usable_size(p as *const u8)).sum();
            let s = h.validate().expect("heap consistent at a quiescent point");
            assert_eq!(s.bytes_in_use, expect, "phase {phase}: stats disagree with the live set");
            barrier.wait();
        }
    });
    assert_empty(h);
}

#[test]
fn warp_groups_take_consecutive_slices() {
    // One segment per class stays as its current block: 12 classes need 12 segments. Every
    // class whose blocks hold at least 32 slices (up to 32 KiB) serves a warp with one take.
    let cpu = CpuHeap::new(16, 1);
    let h = cpu.heap();
    for c in (0..=class_of(32 << 10)).step_by(3) {
        assert!(slices_per_block(c) >= 32);
        let size = slice_bytes(c);
        let ps = cpu.warp_malloc(&[size; 32]);
        for w in ps.windows(2) {
            assert_eq!(w[1] as u64 - w[0] as u64, size, "one group, one atomic: adjacent slices");
        }
        for p in ps {
            // SAFETY: each p came from the warp_malloc above, is freed once and not used after.
            unsafe { h.free(p) };
        }
    }
    // Mixed sizes in one warp: each class is its own group.
    let sizes: Vec<u64> = (0..32).map(|i| [16, 100, 5000, 16, 300_000][i % 5]).collect();
    let ps = cpu.warp_malloc(&sizes);
    assert!(ps.iter().all(|p| !p.is_null()));
    for (p, s) in ps.iter().zip(&sizes) {
        assert!(h.usable_size(*p) >= *s);
        // SAFETY: each p came from the warp_malloc above, is freed once and not used after.
        unsafe { h.free(*p) };
    }
    assert_empty(h);
}

#[test]
fn warp_groups_cross_block_boundaries() {
    // 4096 slices per block is not a multiple of 24: groups straddle block ends, and the
    // lanes that did not fit get slices from the next block. None is lost or doubled.
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    let mut all = Vec::new();
    for _ in 0..(3 * SLICES_PER_BLOCK as usize / 24 + 5) {
        all.extend(cpu.warp_malloc(&[64; 24]));
    }
    assert!(all.iter().all(|p| !p.is_null()));
    let mut sorted: Vec<u64> = all.iter().map(|p| *p as u64).collect();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), all.len(), "a slice was handed out twice");
    for p in all {
        // SAFETY: each p came from the mallocs above (asserted distinct), freed once, unused after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

#[test]
fn out_of_memory_returns_null_then_recovers() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    for size in [4096u64, 1024, 100_000] {
        let mut ps = Vec::new();
        loop {
            let p = h.malloc(size);
            if p.is_null() {
                break;
            }
            ps.push(p);
            assert!(ps.len() < 1 << 20, "no null from a full heap");
        }
        let c = class_of(size);
        assert_eq!(h.usable_size(ps[0]), slice_bytes(c));
        // Every slice of every block (a block's end past its last slice stays unused).
        let slices =
            h.layout().num_segments as u64 * blocks_per_segment(c) as u64 * slices_per_block(c) as u64;
        // At most 1/8 of a block past its last slice (100000 B: nine 104 KiB slices to 1 MiB).
        assert!(slices * slice_bytes(c) <= h.capacity() && slices * slice_bytes(c) * 8 > h.capacity() * 7);
        assert_eq!(ps.len() as u64, slices, "size {size}: every slice of the heap was handed out");
        assert!(h.malloc(16).is_null(), "full heap still serves");
        assert!(h.counter(counter::OUT_OF_MEMORY).load_acquire() > 0);
        for p in ps.drain(..) {
            // SAFETY: each p came from the mallocs above (asserted distinct), freed once, unused after.
            unsafe { h.free(p) };
        }
        assert_empty(h);
        let probe = h.malloc(size);
        assert!(!probe.is_null(), "heap usable again after freeing");
        // SAFETY: probe came from the malloc above, is freed once and not used after.
        unsafe { h.free(probe) };
        assert_empty(h);
    }
}

#[test]
fn large_runs_up_to_nearly_the_whole_heap() {
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    let a = h.malloc(7 * SEGMENT_BYTES - 5);
    assert!(!a.is_null());
    assert_eq!(h.usable_size(a), 7 * SEGMENT_BYTES);
    assert!(h.malloc(2 * SEGMENT_BYTES).is_null(), "only one segment left");
    let b = h.malloc(SEGMENT_BYTES); // a run of one segment: the last one
    assert!(!b.is_null());
    fill(a, 7 * SEGMENT_BYTES, 1);
    fill(b, SEGMENT_BYTES, 2);
    check(a, 7 * SEGMENT_BYTES, 1);
    // SAFETY: a came from the malloc above, is freed once and not used after.
    unsafe { h.free(a) };
    // SAFETY: b came from the malloc above, is freed once and not used after.
    unsafe { h.free(b) };
    assert_empty(h);
    let all = h.malloc(8 * SEGMENT_BYTES);
    assert!(!all.is_null(), "the whole heap as one run");
    // SAFETY: `all` came from the malloc above, is freed once and not used after.
    unsafe { h.free(all) };
    assert!(h.malloc(9 * SEGMENT_BYTES).is_null());
    assert_empty(h);
}

#[test]
fn calloc_and_realloc() {
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    // Dirty some memory, free it, and calloc over it.
    let dirty: Vec<_> = (0..100).map(|_| h.malloc(256)).collect();
    for &p in &dirty {
        // SAFETY: 256 bytes each.
        unsafe { std::ptr::write_bytes(p, 0xff, 256) };
        // SAFETY: p came from the mallocs above (written just now), freed once, unused after.
        unsafe { h.free(p) };
    }
    h.trim();
    for _ in 0..100 {
        let p = h.calloc(32, 8);
        // SAFETY: 256 zeroed bytes.
        assert!(unsafe { std::slice::from_raw_parts(p, 256) }.iter().all(|&b| b == 0));
        // SAFETY: p came from the calloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert!(h.calloc(u64::MAX, 2).is_null(), "overflow is null");
    // realloc: grow keeps contents, shrink keeps the pointer, null and zero act as malloc/free.
    // SAFETY: null is always allowed (a malloc).
    let p = unsafe { h.realloc(std::ptr::null_mut(), 40) };
    fill(p, 40, 9);
    // SAFETY: p is the live block from the realloc above, owned here; kept in place (asserted).
    assert_eq!(unsafe { h.realloc(p, 48) }, p, "fits in its 48 B slice");
    // SAFETY: p is still live and owned here; it moves to q (asserted), and p is not used after.
    let q = unsafe { h.realloc(p, 10_000) };
    assert_ne!(q, p);
    check(q, 40, 9);
    // SAFETY: q is live and owned here; r replaces it (asserted non-null), q is not used after.
    let r = unsafe { h.realloc(q, 40 * SEGMENT_BYTES / 10) };
    assert!(!r.is_null());
    check(r, 40, 9);
    // SAFETY: r is live and owned here; size 0 frees it, and r is not used after.
    assert!(unsafe { h.realloc(r, 0) }.is_null());
    assert_empty(h);
}

#[test]
fn invalid_frees_are_counted_not_fatal() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    let p = h.malloc(64);
    // SAFETY: (the five frees) not valid frees, on purpose: pointers the heap never handed
    // out, which it must refuse and count (asserted below). A refused free changes nothing
    // and never touches memory at its pointer; `add` stays inside p's slice and `whole`.
    unsafe {
        h.free((h.mem() - 64) as *mut u8); // below the heap
        h.free((h.mem() + h.capacity()) as *mut u8); // past it
        h.free(p.add(8)); // inside a slice
        h.free((h.mem() + 3 * SEGMENT_BYTES) as *mut u8); // a free segment
    }
    let whole = h.malloc(2 << 20); // a whole block (of one 2 MiB slice)
                                   // SAFETY: as above.
    unsafe { h.free(whole.add(4096)) }; // inside a whole block
    assert_eq!(h.counter(counter::INVALID_FREE).load_acquire(), 5);
    // SAFETY: whole and p came from the mallocs above (live: every free above was refused),
    // each freed once and not used after.
    unsafe {
        h.free(whole);
        h.free(p);
    }
    h.trim();
    let s = h.validate().unwrap();
    assert_eq!(s.bytes_in_use, 0);
    assert_eq!(s.invalid_frees, 5);
}

#[test]
fn out_of_memory_reaches_slices_in_other_shards_blocks() {
    // Two segments of 4 KiB slices = 32 blocks of 256 slices (8192 slices), shared by 8
    // threads on 8 shards, each wanting at most 1500 (12000 in all): every slice is handed
    // out once and the heap fills. In a heap this small the 4 KiB row has one slot
    // (`row_shard_log2` 0), which all 8 threads share, so this does not reach `steal`
    // (mutation testing, r41); `a_class_out_of_blocks_takes_the_slices_left_in_another_slot`
    // does.
    const THREADS: usize = 8;
    const WANT: usize = 1500;
    let cpu = CpuHeap::new(2, SHARDS);
    let h = cpu.heap();
    let served: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    set_host_thread_index(t as u64);
                    let mut mine = Vec::new();
                    while mine.len() < WANT {
                        let p = h.malloc(4096);
                        if p.is_null() {
                            break;
                        }
                        mine.push(p as u64);
                    }
                    mine
                })
            })
            .collect();
        let all: Vec<u64> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "a slice was handed out twice");
        for p in &all {
            // SAFETY: each p came from one thread's malloc (joined; asserted distinct), freed once.
            unsafe { h.free(*p as *mut u8) };
        }
        all.len() as u64
    });
    let c = class_of(4096);
    let slices = 2 * blocks_per_segment(c) as u64 * slices_per_block(c) as u64;
    assert_eq!(served, slices, "every slice of the heap was handed out");
    assert_empty(h);
}

/// `free(null)` does nothing, as C's does: not even count an invalid free.
#[test]
fn a_free_of_null_is_not_counted() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    // SAFETY: null, which free ignores.
    unsafe { h.free(std::ptr::null_mut()) };
    assert_eq!(h.counter(counter::INVALID_FREE).load_acquire(), 0);
    assert_empty(h);
}

/// `release_free_segments` (the host's `trim_memory`) takes free segments from the top
/// down and leaves `keep` of them in the tree; `reacquire_segment` gives each back.
#[test]
fn released_segments_leave_the_free_segments_asked_for() {
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    let p = h.malloc(512);
    assert!(!p.is_null());
    let free = h.validate().expect("heap consistent").free_segments;
    assert_eq!(free, 7, "one segment formatted for 512 B slices");
    let mut out = [0u32; 16];
    let n = h.release_free_segments(2, &mut out);
    assert_eq!(&out[..n], &[7, 6, 5, 4, 3], "from the top, two left");
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.free_segments, s.released_segments), (2, 5));
    assert_eq!(h.release_free_segments(2, &mut out), 0, "no more than asked");
    for &seg in &out[..n] {
        // SAFETY: seg was taken out by release_free_segments above, is given back once, and
        // its memory (the CPU model's) was never unmapped.
        unsafe { h.reacquire_segment(seg) };
    }
    assert_eq!(h.validate().expect("heap consistent").free_segments, 7);
    // SAFETY: p came from the malloc above, is freed once and not used after.
    unsafe { h.free(p) };
    assert_empty(h);
}

/// Before a null, a take looks in its row's other slots (`Slots::steal`): a slot whose block
/// holds a live slice keeps it through a sweep (`retire_if_idle`), so the rest of that block
/// is the class's last memory. (The threaded test above may end with nothing left in other
/// slots, as its threads stop at their own counts.)
#[test]
fn a_class_out_of_blocks_takes_the_slices_left_in_another_slot() {
    let cpu = CpuHeap::new(4, 2);
    let h = cpu.heap();
    let c = class_of(16);
    assert_eq!(h.layout().row_shards(c), 2, "two slots for the class");
    set_host_thread_index(1);
    let one = common::take_slices(h, c, 1).expect("a slice");
    common::mark_taken(h, c, &one);
    set_host_thread_index(0);
    let per = slices_per_block(c);
    let mut got = one.total() as u64;
    while let Some(t) = common::take_slices(h, c, per) {
        common::mark_taken(h, c, &t);
        got += t.total() as u64;
    }
    let all = 4 * blocks_per_segment(c) as u64 * per as u64;
    assert_eq!(got, all, "every slice of the heap, the other slot's last ones too");
    assert_eq!(h.validate().expect("heap consistent").live_slices[c], all);
}

/// Issue 9.2: every size gets the smallest class that holds it: within 16 bytes below 64 B,
/// at most 25% more from 64 B up, mid sizes (4 KiB .. 1 MiB) as slices and larger ones as
/// whole blocks of their class, not rounded to a 64 KiB block. The heap validates throughout.
#[test]
fn sizes_get_little_waste() {
    let cpu = CpuHeap::new(64, 1);
    let h = cpu.heap();
    let sizes = [
        1u64,
        16,
        24,
        48,
        63,
        64,
        65,
        100,
        3000,
        4096,
        4097,
        6000,
        10_000,
        40_000,
        70_000,
        300_000,
        1 << 20,
        (1 << 20) + 1,
        3 << 19,
        4 << 20,
        (4 << 20) + 1,
        9 << 19,
        5 << 20,
        8 << 20,
        10 << 20,
        12_900_000,
        16 << 20,
        (16 << 20) + 1,
        20 << 20,
        33 << 20,
        40_000_000,
        100 << 20,
    ];
    let mut live = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        let n = if size <= 1 << 20 { 40 } else { 2 };
        for k in 0..n {
            let p = h.malloc(size);
            assert!(!p.is_null(), "size {size}");
            let got = h.usable_size(p);
            assert!(got >= size, "size {size}: usable {got}");
            if size < 64 {
                assert!(got - size < 16, "size {size}: usable {got}, more than 15 bytes over");
            } else {
                assert!(got * 4 <= size * 5, "size {size}: usable {got}, more than 25% over");
            }
            if k == 0 {
                println!("size {size:>8}: usable {got:>8} ({:.3}x)", got as f64 / size as f64);
            }
            let tag = (i as u64) << 32 | k;
            fill(p, size, tag);
            live.push((p, size, tag));
        }
        let s = h.validate().expect("heap consistent");
        let expect: u64 = live.iter().map(|&(p, _, _)| h.usable_size(p)).sum();
        assert_eq!(s.bytes_in_use, expect);
    }
    for (p, size, tag) in live {
        check(p, size, tag);
        // SAFETY: each p is live and owned here (in `live`), freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_eq!(h.counter(counter::INVALID_FREE).load_acquire(), 0);
    assert_empty(h);
}

/// Issue 9.2/9.3 (the survey's utilization test, on the CPU heap): warps of 32 lanes ask for
/// one size until null. What they asked for, over the heap's capacity, is at least 75% for
/// every size (the worst is a size just above a class, 4097 B in a 5120 B slice), and the
/// mid sizes take the warp-coalesced slice path: a warp's 8 KiB buffers are adjacent.
#[test]
fn one_size_fills_the_heap() {
    const SEGMENTS: u32 = 8;
    let sizes =
        [24u64, 48, 100, 3000, 4097, 6000, 8192, 10_000, 40_000, 70_000, 300_000, 3 << 19, 5 << 20, 8 << 20];
    for size in sizes {
        let cpu = CpuHeap::new(SEGMENTS, 1);
        let h = cpu.heap();
        let mut served = 0u64;
        loop {
            let ps = cpu.warp_malloc(&[size; 32]);
            let got = ps.iter().filter(|p| !p.is_null()).count() as u64;
            if size == 8192 && got == 32 {
                let base = ps[0] as u64;
                assert!(ps.iter().enumerate().all(|(i, &p)| p as u64 == base + i as u64 * 8192), "adjacent");
            }
            served += got;
            if got < 32 {
                break;
            }
            assert!(served < 1 << 24, "no null from a full heap");
        }
        let share = (served * size) as f64 / h.capacity() as f64;
        println!("size {size:>8}: {served:>8} served, {:.1}% of the heap asked for", 100.0 * share);
        assert!(share >= 0.75, "size {size}: only {:.1}% of the heap", 100.0 * share);
        let s = h.validate().expect("heap consistent");
        // A slice of the size's class, or above the largest class a run of 256 KiB blocks.
        let each = if size <= MAX_SLICE_BYTES {
            slice_bytes(class_of(size))
        } else {
            block_run_len(size) as u64 * RUN_BLOCK_BYTES
        };
        assert_eq!(s.bytes_in_use, served * each, "size {size}");
    }
}

/// Requests above the largest class (1 MiB) take a run of contiguous 256 KiB blocks (which
/// may go on in the next segment, see `cpu_big_runs.rs`): its free returns every block; a
/// second free is counted, and so is a free of a pointer into the run; the run's blocks serve
/// slices of their group (48 and 64 B) afterwards.
#[test]
fn block_runs_free_whole_and_refuse_interior_pointers() {
    let cpu = CpuHeap::new(2, 1);
    let h = cpu.heap();
    let a = h.malloc(5 << 20);
    let b = h.malloc(9 << 20);
    assert!(!a.is_null() && !b.is_null());
    assert_eq!((h.usable_size(a), h.usable_size(b)), (5 << 20, 9 << 20));
    assert_eq!(b as u64 - a as u64, 5 << 20, "runs are contiguous blocks of one segment");
    fill(a, 5 << 20, 1);
    fill(b, 9 << 20, 2);
    let s = h.validate().expect("heap consistent");
    assert_eq!(s.bytes_in_use, 14 << 20);
    // Eight 256 KiB blocks are left in the first segment: a run of 18 starts there and goes
    // on in the second one.
    let c = h.malloc(9 << 19);
    assert_eq!(h.usable_size(c), 9 << 19);
    assert_eq!(c as u64 - a as u64, 14 << 20, "{c:?}");
    assert_eq!(h.validate().expect("heap consistent").crossing_runs, 1);
    // SAFETY: `add` stays inside a's run. Not a valid free, on purpose: the start of the
    // run's second block, which the heap must refuse and count (asserted next); a refused
    // free changes nothing and never touches the run's memory.
    unsafe { h.free(a.add(1 << 20)) }; // the start of the run's second block
    assert_eq!(h.counter(counter::INVALID_FREE).load_acquire(), 1);
    check(a, 5 << 20, 1);
    // SAFETY: a came from the malloc above and is live; freed once here, not used after.
    unsafe { h.free(a) };
    // SAFETY: not a valid free, on purpose: a second free of the run at once (no malloc
    // since), which the heap refuses and counts even without the checks (asserted next:
    // a run is freed by a CAS on its kind); a refused free changes nothing.
    unsafe { h.free(a) };
    assert_eq!(h.counter(counter::DOUBLE_FREE).load_acquire(), 1, "a second free of a run is counted");
    // The run's blocks serve slices of their group (48 and 64 B) again.
    let d: Vec<_> = (0..5).map(|_| h.malloc(64)).collect();
    assert!(d.iter().all(|p| (*p as u64) >= a as u64 && (*p as u64) < b as u64), "{d:?}");
    let s = h.validate().expect("heap consistent");
    assert_eq!(s.bytes_in_use, (9 << 20) + (9 << 19) + 5 * 64);
    check(b, 9 << 20, 2);
    for p in d.into_iter().chain([b, c]) {
        // SAFETY: d's slices, b and c came from the mallocs above and are live; each freed once.
        unsafe { h.free(p) };
    }
    h.trim();
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.bytes_in_use, s.blocks_in_use(), s.free_segments), (0, 0, 2), "{s:?}");
    assert_eq!((s.invalid_frees, s.double_frees), (1, 1));
}

/// Each group takes whole segments, so a heap may have none left for a class whose group has
/// no room while a larger group's blocks have some: the request then takes a slice of a
/// larger class (up to `fallback_last`) rather than null. With one segment, formatted
/// for the group of 1 MiB blocks (144 B .. 256 KiB slices), 100-byte requests (104-byte slices,
/// blocks of 512 KiB) take 144-byte slices; without the fallback they got null.
#[test]
fn a_class_without_room_takes_a_larger_slice() {
    let cpu = CpuHeap::new(1, 1);
    let h = cpu.heap();
    let a = h.malloc(4096);
    assert!(!a.is_null());
    let ps = cpu.warp_malloc(&[100; 32]);
    assert!(ps.iter().all(|p| !p.is_null()), "{ps:?}");
    for w in ps.windows(2) {
        assert_eq!(
            w[1] as u64 - w[0] as u64,
            144,
            "one group, slices of the smallest larger class with room"
        );
    }
    let b = h.malloc(100);
    assert_eq!(h.usable_size(b), 144);
    // 24 and 32 B (blocks of 64 and 128 KiB) reach the 1 MiB group too: their fallback reaches its
    // first class (`FALLBACK_FLOOR`), though four times their slice is below 144 B.
    let small: Vec<_> = [24u64, 32].iter().map(|&n| h.malloc(n)).collect();
    assert!(small.iter().all(|p| !p.is_null()), "{small:?}");
    assert!(small.iter().all(|&p| h.usable_size(p) >= 144));
    for p in ps.into_iter().chain([a, b]).chain(small) {
        // SAFETY: ps, a, b and `small` came from the mallocs above, live; each freed once.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// The fallback spans two doublings above 4 KiB too, where classes are finer: in a
/// one-segment heap whose 1 MiB blocks are all out (fifteen full of 4 KiB slices, one the
/// current block of 18 KiB slices), a 5000-byte request (5120-byte class) takes an 18 KiB
/// slice. With a fallback of eight classes (when they were eight per doubling: up to 10 KiB)
/// it got null; eight classes from 5120 B now reach only 7168 B.
#[test]
fn a_fine_class_without_room_falls_back_two_doublings() {
    let cpu = CpuHeap::new(1, 1);
    let h = cpu.heap();
    let first = h.malloc(18_000);
    assert_eq!(h.usable_size(first), 18 << 10);
    let mut fill = Vec::new();
    loop {
        let p = h.malloc(4096);
        if p.is_null() {
            break;
        }
        fill.push(p);
        assert!(fill.len() <= 16 * 256, "more 4 KiB slices than the segment holds");
    }
    assert_eq!(fill.len(), 15 * 256, "the other fifteen blocks, full");
    let p = h.malloc(5000);
    assert!(!p.is_null(), "a slice of a class within two doublings has room");
    assert_eq!(h.usable_size(p), 18 << 10);
    h.validate().expect("heap consistent");
    for q in fill.into_iter().chain([first, p]) {
        // SAFETY: `fill`'s slices, first and p came from the mallocs above, live; each freed once.
        unsafe { h.free(q) };
    }
    assert_empty(h);
}

/// Issue 9.2 (the survey's utilization test with random sizes, on the CPU heap): one thread
/// asks for sizes uniform in a range until the first null; what it asked for, over the heap,
/// must not fall because there are four classes per doubling: segments are formatted per
/// group (one doubling), so [16, 4096] needs 9 segment formats, not 28. With a segment per
/// class, a 256 MiB heap got its first null after 50 requests (0.0%).
#[test]
fn random_sizes_fill_the_heap() {
    for (segments, lo, hi, min_share) in [
        (16u32, 16u64, 4096u64, 0.45),
        (64, 16, 4096, 0.75),
        (16, 4096, 1 << 20, 0.45),
        (64, 4096, 1 << 20, 0.7),
    ] {
        let cpu = CpuHeap::new(segments, 1);
        let h = cpu.heap();
        let mut rng = StdRng::seed_from_u64(1);
        let (mut asked, mut n) = (0u64, 0u64);
        loop {
            let size = rng.gen_range(lo..=hi);
            if h.malloc(size).is_null() {
                break;
            }
            (asked, n) = (asked + size, n + 1);
        }
        let share = asked as f64 / h.capacity() as f64;
        println!(
            "{segments} segments, sizes [{lo}, {hi}]: {n} served, {:.1}% of the heap asked for",
            100.0 * share
        );
        assert!(share >= min_share, "{segments} segments, [{lo}, {hi}]: {:.1}%", 100.0 * share);
        h.validate().expect("heap consistent");
    }
}

/// A slot whose runs run out fast takes its next run of several blocks at once
/// (`slice::max_run`): the validator counts the run's blocks, `trim` gives back those it has
/// not handed out, and filling the heap to the first null loses none of them (null still
/// means full).
#[test]
fn fast_slots_take_runs_of_blocks() {
    use veballoc::kernels::slice::max_run;
    const SEGMENTS: u32 = 4;
    let size = 4096;
    let c = class_of(size);
    let cpu = CpuHeap::new(SEGMENTS, 1);
    let h = cpu.heap();
    assert!(max_run(c, h.layout().row_shards(c)) > 1, "4 KiB slots take runs of blocks");
    // Runs of 256 slices run out within microseconds here: the runs grow.
    let mut live = Vec::new();
    for _ in 0..64 {
        live.extend(cpu.warp_malloc(&[size; 32]));
    }
    assert!(live.iter().all(|p| !p.is_null()));
    let needed = (live.len() as u64).div_ceil(slices_per_block(c) as u64);
    let s = h.validate().expect("heap consistent");
    assert!(s.slice_blocks[c] > needed, "blocks taken ahead in the current run: {s:?}");
    assert_eq!(s.bytes_in_use, live.len() as u64 * size);
    h.trim();
    let s = h.validate().expect("heap consistent");
    assert_eq!(s.slice_blocks[c], needed, "trim gives back the run's untouched blocks: {s:?}");
    // Fill to the first null: the runs' blocks are not lost to other classes or to the end.
    loop {
        let ps = cpu.warp_malloc(&[size; 32]);
        let got = ps.iter().filter(|p| !p.is_null()).count();
        live.extend(ps.into_iter().filter(|p| !p.is_null()));
        if got < 32 {
            break;
        }
    }
    let share = (live.len() as u64 * size) as f64 / h.capacity() as f64;
    assert!(share >= 0.99, "only {:.1}% of the heap", 100.0 * share);
    for p in live {
        // SAFETY: each p came from the mallocs above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// The reclaim sweep a failing request runs before it returns null gives back the blocks of
/// every current run that it has not handed out, also of a run whose block being handed out
/// holds live slices (that block stays current): no untouched block outlives a null. Here
/// 2560-byte slots take runs of several 1 MiB blocks, and 4 KiB requests (the same group)
/// then fill the heap. The host clock stands still, so that every run runs out "fast" and the
/// runs double as on a GPU: at wall-clock pace a loaded core could take longer than
/// `FAST_BLOCK_NS` between installs, and no run had blocks ahead (1 in 30 CI runs).
#[test]
fn the_sweep_before_a_null_gives_back_every_untouched_block() {
    const SEGMENTS: u32 = 4;
    veballoc::kernels::arch::set_host_clock(Some(STILL_CLOCK_NS));
    let cpu = CpuHeap::new(SEGMENTS, 1);
    let h = cpu.heap();
    let (small, large) = (2560u64, 4096u64);
    let mut live: Vec<_> = (0..64).flat_map(|_| cpu.warp_malloc(&[small; 32])).collect();
    let c = class_of(small);
    let needed = (live.len() as u64).div_ceil(slices_per_block(c) as u64);
    assert!(h.validate().expect("heap consistent").slice_blocks[c] > needed, "a run with blocks ahead");
    loop {
        let ps = cpu.warp_malloc(&[large; 32]);
        let got = ps.iter().filter(|p| !p.is_null()).count();
        live.extend(ps.into_iter().filter(|p| !p.is_null()));
        if got < 32 {
            break;
        }
    }
    let s = h.validate().expect("heap consistent");
    assert_eq!(
        s.slice_blocks[c], needed,
        "a run's untouched blocks outlived the sweep before the null: {s:?}"
    );
    for p in live {
        // SAFETY: each p came from the mallocs above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
    veballoc::kernels::arch::set_host_clock(None);
}

/// A take that crosses the end of a block of the slot's run comes in two pieces: the rest of
/// that block and the start of the next one (3 KiB slices: 341 to a 1 MiB block, so that
/// warps of 32 do not divide a block). Every slice is handed out once, the validator agrees,
/// and everything comes back. The host clock stands still: the second run is two blocks only
/// if the first ran out within `FAST_BLOCK_NS`, which a loaded core need not manage.
#[test]
fn a_take_across_a_block_of_a_run_comes_in_two_pieces() {
    use veballoc::kernels::slice::max_run;
    veballoc::kernels::arch::set_host_clock(Some(STILL_CLOCK_NS));
    let size = 3072u64;
    let c = class_of(size);
    let per = slices_per_block(c);
    assert_eq!(per, 341);
    let cpu = CpuHeap::new(2, 1);
    let h = cpu.heap();
    assert!(max_run(c, h.layout().row_shards(c)) >= 2);
    let mark = |t: &veballoc::kernels::slice::Taken| common::mark_taken(h, c, t);
    // A whole block at once: the slot's next run is two blocks (it ran out at once).
    let first = common::take_slices(h, c, per).expect("a block");
    assert_eq!((first.got, first.got2), (per, 0));
    mark(&first);
    let a = common::take_slices(h, c, 320).expect("the run's first block");
    assert_eq!((a.got, a.got2), (320, 0));
    mark(&a);
    let b = common::take_slices(h, c, 32).expect("across the block's end");
    assert_eq!((b.got, b.got2), (per - 320, 32 - (per - 320)), "{b:?}");
    assert_eq!(b.base, a.base + 320 * size);
    let block_start = |p: u64| p - (p - h.mem()) % (1 << 20);
    assert_eq!(b.base2, block_start(a.base) + (1 << 20), "the next block of the run");
    mark(&b);
    let s = h.validate().expect("heap consistent");
    assert_eq!(s.bytes_in_use, (per + 352) as u64 * size);
    let mut all = Vec::new();
    for t in [first, a, b] {
        all.extend((0..t.total()).map(|r| t.addr(r, size)));
    }
    let mut sorted = all.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), all.len(), "a slice handed out twice");
    for p in all {
        // SAFETY: each p came from one thread's malloc (joined; asserted distinct), freed once.
        unsafe { h.free(p as *mut u8) };
    }
    assert_empty(h);
    veballoc::kernels::arch::set_host_clock(None);
}

/// Runs of whole blocks (here 300000 B: five 64 KiB blocks) come from their group's run row:
/// one segment at a time, handed out in order with one atomic each, the rest of the row's
/// segment held parked (counted as reserved) until a trim or a reclaim sweep returns it. A
/// freed run is reused (lowest first) before the row's segment; a run that no longer fits in
/// the rest of the segment gives that rest back and takes the next segment.
#[test]
fn runs_of_whole_blocks_come_from_the_run_row() {
    const RUN: u64 = 300_000;
    const BLOCK: u64 = 64 << 10;
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    let a = h.malloc(RUN);
    let b = h.malloc(RUN);
    assert_eq!(b as u64 - a as u64, 5 * BLOCK, "runs of the row's segment are adjacent");
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.bytes_in_use, s.reserved_blocks, s.free_segments), (10 * BLOCK, 246, 3), "{s:?}");
    // SAFETY: a came from the malloc above, is freed once and not used after.
    unsafe { h.free(a) };
    let c = h.malloc(RUN);
    assert_eq!(c, a, "a freed run is taken before the row's segment");
    // 51 runs of 5 fit in a segment of 256 blocks; the 52nd takes the next segment.
    let mut runs = vec![b, c];
    for _ in 2..51 {
        runs.push(h.malloc(RUN));
    }
    assert!(runs.iter().all(|&p| (p as u64 - a as u64) < SEGMENT_BYTES), "51 runs in the first segment");
    let next = h.malloc(RUN);
    assert_eq!(next as u64 - a as u64, SEGMENT_BYTES, "the 52nd run starts the next segment");
    runs.push(next);
    for (i, &p) in runs.iter().enumerate() {
        fill(p, RUN, i as u64);
    }
    let s = h.validate().expect("heap consistent");
    // The first segment's last block went back to the tree; the second segment is the row's.
    assert_eq!((s.bytes_in_use, s.reserved_blocks), (52 * 5 * BLOCK, 251), "{s:?}");
    for (i, &p) in runs.iter().enumerate() {
        check(p, RUN, i as u64);
        // SAFETY: each run came from the mallocs above (live), is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// The free that empties a segment only marks it pending (its blocks stay in their group's
/// tree, serving the group); a claim of a run of segments that finds none reclaims pending
/// segments, and with no free segment left, the reclaim sweep before a null does: another
/// group gets the emptied segment, with no host `trim`.
#[test]
fn an_emptied_segment_goes_back_when_memory_runs_short() {
    let cpu = CpuHeap::with_checks(3, 1, true);
    let h = cpu.heap();
    set_host_thread_index(0);
    // Segment 0: 16 B's current block, idle (a reclaim sweep would retire it).
    let p = h.malloc(16);
    // SAFETY: p came from the malloc above, is freed once and not used after.
    unsafe { h.free(p) };
    let p = h.malloc(4096);
    assert_eq!(p as u64, h.mem() + SEGMENT_BYTES, "segment 1, formatted for 4 KiB's group");
    // SAFETY: p came from the malloc above, is freed once and not used after.
    unsafe { h.free(p) };
    h.trim_slot(class_of(4096), 0);
    let s = h.validate().expect("consistent");
    assert_eq!((s.bytes_in_use, s.free_segments), (0, 1), "marked pending, not yet reclaimed: {s:?}");
    // 128 B is of another group: it formats the free segment 2.
    let q = h.malloc(128);
    assert_eq!(q as u64, h.mem() + 2 * SEGMENT_BYTES, "segment 2");
    // SAFETY: q came from the malloc above, is freed once and not used after.
    unsafe { h.free(q) };
    h.trim_slot(class_of(128), 0);
    // A run of two segments: the run claim reclaims the pending ones (1 and 2), with no
    // sweep (which would have retired 16 B's idle block and returned segment 0 too).
    let r = h.malloc(SEGMENT_BYTES + 1);
    assert_eq!(r as u64, h.mem() + SEGMENT_BYTES, "a run over segments 1 and 2");
    assert!(h.occupancy().current_bytes(class_of(16)) > 0, "16 B's block still current: no sweep ran");
    // SAFETY: r came from the malloc above, is freed once and not used after.
    unsafe { h.free(r) };
    assert_empty(h);
    // One segment, pending for 4 KiB's group: 128 B gets it after the reclaim sweep.
    let cpu = CpuHeap::with_checks(1, 1, true);
    let h = cpu.heap();
    let p = h.malloc(4096);
    // SAFETY: p came from the malloc above, is freed once and not used after.
    unsafe { h.free(p) };
    h.trim_slot(class_of(4096), 0);
    let q = h.malloc(128);
    assert_eq!(q as u64, h.mem(), "the pending segment, for another group");
    // SAFETY: q came from the malloc above, is freed once and not used after.
    unsafe { h.free(q) };
    assert_empty(h);
}

/// Heap creation's boot formats one segment ahead for each of the groups of 16 B..256 KiB
/// slices (`DeviceHeap::boot`): a first malloc of each such class then formats nothing, and
/// the segments come back when memory runs short (a request for the whole heap after
/// frees needs no host trim). Small heaps format fewer ahead.
#[test]
fn boot_formats_the_small_groups_ahead() {
    use veballoc::kernels::heap::{boot_groups, boot_segments, BOOT_GROUPS, BOOT_SEGMENTS_PER_GROUP};
    assert_eq!(boot_groups(BOOT_SEGMENTS_PER_GROUP - 1), 0);
    assert_eq!(boot_groups(2 * BOOT_SEGMENTS_PER_GROUP), 2);
    let segments = BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP;
    // Group 0 (16 B, whose slots the boot fills) and the 48-64 B group get two segments, the
    // others one.
    let booted: u32 = (0..BOOT_GROUPS).map(|g| boot_segments(g, segments)).sum();
    assert_eq!(booted, BOOT_GROUPS as u32 + 2);
    assert_eq!(boot_segments(0, BOOT_SEGMENTS_PER_GROUP), 1, "one group: one segment");
    let cpu = CpuHeap::new(segments, 1);
    let h = cpu.heap();
    for g in 0..veballoc::kernels::block::NUM_GROUPS {
        assert_eq!(h.boot(g), g < BOOT_GROUPS, "group {g}");
    }
    let s = h.validate().expect("heap consistent");
    assert_eq!(s.free_segments, (segments - booted) as u64, "{s:?}");
    let ptrs: Vec<_> = [16u64, 24, 48, 100, 200, 4096, 200_000].iter().map(|&n| h.malloc(n)).collect();
    assert!(ptrs.iter().all(|p| !p.is_null()));
    let s = h.validate().expect("heap consistent");
    assert_eq!(s.free_segments, (segments - booted) as u64, "no format: {s:?}");
    for p in ptrs {
        // SAFETY: each p came from the mallocs above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    let all = h.malloc(segments as u64 * SEGMENT_BYTES);
    assert!(!all.is_null(), "the whole heap, after the formatted-ahead segments came back");
    // SAFETY: `all` came from the malloc above, is freed once and not used after.
    unsafe { h.free(all) };
    assert_empty(h);
}

/// A class that outgrows its booted segment goes on in the next booted segment that no block
/// of its group is out of, not past every booted segment: with the boot on by default, a
/// burst of one size keeps its address range (r28: 16 B at 2^20 threads spanned segments 0
/// and 5, range / live 5.75). A booted segment whose group uses it is skipped and stays that
/// group's; then the class grows into the unused booted segment before its own (r33).
#[test]
fn a_booted_class_grows_into_the_next_booted_segment() {
    use std::collections::BTreeSet;
    use veballoc::kernels::heap::{boot_segments, BOOT_GROUPS, BOOT_ORDER, BOOT_SEGMENTS_PER_GROUP};
    let segments = BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP;
    // The groups boot in BOOT_ORDER on the lowest segments: a group's first is after those
    // of the groups before it there.
    let first = |g: usize| {
        BOOT_ORDER.iter().take_while(|&&x| x != g).map(|&x| boot_segments(x, segments) as u64).sum::<u64>()
    };
    // 128 B is booted on segment 4 (group 3, after groups 0 and 2, which have two segments
    // each), 4 KiB on segment 5.
    let size = 128u64;
    assert_eq!(veballoc::kernels::block::group_of(class_of(size)), 3);
    assert_eq!(veballoc::kernels::block::group_of(class_of(4096)), 4);
    let (s128, s4k) = (first(3), first(4));
    assert_eq!((s128, s4k), (4, 5));
    // With segment 5 in use by its group, 128 B grows into segment 3 (group 2's second, unused:
    // the booted segment before), not past every booted segment.
    for (busy_next, expect) in [(false, [s128, s128 + 1]), (true, [s128 - 1, s128])] {
        let cpu = CpuHeap::new(segments, 1);
        let h = cpu.heap();
        assert!(h.boot_all());
        // Segment 5's group in use: it is not taken back from under it.
        let other = if busy_next { h.malloc(4096) } else { core::ptr::null_mut() };
        let n = SEGMENT_BYTES / size + 1024;
        let ptrs: Vec<_> = (0..n).map(|_| h.malloc(size)).collect();
        assert!(ptrs.iter().all(|p| !p.is_null()));
        let base = h.segment_addr(0);
        let segs: BTreeSet<u64> = ptrs.iter().map(|&p| (p as u64 - base) / SEGMENT_BYTES).collect();
        assert_eq!(segs.into_iter().collect::<Vec<_>>(), expect, "busy_next {busy_next}");
        if busy_next {
            assert_eq!((other as u64 - base) / SEGMENT_BYTES, s4k);
        }
        h.validate().expect("heap consistent");
        for p in ptrs {
            // SAFETY: each p came from the mallocs above, is freed once and not used after.
            unsafe { h.free(p) };
        }
        if busy_next {
            // SAFETY: `other` came from the malloc above, is freed once and not used after.
            unsafe { h.free(other) };
        }
        assert_empty(h);
    }
}

/// Group 1 (32 B, and the 16-byte packed band that serves every warp of mixed sizes up to
/// 256 B) boots last (`BOOT_ORDER`), so that its bursts grow from its booted segment into the
/// fresh ones right after it, not through the other groups' booted segments by take-backs
/// (on the GPU those came after its formats: mixed sizes up to 64 B spanned 2.4-2.6 times
/// their live bytes, NOTES r47).
#[test]
fn the_packed_16_byte_group_boots_last_and_grows_into_fresh_segments() {
    use std::collections::BTreeSet;
    use veballoc::kernels::block::group_of;
    use veballoc::kernels::class::PACKED16_CLASS;
    use veballoc::kernels::heap::{boot_segments, BOOT_GROUPS, BOOT_SEGMENTS_PER_GROUP};
    let segments = BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP;
    let g = group_of(PACKED16_CLASS);
    assert_eq!(group_of(class_of(32)), g);
    let booted: u64 = (0..BOOT_GROUPS).map(|x| boot_segments(x, segments) as u64).sum();
    let cpu = CpuHeap::new(segments, 1);
    let h = cpu.heap();
    assert!(h.boot_all());
    let n = SEGMENT_BYTES / 32 + 1024;
    let ptrs: Vec<_> = (0..n).map(|_| h.malloc(32)).collect();
    assert!(ptrs.iter().all(|p| !p.is_null()));
    let base = h.segment_addr(0);
    let segs: BTreeSet<u64> = ptrs.iter().map(|&p| (p as u64 - base) / SEGMENT_BYTES).collect();
    assert_eq!(
        segs.into_iter().collect::<Vec<_>>(),
        [booted - 1, booted],
        "its booted segment, then the next"
    );
    h.validate().expect("heap consistent");
    for p in ptrs {
        // SAFETY: each p came from the mallocs above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
    // The packed band itself (mixed 16 and 32 B, 16-byte units) on a new heap: the same.
    let cpu = CpuHeap::new(segments, 1);
    let h = cpu.heap();
    assert!(h.boot_all());
    let sizes: Vec<u64> = (0..32).map(|l| 16 << (l % 2)).collect();
    let warps = SEGMENT_BYTES / (24 * 32) + 64;
    let ptrs: Vec<_> = (0..warps).flat_map(|_| cpu.warp_malloc_packed(&sizes)).collect();
    assert!(ptrs.iter().all(|p| !p.is_null()));
    let segs: BTreeSet<u64> = ptrs.iter().map(|&p| (p as u64 - h.segment_addr(0)) / SEGMENT_BYTES).collect();
    assert_eq!(segs.into_iter().collect::<Vec<_>>(), [booted - 1, booted], "packed: the same two segments");
    assert_eq!(h.validate().expect("heap consistent").live_packed, ptrs.len() as u64);
    for p in ptrs {
        // SAFETY: each p came from the warp_malloc_packed calls above, is freed once and not
        // used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// A request whose class's slices are 16-byte aligned never falls back to a class of 8-byte
/// aligned slices (24 B, and 72, 88, 104, 120 B): its size may need 16. With one segment,
/// formatted for the group of 72..128 B (by a 100-byte request), 64-byte requests took 72-byte
/// slices, 8-aligned every other one, and `malloc_layout(64, 16)` got null for those; with one
/// formatted for 24..32 B, 16-byte requests took 24-byte slices (review of r31; since r36 24 B
/// shares 16 B's group, and the pair checks that 16 B then takes its own blocks).
#[test]
fn a_fallback_keeps_the_alignment_a_request_is_promised() {
    use veballoc::kernels::class::align_of_request;
    for (first, size) in [(100u64, 64u64), (24, 16), (104, 80)] {
        let cpu = CpuHeap::new(1, 1);
        let h = cpu.heap();
        let a = h.malloc(first);
        assert!(!a.is_null());
        let ps: Vec<_> = (0..8).map(|_| h.malloc(size)).collect();
        for &p in &ps {
            assert!(!p.is_null(), "{size} B after {first} B");
            let align = align_of_request(size);
            assert!((p as u64).is_multiple_of(align), "{size} B after {first} B: {p:?} not {align}-aligned");
            assert!(h.usable_size(p).is_multiple_of(16), "{size} B took a {}-byte slice", h.usable_size(p));
        }
        // A 16-aligned layout of 64 bytes where the group of 72..128 B has room (with only
        // the 16..24 B group's segment, 64 B has none: no smaller class serves it).
        let q = h.malloc_layout(core::alloc::Layout::from_size_align(64, 16).unwrap());
        assert_eq!(!q.is_null(), first != 24, "{q:?}");
        assert!((q as u64).is_multiple_of(16), "{q:?}");
        for p in ps.into_iter().chain([a]).chain((!q.is_null()).then_some(q)) {
            // SAFETY: ps, a and q (when not null) came from this heap above, live; each freed once.
            unsafe { h.free(p) };
        }
        assert_empty(h);
    }
}

/// `realloc` keeps a pointer in place only where it has the alignment the new size is
/// promised: a 72-byte slice is 8-aligned, and 64 bytes need 16 (review of r31).
#[test]
fn realloc_in_place_keeps_the_promised_alignment() {
    use veballoc::kernels::class::align_of_request;
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    set_host_thread_index(0);
    let mut live = Vec::new();
    for _ in 0..4 {
        let p = h.malloc(72);
        assert!(!p.is_null());
        // SAFETY: p came from the malloc above, owned here; q replaces it (asserted non-null).
        let q = unsafe { h.realloc(p, 64) };
        assert!(!q.is_null());
        assert!((q as u64).is_multiple_of(align_of_request(64)), "{p:?} -> {q:?}");
        live.push(q);
    }
    for p in live {
        // SAFETY: each p is a q of the reallocs above, live and owned here, freed once.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// A shrink that moves (for alignment: 24 B to 16 B) copies what the new slice holds, not the
/// old size: it copied 24 bytes into the 16-byte slice, over the 8 bytes after it (another
/// thread's allocation in the review's test; review of r39).
#[test]
fn a_shrink_that_moves_copies_no_more_than_the_new_slice() {
    const CANARY: u64 = 0x1111_2222_3333_4444;
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    set_host_thread_index(0);
    let (a, p) = (h.malloc(24), h.malloc(24));
    assert_eq!(p as u64 % 16, 8, "the second 24-byte slice is 8 mod 16");
    // SAFETY: p holds 24 bytes.
    unsafe { (0..3).for_each(|i| (p as *mut u64).add(i).write(0xdead_0000 + i as u64)) };
    // Slices of a fresh 16-byte block go out in order: the moved one is `first + 16`, and
    // the 16 bytes after it are free heap memory (the allocator keeps no header there).
    let first = h.malloc(16);
    let after = first as u64 + 32;
    // SAFETY: a free 16-byte slice of the heap's memory, which no one else uses here.
    unsafe { (after as *mut u64).write(CANARY) };
    // SAFETY: p came from the malloc above, live and owned here; it moves to q (asserted next)
    // and is not used after.
    let q = unsafe { h.realloc(p, 16) };
    assert_eq!(q as u64, first as u64 + 16, "moved to the next 16-byte slice");
    // SAFETY: both are in the heap's memory; q holds 16 bytes.
    unsafe {
        assert_eq!(((q as *const u64).read(), (q as *const u64).add(1).read()), (0xdead_0000, 0xdead_0001));
        assert_eq!((after as *const u64).read(), CANARY, "realloc wrote past the new slice");
    }
    // SAFETY: first came from the malloc above, is freed once and not used after.
    unsafe { h.free(first) };
    // SAFETY: q came from the realloc above, is freed once and not used after.
    unsafe { h.free(q) };
    // SAFETY: a came from the malloc above, is freed once and not used after.
    unsafe { h.free(a) };
    assert_empty(h);
}

/// A pointer inside a slice or a run was never handed out: `usable_size` says 0 for it (it
/// gave the whole slice's or run's size) and `realloc` refuses it, counted as an invalid free
/// (it moved 64 bytes from 48 bytes into a 64-byte slice: 48 of them its neighbour's; review
/// of r39).
#[test]
fn interior_pointers_have_no_usable_size() {
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    set_host_thread_index(0);
    let (a, b) = (h.malloc(64), h.malloc(64));
    assert_eq!(b as u64, a as u64 + 64, "neighbouring slices");
    fill(a, 64, 1);
    fill(b, 64, 2);
    // SAFETY: inside a's slice and the run's first block.
    let inner = unsafe { a.add(48) };
    assert_eq!(h.usable_size(inner), 0, "48 bytes into a 64-byte slice");
    let run = h.malloc(3 << 20);
    assert!(h.usable_size(run) >= 3 << 20, "a run's start");
    // SAFETY: as above.
    assert_eq!(h.usable_size(unsafe { run.add(4096) }), 0, "inside a run's first block");
    let before = h.counter(counter::INVALID_FREE).load_relaxed();
    // SAFETY: not a valid realloc, on purpose: `inner` points inside a's live slice, which the
    // heap must refuse (null) and count (asserted next) without touching or freeing it.
    assert!(unsafe { h.realloc(inner, 256) }.is_null(), "realloc of a pointer inside a slice");
    assert_eq!(h.counter(counter::INVALID_FREE).load_relaxed(), before + 1);
    check(a, 64, 1);
    check(b, 64, 2);
    for p in [a, b, run] {
        // SAFETY: a, b and run came from the mallocs above (live: the realloc above was refused),
        // each freed once and not used after.
        unsafe { h.free(p) };
    }
    h.trim();
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.bytes_in_use, s.invalid_frees), (0, 1), "{s:?}");
}

/// `malloc_warp` and `malloc_block` serve a size that `malloc` serves with a run of 64 KiB
/// blocks as `malloc` does: they gave 300000 bytes a slice of a 2 MiB block, formatting a
/// segment for that group (review of r39).
#[test]
fn collective_paths_serve_unit_run_sizes_as_malloc_does() {
    use veballoc::kernels::heap::{takes_slice, takes_unit_run};
    const SIZE: u64 = 300_000;
    assert!(takes_unit_run(SIZE) && !takes_slice(SIZE));
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    set_host_thread_index(0);
    let layout_of = |p: *mut u8| {
        let s = h.validate().unwrap();
        // SAFETY: each call below passes a fresh allocation of this heap, freed once here.
        unsafe { h.free(p) };
        h.trim();
        (s.whole_blocks, s.segments_per_group)
    };
    let by_malloc = layout_of(h.malloc(SIZE));
    // SAFETY: a host warp (and block) is this one thread, which makes the call alone.
    assert_eq!(layout_of(unsafe { h.malloc_warp(SIZE) }), by_malloc, "malloc_warp");
    // SAFETY: as above.
    assert_eq!(layout_of(unsafe { h.malloc_block(SIZE) }), by_malloc, "malloc_block");
    assert_empty(h);
}

#[test]
fn segment_uses_say_which_group_holds_each_segment_and_its_blocks_out() {
    use veballoc::kernels::segment::SegKind;
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    let uses = h.segment_uses();
    assert_eq!(uses.len(), 8);
    assert!(uses.iter().all(|u| u.kind == SegKind::Free && u.blocks_out == 0), "{uses:?}");
    let p = h.malloc(16);
    assert!(!p.is_null());
    let run = h.malloc(2 * SEGMENT_BYTES);
    assert!(!run.is_null());
    let uses = h.segment_uses();
    let seg = |p: *mut u8| ((p as u64 - h.mem()) / SEGMENT_BYTES) as usize;
    let g16 = veballoc::kernels::block::group_of(class_of(16));
    assert_eq!(uses[seg(p)].kind, SegKind::Group(g16), "{uses:?}");
    assert_eq!(uses[seg(p)].blocks_out, 1, "the 16-byte slot's one block: {uses:?}");
    let per = (SEGMENT_BYTES / RUN_BLOCK_BYTES) as u32;
    assert!(uses[seg(run)].blocks_out == per && uses[seg(run) + 1].blocks_out == per, "{uses:?}");
    // SAFETY: p came from the malloc above, is freed once and not used after.
    unsafe { h.free(p) };
    // SAFETY: run came from the malloc above, is freed once and not used after.
    unsafe { h.free(run) };
    assert_empty(h);
    assert!(h.segment_uses().iter().all(|u| u.kind == SegKind::Free && u.blocks_out == 0));
}

#[test]
fn a_small_class_s_block_used_up_exactly_leaves_no_block_claimed_ahead() {
    // 16..32 B install on demand (`installs_on_demand`): the take of a block's last slice
    // empties the slot instead of claiming the next block for nobody.
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    let out = || h.segment_uses().iter().map(|u| u.blocks_out).sum::<u32>();
    let per = slices_per_block(class_of(16));
    let mut ptrs: Vec<*mut u8> = (0..per).map(|_| h.malloc(16)).collect();
    assert!(ptrs.iter().all(|p| !p.is_null()));
    assert_eq!(out(), 1, "a block claimed ahead of any request");
    ptrs.push(h.malloc(16));
    assert!(!ptrs[per as usize].is_null());
    assert_eq!(out(), 2, "the next request installs the next block");
    for p in ptrs {
        // SAFETY: each p came from the mallocs above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// Installs of `size` by threads 0, 7, 14, .. (`installs` of them) on a new four-segment heap
/// whose every row has 64 slots (each thread installs a block of its own): the blocks' indexes
/// in segment 0, sorted, one per install. Everything goes back after.
fn first_install_blocks(size: u64, installs: u64) -> Vec<u64> {
    use veballoc::kernels::class::{group_block_bytes, group_of};
    use veballoc::kernels::heap::HeapLayout;
    let g = group_of(class_of(size));
    let cpu = CpuHeap::with_layout(HeapLayout::new(4, 64, veballoc::kernels::CHECKS).with_pin_shift(64));
    let h = cpu.heap();
    let mut blocks = Vec::new();
    let mut ptrs = Vec::new();
    for t in 0..installs {
        set_host_thread_index(t * 7);
        let p = h.malloc(size);
        assert!(!p.is_null());
        let off = p as u64 - h.mem();
        assert_eq!(off / SEGMENT_BYTES, 0, "one segment holds these blocks");
        blocks.push(off % SEGMENT_BYTES / group_block_bytes(g));
        ptrs.push(p);
    }
    set_host_thread_index(0);
    blocks.sort_unstable();
    blocks.dedup();
    assert_eq!(blocks.len() as u64, installs, "{size} B: one block per slot: {blocks:?}");
    for p in ptrs {
        // SAFETY: each p came from the mallocs above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
    blocks
}

/// Installs of the 48/64-byte group (a segment's 64 blocks in one leaf word) take the lowest
/// free blocks side by side (claims ranked by the group's ticket, `block::ranks_claims`), not
/// blocks spread over the whole segment by a hash of the thread: with spreads, a burst's first
/// blocks reached the segment's end (range / live of 1M x 48 B 1.33 on the GPU).
#[test]
fn installs_of_the_48_64_byte_group_take_the_lowest_blocks() {
    use veballoc::kernels::block::ranks_claims;
    use veballoc::kernels::class::group_of;
    use veballoc::kernels::veb::RANK_SPAN;
    assert!(ranks_claims(group_of(class_of(64))) && ranks_claims(group_of(class_of(48))));
    let blocks = first_install_blocks(64, 16);
    // Tickets drawn one after another skip up to RANK_SPAN - 1 free blocks each, the skipped
    // ones filled by later ranks: 16 installs stay within the segment's lowest 2 * 16 + 1.
    let highest = *blocks.last().unwrap();
    assert!(highest <= 2 * RANK_SPAN as u64, "blocks {blocks:?} spread over the segment");
}

/// Installs of the 16-24 and 32-byte groups (segments of several leaf words) take blocks among
/// the lowest free ones, by a rank a hash of the thread draws (`block::hashes_claims`), not at
/// a position it draws: with positions, a burst's last installs scattered over their word, and
/// 1M x 24 B spanned 1.33 times its live bytes on the GPU. Sixteen installs of thread indexes
/// 0, 7, 14, .. on a new segment stay within the lowest 16 + `HASH_RANK_SPAN` blocks (with
/// positions this set reached block 62 at both sizes).
#[test]
fn installs_of_the_small_groups_take_blocks_among_the_lowest() {
    use veballoc::kernels::block::{hashes_claims, ranks_claims, HASH_RANK_SPAN};
    use veballoc::kernels::class::group_of;
    const INSTALLS: u64 = 16;
    for size in [24u64, 32] {
        let g = group_of(class_of(size));
        assert!(hashes_claims(g) && !ranks_claims(g), "{size} B");
        let blocks = first_install_blocks(size, INSTALLS);
        let highest = *blocks.last().unwrap();
        assert!(
            highest < INSTALLS + HASH_RANK_SPAN as u64,
            "{size} B: blocks {blocks:?} spread over the word"
        );
    }
}

/// 24-byte slices share group 0 with 16 B (since r36): 2730 to a 64 KiB block, 16 bytes left at
/// its end. A one-segment heap filled with 24-byte requests (warps of 32; 2730 is no multiple
/// of 32) hands out every slice of every block, none twice, none in a block's tail, each
/// 8-aligned; a free inside a tail is invalid and changes nothing (review of r36).
#[test]
fn a_segment_of_24_byte_slices_fills_exactly() {
    use veballoc::kernels::class::group_of;
    let c = class_of(24);
    let block = 64u64 << 10;
    assert_eq!(
        (group_of(c), veballoc::kernels::block::block_bytes(c), slices_per_block(c)),
        (0, block, 2730)
    );
    let cpu = CpuHeap::new(1, 1);
    let h = cpu.heap();
    set_host_thread_index(0);
    let mut all = Vec::new();
    loop {
        let got: Vec<_> = cpu.warp_malloc(&[24; 32]).into_iter().filter(|p| !p.is_null()).collect();
        let n = got.len();
        all.extend(got);
        if n < 32 {
            break;
        }
    }
    let want = 256 * 2730;
    assert_eq!(all.len(), want, "every 24-byte slice of the segment");
    let mut offs: Vec<u64> = all.iter().map(|&p| p as u64 - h.segment_addr(0)).collect();
    offs.sort_unstable();
    offs.dedup();
    assert_eq!(offs.len(), want, "a slice handed out twice");
    for &o in &offs {
        let in_block = o % block;
        assert!(in_block.is_multiple_of(24) && in_block / 24 < 2730 && o.is_multiple_of(8), "offset {o}");
    }
    assert!(all.iter().all(|&p| h.usable_size(p) == 24));
    for b in [0u64, 17, 255] {
        let tail = h.segment_addr(0) + b * block + 2730 * 24;
        // SAFETY: not a valid free, on purpose: the end of block b's last slice (2730 x 24 B), where
        // no slice starts, which the heap must refuse and count (asserted below) like the next
        // one; a refused free changes nothing and never touches memory there.
        unsafe { h.free(tail as *mut u8) };
        // SAFETY: as above: not a valid free, on purpose (inside the block's tail).
        unsafe { h.free((tail + 8) as *mut u8) };
    }
    assert_eq!(h.counter(counter::INVALID_FREE).load_acquire(), 6);
    h.counter(counter::INVALID_FREE).store_relaxed(0);
    assert_eq!(h.validate().expect("consistent").bytes_in_use, want as u64 * 24);
    for p in all {
        // SAFETY: each p came from the mallocs above (asserted distinct; live, the frees above were
        // refused), freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// A 16-byte request never takes a 24-byte slice (8-aligned; `malloc`'s fallback skips classes
/// whose slices are less aligned than the request needs) though both share group 0: in a
/// one-segment heap whose 24-byte block is current, 16 B gets the other 255 blocks, then
/// null, and 24 B still has room. With 24 B in its own group the pair in
/// `a_fallback_keeps_the_alignment_a_request_is_promised` covered this; since r36 16 B takes
/// its own blocks there (review of r36: a mutation that let 16 B fall back to 24 B passed every
/// other test). Then the freed 16-byte blocks serve 24 B.
#[test]
fn sixteen_bytes_never_take_the_24_byte_slices_of_their_group() {
    let cpu = CpuHeap::new(1, 1);
    let h = cpu.heap();
    set_host_thread_index(0);
    let a = h.malloc(24);
    assert!(!a.is_null());
    let mut sixteen = Vec::new();
    loop {
        let p = h.malloc(16);
        if p.is_null() {
            break;
        }
        assert_eq!(h.usable_size(p), 16, "16 B took another class");
        assert!((p as u64).is_multiple_of(16));
        sixteen.push(p);
    }
    assert_eq!(sixteen.len(), 255 * 4096);
    let b = h.malloc(24);
    assert!(!b.is_null() && h.usable_size(b) == 24);
    h.validate().expect("consistent");
    for p in sixteen.drain(..) {
        // SAFETY: each p came from the mallocs above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    let more: Vec<_> = (0..200_000).map(|_| h.malloc(24)).collect();
    assert!(more.iter().all(|p| !p.is_null()));
    h.validate().expect("consistent");
    for p in more.into_iter().chain([a, b]) {
        // SAFETY: `more`, a and b came from the mallocs above, live; each freed once.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}
