//! Requests above the largest slice (1 MiB) take runs of 256 KiB blocks, and those runs may
//! cross from one segment into the next (issue 9: a run used to stay in one segment, and a
//! request above a segment took whole segments plus the first blocks of the next, so that
//! 20 MiB requests filled 62.5% of the heap and 9 MiB ones 56%).

mod common;

use std::sync::Barrier;

use veballoc::kernels::arch::set_host_thread_index;
use veballoc::kernels::class::{block_run_len, RUN_BLOCK_BYTES, RUN_GROUP};
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::counter;
use veballoc::kernels::SEGMENT_BYTES;

use common::{assert_empty, check, fill};

const MIB: u64 = 1 << 20;

/// Fills a fresh heap of `segments` segments with requests of `size` until null, `threads`
/// threads at once (each on its own multiprocessor); returns the share of the heap asked for.
/// The heap validates at the end and is whole again after the frees.
fn fill_share(segments: u32, size: u64, threads: u64) -> f64 {
    let cpu = CpuHeap::new(segments, threads.next_power_of_two() as u32);
    let h = cpu.heap();
    let start = Barrier::new(threads as usize);
    let got: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let start = &start;
                s.spawn(move || {
                    set_host_thread_index(t);
                    start.wait();
                    let mut mine = Vec::new();
                    loop {
                        let p = h.malloc(size);
                        if p.is_null() {
                            return mine;
                        }
                        fill(p, size, p as u64);
                        mine.push(p as u64);
                    }
                })
            })
            .collect();
        hs.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let ptrs: Vec<u64> = got.into_iter().flatten().collect();
    let s = h.validate().expect("heap consistent");
    let each = block_run_len(size) as u64 * RUN_BLOCK_BYTES;
    assert_eq!(s.bytes_in_use, ptrs.len() as u64 * each, "size {size}: {s:?}");
    for &p in &ptrs {
        check(p as *mut u8, size, p);
        // SAFETY: each p came from one thread's malloc above (joined), is freed once, unused after.
        unsafe { h.free(p as *mut u8) };
    }
    assert_empty(h);
    (ptrs.len() as u64 * size) as f64 / h.capacity() as f64
}

/// Every run length packs the heap: the runs a request cannot fit in what is left of one
/// segment go on in the next. One thread, then four at once (each format adds blocks that the
/// others' lowest-first claims use).
#[test]
fn runs_of_any_length_fill_the_heap() {
    const SEGMENTS: u32 = 32;
    for size in [5 * MIB, 9 * MIB, 17 * MIB, 20 * MIB, 40_000_000, 100 * MIB] {
        for threads in [1, 4] {
            let share = fill_share(SEGMENTS, size, threads);
            println!("size {size:>9}, {threads} threads: {:.1}% of the heap", 100.0 * share);
            // What fits of whole requests, less a run for each thread that may be left
            // without a free run to grow into at the end.
            let fit =
                (SEGMENTS as u64 * SEGMENT_BYTES / (block_run_len(size) as u64 * RUN_BLOCK_BYTES)) * size;
            let want = (fit - (threads - 1) * size) as f64 / (SEGMENTS as u64 * SEGMENT_BYTES) as f64;
            assert!(share >= want.min(0.9), "size {size}, {threads} threads: {share:.3} of the heap");
        }
    }
}

/// A run that does not fit in what is left of a segment starts there and goes on in the
/// next one: the validator follows it, a free of a pointer into its second segment is an
/// invalid free, a second free is counted, and its free gives every block back.
#[test]
fn a_run_crosses_into_the_next_segment() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    let a = h.malloc(5 * MIB);
    let b = h.malloc(20 * MIB);
    assert!(!a.is_null() && !b.is_null());
    assert_eq!(b as u64, a as u64 + 5 * MIB, "the run starts right after the first one");
    assert_eq!(h.usable_size(b), 20 * MIB);
    fill(a, 5 * MIB, 1);
    fill(b, 20 * MIB, 2);
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.bytes_in_use, s.crossing_runs, s.whole_blocks[RUN_GROUP]), (25 * MIB, 1, 100), "{s:?}");
    assert_eq!(s.segments_per_group[RUN_GROUP], 2, "{s:?}");
    // The first block of the run in the second segment: inside the run.
    // SAFETY: not a valid free, on purpose: a pointer inside a live run, which the heap must
    // refuse and count (asserted next); a refused free changes nothing and never touches
    // the run's memory.
    unsafe { h.free((h.mem() + SEGMENT_BYTES) as *mut u8) };
    assert_eq!(h.counter(counter::INVALID_FREE).load_acquire(), 1);
    check(b, 20 * MIB, 2);
    // SAFETY: b came from the malloc above; freed once here, not used after (the next free is
    // the test's deliberate second free).
    unsafe { h.free(b) };
    // SAFETY: not a valid free, on purpose: a second free of the run, which the heap must refuse
    // and count (asserted next: whole runs are freed by a CAS on their kind, so it cannot
    // free again); no malloc ran in between, so no live memory is named.
    unsafe { h.free(b) };
    assert_eq!(h.counter(counter::DOUBLE_FREE).load_acquire(), 1, "a second free of a run is counted");
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.bytes_in_use, s.crossing_runs), (5 * MIB, 0), "{s:?}");
    check(a, 5 * MIB, 1);
    // SAFETY: a came from the malloc above, is freed once and not used after.
    unsafe { h.free(a) };
    assert_empty(h);
}

/// A freed run gives the segments it covered whole straight back to the segment tree, so
/// that every group can use them at once (as runs of whole segments did): no pending
/// segment waits for memory to run short. The blocks of the segments it shares with others
/// go back to their group's tree.
#[test]
fn a_freed_run_returns_the_segments_it_covers() {
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    let small = h.malloc(16);
    let a = h.malloc(5 * MIB);
    let big = h.malloc(40 * MIB);
    assert!(!small.is_null() && !a.is_null() && !big.is_null());
    assert_eq!(big as u64, a as u64 + 5 * MIB);
    let s = h.validate().expect("heap consistent");
    // 16 B in segment 0; the runs in segments 1.. (5 + 40 MiB: two and a half segments).
    assert_eq!((s.free_segments, s.segments_per_group[RUN_GROUP], s.crossing_runs), (4, 3, 1), "{s:?}");
    // SAFETY: big came from the malloc above, is freed once and not used after.
    unsafe { h.free(big) };
    let s = h.validate().expect("heap consistent");
    // Segment 2 (covered whole) is free at once, without a trim or a sweep, and so is segment
    // 3, the run's end, which its free emptied (see
    // `a_freed_run_gives_back_its_end_segments_at_once`); segment 1 holds `a`.
    assert_eq!((s.free_segments, s.segments_per_group[RUN_GROUP]), (6, 1), "{s:?}");
    assert_eq!(s.bytes_in_use, 16 + 5 * MIB, "{s:?}");
    // A run of 6 segments' worth starts in the free blocks after `a`.
    let six = h.malloc(6 * SEGMENT_BYTES);
    assert_eq!(six as u64, a as u64 + 5 * MIB, "{:#x}", six as u64 - h.mem());
    for p in [small, a, six] {
        // SAFETY: small, a and six came from the mallocs above; each is freed once, unused after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// A run that needs `m - 1` free segments and the free blocks right before them finds them
/// wherever they are, not only at the lowest `m - 1` free segments: here segments 1 and 2 are
/// free after another group's segment, and segments 5 and 6 free after the free tail of a
/// segment of runs. A 36 MiB request of the churn (`cpu_churn`) got null at 69.6% live when
/// only the lowest pair was tried.
#[test]
fn a_run_finds_free_segments_after_free_blocks_above_the_lowest() {
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    let seg = |p: *mut u8| (p as u64 - h.mem()) / SEGMENT_BYTES;
    let small = h.malloc(16); // segment 0 (not the run group)
    let x = h.malloc(2 * SEGMENT_BYTES); // 1, 2
    let a = h.malloc(SEGMENT_BYTES + 8 * MIB); // 3 and the first half of 4
    let b = h.malloc(8 * MIB); // the second half of 4
    let y = h.malloc(2 * SEGMENT_BYTES); // 5, 6
    let q = h.malloc(SEGMENT_BYTES); // 7
    assert_eq!([small, x, a, b, y, q].map(seg), [0, 1, 3, 4, 5, 7]);
    assert_eq!(b as u64, a as u64 + SEGMENT_BYTES + 8 * MIB);
    // SAFETY: x, b and y came from the mallocs above; each is freed once, unused after.
    unsafe {
        h.free(x);
        h.free(b);
        h.free(y);
    }
    // Free: segments 1, 2, 5, 6 and the last 32 blocks of 4. 144 blocks need three segments,
    // or two and 16 free blocks right before them: only 5 and 6 have those.
    let big = h.malloc(2 * SEGMENT_BYTES + 4 * MIB);
    assert!(!big.is_null(), "null with segments 5 and 6 free after 8 MiB of free blocks");
    assert_eq!(big as u64, h.mem() + 4 * SEGMENT_BYTES + 8 * MIB, "{:#x}", big as u64 - h.mem());
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.free_segments, s.crossing_runs), (2, 2), "{s:?}");
    for p in [small, a, q, big] {
        // SAFETY: each came from a malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// A freed run over several segments gives back its end segments too once its free empties
/// them, not only the segments it covered whole: pending, an end stayed with the run group
/// while a claim of one segment took the lowest free one beside it, and the hole the run left
/// split into lone free segments (the CPU churn at 70% live got a 36 MiB null at 69.6% live
/// with 17 free segments, none three in a row, 13 of them such ends). Here a 24 MiB run ends
/// in segment 1, whose rest a 40 MiB run takes (through segment 3); with both freed and
/// segment 0 taken by a slice format, a second slice group's format took segment 2 (segment
/// 1 pending), and another 40 MiB request found segments 1, 3 and 4 free: null.
#[test]
fn a_freed_run_gives_back_its_end_segments_at_once() {
    let cpu = CpuHeap::new(5, 1);
    let h = cpu.heap();
    let seg = |p: *mut u8| (p as u64 - h.mem()) / SEGMENT_BYTES;
    let r0 = h.malloc(24 * MIB); // segment 0 and the first half of 1
    let r1 = h.malloc(40 * MIB); // the second half of 1, 2 and 3
    assert_eq!([r0, r1].map(seg), [0, 1]);
    assert_eq!(r1 as u64, r0 as u64 + 24 * MIB);
    // SAFETY: r0 came from the malloc above, is freed once and not used after.
    unsafe { h.free(r0) };
    let a = h.malloc(16); // a slice group formats segment 0
    assert_eq!(seg(a), 0);
    // SAFETY: r1 came from the malloc above, is freed once and not used after.
    unsafe { h.free(r1) };
    // Segments 1..=4 free: a second slice group formats the lowest, 2..=4 hold the run.
    let b = h.malloc(32);
    let big = h.malloc(40 * MIB);
    assert!(!big.is_null(), "null: the 32 B slices took segment {}", seg(b));
    assert_eq!([b, big].map(seg), [1, 2]);
    for p in [a, b, big] {
        // SAFETY: each came from a malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// Requests larger than the heap get null at once (no overflow, no sweep), and are counted.
#[test]
fn requests_above_the_heap_are_null() {
    let cpu = CpuHeap::new(2, 1);
    let h = cpu.heap();
    for size in [2 * SEGMENT_BYTES + 1, 1 << 50, u64::MAX] {
        assert!(h.malloc(size).is_null(), "{size}");
    }
    assert_eq!(h.counter(counter::OUT_OF_MEMORY).load_acquire(), 3);
    let all = h.malloc(2 * SEGMENT_BYTES);
    assert!(!all.is_null(), "the whole heap");
    // SAFETY: `all` came from the malloc above, is freed once and not used after.
    unsafe { h.free(all) };
    assert_empty(h);
}

/// Four threads allocate and free runs of every kind at once (small slices, runs of 64 KiB
/// and of 256 KiB blocks, 20 MiB, 5..35 MiB, and aligned runs of 128 KiB..16 MiB alignment),
/// holding at most three allocations each, while a fifth trims the heap over and over (as the
/// host's `trim` and the reclaim sweep do): no request may get null while less than half the
/// heap is live, every allocation keeps its contents, and the heap is whole at the end. (A
/// fresh run that formatted its segments into the tree and then claimed from it lost them to
/// other claims and reclaims: nulls with 7 MiB live of 768.)
#[test]
fn concurrent_runs_get_no_null_with_room() {
    use std::alloc::Layout;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    const SEGMENTS: u32 = 48;
    const THREADS: u64 = 4;
    const OPS: u64 = 20_000;
    let cpu = CpuHeap::new(SEGMENTS, THREADS as u32);
    let h = cpu.heap();
    let (live, worst) = (AtomicU64::new(0), AtomicU64::new(u64::MAX));
    let (nulls, done) = (AtomicU64::new(0), AtomicBool::new(false));
    std::thread::scope(|s| {
        let trimmer = s.spawn(|| {
            set_host_thread_index(THREADS);
            let mut rounds = 0u64;
            while !done.load(Relaxed) {
                h.trim();
                rounds += 1;
                std::thread::yield_now();
            }
            rounds
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (live, worst, nulls) = (&live, &worst, &nulls);
                s.spawn(move || {
                    set_host_thread_index(t);
                    let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(t + 1);
                    let mut next = move || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    };
                    let mut held: Vec<(u64, u64)> = Vec::new();
                    for op in 0..OPS {
                        let r = next();
                        if held.len() < 3 && r % 3 != 0 {
                            let (size, align) = match (r >> 8) % 6 {
                                0 => (16 + (r >> 16) % 64, 8),
                                1 => (300 << 10, 8),
                                2 => (MIB + 1 + (r >> 16) % (8 * MIB), 8),
                                3 => (5 * MIB + (r >> 16) % (30 * MIB), 8),
                                4 => (20 * MIB, 8),
                                _ => (64 + (r >> 16) % (2 * MIB), 1 << (17 + (r >> 40) % 8)),
                            };
                            let layout = Layout::from_size_align(size as usize, align as usize).unwrap();
                            let before = live.load(Relaxed);
                            let p = h.malloc_layout(layout);
                            if p.is_null() {
                                nulls.fetch_add(1, Relaxed);
                                worst.fetch_min(before, Relaxed);
                                continue;
                            }
                            assert_eq!(p as u64 % align, 0, "size {size}, align {align}");
                            fill(p, size, t << 32 | op);
                            held.push((p as u64, size << 32 | op));
                            live.fetch_add(size, Relaxed);
                        } else if !held.is_empty() {
                            let (p, v) = held.swap_remove((r % held.len() as u64) as usize);
                            let (size, tag) = (v >> 32, t << 32 | (v & 0xffff_ffff));
                            check(p as *mut u8, size, tag);
                            live.fetch_sub(size, Relaxed);
                            // SAFETY: p came from this thread's malloc and was this thread's alone (just
                            // taken out of `held`): freed once, unused after.
                            unsafe { h.free(p as *mut u8) };
                        }
                    }
                    for (p, v) in held {
                        check(p as *mut u8, v >> 32, t << 32 | (v & 0xffff_ffff));
                        // SAFETY: as above: each p was this thread's alone, freed once, unused after.
                        unsafe { h.free(p as *mut u8) };
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Relaxed);
        println!("{} trims meanwhile", trimmer.join().unwrap());
    });
    let (n, w) = (nulls.load(Relaxed), worst.load(Relaxed));
    println!(
        "{n} nulls; least live at a null: {} MiB of {}",
        if n > 0 { w >> 20 } else { 0 },
        h.capacity() >> 20
    );
    assert!(
        n == 0 || w >= h.capacity() / 2,
        "{n} nulls, one with {} MiB live of {}",
        w >> 20,
        h.capacity() >> 20
    );
    assert_empty(h);
}

/// Churn of slices, unit runs and runs of 256 KiB blocks (within and across segments), from
/// four host threads in turn. At every null for a run, the promise is checked: null only if
/// no segment (runs up to a quarter of a segment) or no `m = ceil(k / blocks per segment)`
/// consecutive segments are free of live allocations (review of r39).
#[test]
fn run_nulls_only_when_no_free_segments() {
    use veballoc::kernels::class::{block_run_len, MAX_SLICE_BYTES};
    use veballoc::kernels::heap::{takes_unit_run, unit_run_len};
    const SEG: u64 = 16 << 20;
    for seed in 0..200u64 {
        let segs = 8 + (seed % 9) as u32;
        let cpu = CpuHeap::new(segs, 4);
        let h = cpu.heap();
        let base = h.segment_addr(0);
        let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(seed + 1);
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut live: Vec<(u64, u64)> = Vec::new();
        for op in 0..4000u64 {
            let r = next();
            set_host_thread_index(r % 4);
            if live.len() < (3 + seed as usize % 14) && r % 5 < 3 {
                let size = match (r >> 8) % 5 {
                    0 => 16 + (r >> 16) % 4000,
                    1 => (100 << 10) + (r >> 16) % (900 << 10),
                    2 => (1 << 20) + 1 + (r >> 16) % (4 << 20),
                    3 => (5 << 20) + (r >> 16) % (40 << 20),
                    _ => 1 + (r >> 16) % (3 * SEG),
                };
                let p = h.malloc(size);
                if p.is_null() {
                    // The request's run, if it is one.
                    let (k, bps) = if size <= MAX_SLICE_BYTES {
                        if !takes_unit_run(size) {
                            continue;
                        }
                        (unit_run_len(size), 256u32)
                    } else {
                        (block_run_len(size), 64u32)
                    };
                    let m = if k > bps / 4 { k.div_ceil(bps) } else { 1 };
                    let mut busy = vec![false; segs as usize];
                    for &(q, len) in &live {
                        for s in (q - base) / SEG..=(q - base + len - 1) / SEG {
                            busy[s as usize] = true;
                        }
                    }
                    let free_window = busy.windows(m as usize).position(|w| w.iter().all(|b| !b));
                    if let Some(at) = free_window {
                        let s = h.validate().unwrap();
                        panic!(
                            "seed {seed} op {op}: null for {size} bytes ({k} blocks, {m} segments) \
                             while segments {at}.. hold nothing live; busy {busy:?}; {s:?}"
                        );
                    }
                    continue;
                }
                let len = h.usable_size(p);
                assert!(len >= size);
                live.push((p as u64, len));
            } else if !live.is_empty() {
                let (p, _) = live.swap_remove((r >> 3) as usize % live.len());
                // SAFETY: p came from this heap's malloc, held only in `live` (just taken out): freed once.
                unsafe { h.free(p as *mut u8) };
            }
        }
        for (p, _) in live {
            // SAFETY: each p is still live (in `live`), freed once and not used after.
            unsafe { h.free(p as *mut u8) };
        }
        assert_empty(h);
    }
}

/// Requests past what the heap holds, up to `u64::MAX`, get null from every entry point (no
/// overflow in the rounding or the run lengths); a whole-heap run and an aligned near-whole
/// one still fit (review of r39).
#[test]
fn huge_requests_are_null() {
    let cpu = CpuHeap::new(4, 2);
    let h = cpu.heap();
    let cap = h.capacity();
    for s in [
        u64::MAX,
        u64::MAX - 1,
        u64::MAX / 2,
        1 << 63,
        cap + 1,
        (1u64 << 32) * (256 << 10) + 1,
        (1u64 << 32) * (64 << 10),
    ] {
        assert!(h.malloc(s).is_null(), "{s}");
        assert!(h.calloc(1, s).is_null(), "{s}");
        assert!(h.malloc_run_aligned(s, 1 << 20).is_null(), "{s}");
        // SAFETY: a host warp (and block) is this one thread, which makes the call alone.
        assert!(unsafe { h.malloc_warp(s) }.is_null(), "{s}");
        assert!(h.malloc_packed(s).is_null(), "{s}");
    }
    assert!(h.calloc(u64::MAX, 2).is_null());
    let p = h.malloc(cap);
    assert!(!p.is_null());
    assert_eq!(h.usable_size(p), cap);
    // SAFETY: p came from the malloc above; a realloc this large fails (asserted), leaving p
    // allocated and untouched.
    assert!(unsafe { h.realloc(p, u64::MAX) }.is_null());
    // SAFETY: p is still allocated (the realloc failed), freed once and not used after.
    unsafe { h.free(p) };
    let p = h.malloc_run_aligned(cap - (16 << 20), 16 << 20);
    assert!(!p.is_null());
    // SAFETY: p came from the malloc_run_aligned above, is freed once and not used after.
    unsafe { h.free(p) };
    assert_empty(h);
}
