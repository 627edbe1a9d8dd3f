//! Runs of blocks in current slots, seen by the validator, by diag's occupancy and under
//! concurrent sweeps and trims. A block a run has wholly passed can recycle while the run is
//! still current and then belong to another slot: the readers of the metadata must not read it
//! through the stale run's range (found by review, 2026-11-24).

mod common;

use common::take_slices;
use veballoc::kernels::arch::set_host_thread_index;
use veballoc::kernels::block::{block_bytes, class_of, slices_per_block};
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::HeapLayout;
use veballoc::kernels::slice::max_run;

/// A thread index on shard 1 (of 2) whose claim spread is 0 (see `claim_from_tree`), so that
/// its install takes the lowest free block.
const SHARD1_SPREAD0: u64 = 89;

fn heap(shards: u32) -> CpuHeap {
    CpuHeap::with_layout(HeapLayout::new(1, shards, veballoc::kernels::CHECKS).with_pin_shift(64))
}

/// The blocks of class 256 B (a packed class too, with runs of several blocks: up to a whole
/// segment on these one-slot rows, `slice::ROW_RUN_SLICES`): 1 MiB. (64 B, 256 KiB blocks,
/// had runs of two until r32.)
const BLOCK: u64 = 1 << 20;
/// The class these tests run: 256 B.
const SIZE: u64 = 256;

/// Sets up: shard 0 of class 256 B holds the run [1, 2] with block 1 wholly handed out and
/// then wholly freed (recycled while the run is current); block 0 is wholly live.
fn stale_run(h: &veballoc::kernels::DeviceHeap) -> (usize, u32) {
    let c = class_of(SIZE);
    let per = slices_per_block(c);
    assert!(max_run(c, h.layout().row_shards(c)) >= 2 && block_bytes(c) == BLOCK);
    set_host_thread_index(0);
    let t0 = take_slices(h, c, per).expect("block 0");
    assert_eq!((t0.base, t0.got), (h.mem(), per));
    if h.checking() {
        // SAFETY: t0 is the take just above, held by this test and not marked yet.
        unsafe { h.hand_out().mark_handed_out(t0.base, c, t0.got) };
    }
    let t1 = take_slices(h, c, per).expect("block 1, first of the run [1, 2]");
    assert_eq!((t1.base, t1.got, t1.got2), (h.mem() + BLOCK, per, 0));
    // Every slice of block 1 comes back: it recycles while the run [1, 2] is current.
    // SAFETY: t1 is block 1's every slice, taken above, handed to no one and given back once.
    unsafe { h.slots().release_slices(0, 1, c, 0, per) };
    (c, per)
}

/// The validator looks a block up by "the first slot whose run's range contains it"; a block
/// that left a still-current run (recycled) and was installed by another slot of its class
/// is then read with the stale run's count (every slice passed): its live count is wrong
/// (and with checks the validator reports `HandOutBits` on a consistent heap).
#[test]
fn validator_reads_a_recycled_block_through_a_stale_run_range() {
    let cpu = heap(2);
    let h = cpu.heap();
    let (c, per) = stale_run(h);
    // Shard 1 installs a block: the lowest free one is block 1.
    set_host_thread_index(SHARD1_SPREAD0);
    let q = take_slices(h, c, 1).expect("a slice on shard 1");
    assert_eq!(q.base, h.mem() + BLOCK, "shard 1 got the recycled block 1");
    if h.checking() {
        // SAFETY: q is the take just above, held by this test and not marked yet.
        unsafe { h.hand_out().mark_handed_out(q.base, c, 1) };
    }
    // Live: block 0 whole (per) + one slice of block 1.
    let s = h.validate();
    eprintln!("validate: {s:?}");
    let s = s.expect("a consistent heap validates");
    assert_eq!(s.live_slices[c], per as u64 + 1, "live slices of class 256 B: {s:?}");
}

/// The same through the class's packed row (256 B is a packed class, the unit of warps that
/// pack more than 32 KiB): the packed block is read through the class row's stale run.
#[test]
fn validator_reads_a_recycled_packed_block_through_a_stale_run_range() {
    let cpu = heap(2);
    let h = cpu.heap();
    let (_c, _per) = stale_run(h);
    set_host_thread_index(0);
    let ps = cpu.warp_malloc_packed(&[4096; 9]);
    assert_eq!(ps[0] as u64, h.mem() + BLOCK, "the packed row got the recycled block 1");
    let s = h.validate();
    eprintln!("validate: {s:?}");
    let s = s.expect("a consistent heap validates");
    assert_eq!(s.live_packed, 9, "nine packed objects: {s:?}");
}

/// diag's occupancy reads a slot's first block only: the untouched later blocks of a run
/// count as retired blocks full of live slices.
#[test]
fn occupancy_counts_a_runs_untouched_blocks_as_live() {
    let cpu = heap(1);
    let h = cpu.heap();
    let c = class_of(SIZE);
    assert!(max_run(c, h.layout().row_shards(c)) >= 2);
    let per = slices_per_block(c);
    set_host_thread_index(0);
    let t0 = take_slices(h, c, per).unwrap();
    let t1 = take_slices(h, c, 10).unwrap();
    if h.checking() {
        // SAFETY: t0 and t1 are the takes just above (one piece each, asserted by the
        // validation below), held by this test and not marked yet.
        unsafe {
            h.hand_out().mark_handed_out(t0.base, c, t0.got);
            h.hand_out().mark_handed_out(t1.base, c, t1.got);
        }
    }
    let s = h.validate().expect("consistent");
    assert_eq!(s.live_slices[c], per as u64 + 10);
    let o = h.occupancy();
    let co = o.classes[c];
    eprintln!("{co:?}");
    assert_eq!(
        co.current_live + co.retired_live,
        per as u64 + 10,
        "occupancy's live slices of class 256 B: {co:?}"
    );
}

/// An install asked for a whole segment's blocks at once (512 slices of 32 KiB, 32 to a 1 MiB
/// block: the waiting count asks for sixteen) takes a fresh segment with every block kept
/// while its group's tree is empty (`Blocks::claim_whole_fresh_segment`): the take's two
/// pieces are the segment's first two blocks, the blocks it passed recycle, the validator
/// agrees, and everything comes back.
#[test]
fn a_whole_segment_install_takes_a_fresh_segment() {
    use veballoc::kernels::block::{group_blocks_per_segment, group_of};
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    set_host_thread_index(0);
    let c = class_of(32768);
    let g = group_of(c);
    assert_eq!((slices_per_block(c), group_blocks_per_segment(g)), (32, 16));
    let t = take_slices(h, c, 512).expect("a heap with room");
    assert_eq!((t.base, t.got, t.base2, t.got2), (h.mem(), 32, h.mem() + BLOCK, 32), "{t:?}");
    common::mark_taken(h, c, &t);
    let s = h.validate().expect("consistent");
    // (The exhauster installs the slot's next run before the blocks it passed recycle, so a
    // second fresh segment holds that run: `Slots::took`, review of r48, left as it was.)
    assert!((1..=2).contains(&s.segments_per_group[g]), "{s:?}");
    assert_eq!(s.live_slices[c], 64, "{s:?}");
    // SAFETY: the two pieces of t (blocks 0 and 1, 32 slices each, asserted above; marked
    // handed out with the checks, unmarked as the free would), handed to no one, go back once.
    unsafe {
        for r in 0..t.total() {
            h.free(t.addr(r, 32768) as *mut u8);
        }
    }
    h.trim();
    let s = h.validate().expect("consistent");
    assert_eq!((s.bytes_in_use, s.blocks_in_use()), (0, 0), "{s:?}");
}

mod stress {
    use super::common::{check, fill};
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    /// Threads on shared slots take runs (warps and big takes), free, and sweep/trim
    /// concurrently on a small heap; no address is handed out twice, every slice keeps its
    /// contents, and the heap is whole at the end.
    #[test]
    fn runs_under_sweeps_and_trims() {
        const THREADS: usize = 8;
        const ROUNDS: usize = 40000;
        // 256 B-4 KiB: runs of up to a whole segment (one slot a row here, `ROW_RUN_SLICES`;
        // whole-segment runs take fresh segments while their group's tree is empty); 16-64 B
        // runs of one since r31/r32.
        let sizes = [16u64, 24, 48, 64, 256, 2560, 3072, 4096, 160, 300_000];
        let cpu = CpuHeap::with_layout(HeapLayout::new(8, 4, veballoc::kernels::CHECKS).with_pin_shift(64));
        let h = cpu.heap();
        let live_set = Mutex::new(HashSet::<u64>::new());
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (cpu, live_set, stop) = (&cpu, &live_set, &stop);
            s.spawn(move || {
                set_host_thread_index(1000);
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if i.is_multiple_of(3) {
                        cpu.heap().trim();
                    } else {
                        cpu.heap().slots().trim_idle();
                    }
                    i += 1;
                    std::thread::yield_now();
                }
            });
            let hs: Vec<_> = (0..THREADS)
                .map(|t| {
                    s.spawn(move || {
                        let h = cpu.heap();
                        set_host_thread_index(t as u64);
                        let mut rng = StdRng::seed_from_u64(
                            std::env::var("SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
                                * 1000
                                + 77
                                + t as u64,
                        );
                        let mut live: Vec<(u64, u64, u64)> = Vec::new();
                        for r in 0..ROUNDS {
                            if live.len() < 400 && rng.gen_bool(0.55) {
                                let size = sizes[rng.gen_range(0..sizes.len())];
                                let tag = (t as u64) << 48 | (r as u64) << 16;
                                let mut got: Vec<u64> = Vec::new();
                                if (2560..=4096).contains(&size) && rng.gen_bool(0.3) {
                                    let c = class_of(size);
                                    let n = rng.gen_range(33..=1024);
                                    if let Some(tk) = take_slices(h, c, n) {
                                        common::mark_taken(h, c, &tk);
                                        let s = veballoc::kernels::block::slice_bytes(c);
                                        got.extend((0..tk.total()).map(|r| tk.addr(r, s)));
                                    }
                                } else {
                                    let k = rng.gen_range(1..=32);
                                    got.extend(
                                        cpu.warp_malloc(&vec![size; k])
                                            .into_iter()
                                            .filter(|p| !p.is_null())
                                            .map(|p| p as u64),
                                    );
                                }
                                {
                                    let mut set = live_set.lock().unwrap();
                                    for &p in &got {
                                        assert!(set.insert(p), "{p:#x} handed out twice");
                                    }
                                }
                                for (i, &p) in got.iter().enumerate() {
                                    let tg = tag | i as u64;
                                    fill(p as *mut u8, size, tg);
                                    live.push((p, size, tg));
                                }
                            } else {
                                for _ in 0..rng.gen_range(1..64) {
                                    if live.is_empty() {
                                        break;
                                    }
                                    let (p, size, tag) = live.swap_remove(rng.gen_range(0..live.len()));
                                    check(p as *mut u8, size, tag);
                                    assert!(live_set.lock().unwrap().remove(&p));
                                    // SAFETY: p came from this heap's malloc and was this thread's alone
                                    // (just taken out of `live` and the shared set): freed once, unused
                                    // after.
                                    unsafe { h.free(p as *mut u8) };
                                }
                            }
                        }
                        for (p, size, tag) in live {
                            check(p as *mut u8, size, tag);
                            assert!(live_set.lock().unwrap().remove(&p));
                            // SAFETY: as above: each p was this thread's alone, freed once, unused after.
                            unsafe { h.free(p as *mut u8) };
                        }
                    })
                })
                .collect();
            for x in hs {
                x.join().unwrap();
            }
            eprintln!(
                "oom nulls {}",
                cpu.heap().counter(veballoc::kernels::heap::counter::OUT_OF_MEMORY).load_relaxed()
            );
            stop.store(true, Ordering::Relaxed);
        });
        h.trim();
        let s = h.validate().expect("heap consistent");
        eprintln!("{s:?}");
        assert_eq!(
            (s.bytes_in_use, s.blocks_in_use(), s.double_frees, s.invalid_frees),
            (0, 0, 0, 0),
            "{s:?}"
        );
        assert_eq!(s.free_segments, 8, "{s:?}");
    }
}

/// An install sizes its run by the slices already asked for on its slot (an empty slot's
/// count; an exhausted run's count past its slices), not only by the slot's pace: a first take
/// of 300 slices of 8 KiB (128 to a block), as a thread block's collective take asks, gets a
/// run of three blocks at once (two pieces of 128 given, the rest of the third given back as
/// `took` does past the second block), where a run of one block gave it 128 and left the rest
/// to further installs, each waited for.
#[test]
fn an_install_takes_as_many_blocks_as_already_asked_for() {
    let cpu = heap(1);
    let h = cpu.heap();
    set_host_thread_index(0);
    let c = class_of(8192);
    assert_eq!(slices_per_block(c), 128);
    assert!(max_run(c, h.layout().row_shards(c)) >= 3);
    let t = take_slices(h, c, 300).expect("a heap with room");
    assert_eq!((t.got, t.got2), (128, 128), "{t:?}");
    assert_eq!(t.base2, t.base + (1 << 20), "the run's second block");
    // SAFETY: the two pieces of t (blocks 0 and 1, 128 slices each, asserted), unmarked
    // (no checks marked them: this test marks nothing) and handed to no one, go back once.
    unsafe {
        h.slots().release_slices(0, 0, c, 0, 128);
        h.slots().release_slices(0, 1, c, 0, 128);
    }
    h.trim();
    let s = h.validate().expect("heap consistent");
    assert_eq!((s.bytes_in_use, s.blocks_in_use()), (0, 0), "{s:?}");
}
