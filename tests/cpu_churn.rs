//! The churn of issue 9 (`veballoc-bench churn`) on the CPU heap: rounds of mixed sizes with
//! about half the heap live and no host trim must get no null while less than 70% of the heap
//! is live. Each defect found on the way has its test here. `churn` runs it on one OS
//! thread, deterministically: warps are served in chunks of `CHUNK_WARPS` per simulated
//! multiprocessor (shard), as the CPU model's OS threads take them; `print_first_null`
//! (shown with `--nocapture`) says where the heap's memory was at the first null.

use veballoc::kernels::arch::set_host_thread_index;
use veballoc::kernels::block::{
    block_bytes, class_of, group_block_bytes, slice_bytes, slices_per_block, NUM_GROUPS,
};
use veballoc::kernels::class::TABLE_CLASSES;
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::diag::Occupancy;
use veballoc::kernels::harness::{churn_law, churn_size, round_draw, PROB_MASK, PROB_ONE};
use veballoc::kernels::heap::{takes_unit_run, PIN_SHIFT, UNIT_RUN_MIN};
use veballoc::kernels::mix;
use veballoc::SEGMENT_BYTES;

const MIB: u64 = 1 << 20;
/// The churn's size law (as the harness's `CHURN_LAW`): 16 B .. 1 MiB, one in 2^14 a
/// 20-40 MiB run.
const LAW: [u64; churn_law::WORDS] = [4, 16, 1 << 14, 20 * MIB, 40 * MIB];
/// Mean of the law (bytes), as `ChurnLaw::mean`.
fn law_mean() -> f64 {
    let main = (4..20).map(|e| (1u64 << e) as f64 * 1.5 - 0.5).sum::<f64>() / 16.0;
    let q = 1.0 / LAW[churn_law::RUN_ODDS] as f64;
    (1.0 - q) * main + q * (LAW[churn_law::RUN_LO] + LAW[churn_law::RUN_HI]) as f64 / 2.0
}
/// A holder frees with this probability per round.
const FREE_SHARE: f64 = 0.25;
/// Seed of the draws (the harness's `CHURN_SEED`).
const SEED: u64 = 0xc4u64 << 32 | 0x5eed;
/// Warps a simulated multiprocessor takes at a time (the CPU model's `CHUNK_WARPS`).
const CHUNK_WARPS: u64 = 64;
const WARP: u64 = 32;
/// Live share under which the target says no null may come.
const TARGET_NO_NULL_BELOW: f64 = 0.70;
/// Rounds of the churn (the harness's default).
const ROUNDS: u32 = 40;

/// The first null of a churn: its round, the live share then, the size asked, and where the
/// heap's memory was.
struct FirstNull {
    round: u32,
    live_share: f64,
    size: u64,
    occupancy: Occupancy,
}

/// Result of a churn run.
struct ChurnRun {
    first: Option<FirstNull>,
    nulls_per_round: Vec<u64>,
    live_per_round: Vec<f64>,
    /// The lowest live share at any null.
    lowest_null_live: Option<f64>,
}

/// Runs `rounds` rounds of the churn over `n` threads on a heap of `segments` segments with
/// `shards` current slots per class, keeping `live` of the heap live; frees everything at the
/// end and checks the heap is empty.
fn churn(segments: u32, shards: u32, n: u64, rounds: u32, live: f64) -> ChurnRun {
    churn_seeded(segments, shards, n, rounds, live, SEED)
}

/// `churn` with the draws of `seed`.
fn churn_seeded(segments: u32, shards: u32, n: u64, rounds: u32, live: f64, seed: u64) -> ChurnRun {
    let cpu = CpuHeap::with_checks(segments, shards, false);
    let h = cpu.heap();
    let cap = h.capacity() as f64;
    let mut ptrs = vec![0u64; n as usize];
    let mut sizes = vec![0u64; n as usize];
    let (mut live_b, mut holders) = (0u64, 0u64);
    let mut run = ChurnRun {
        first: None,
        nulls_per_round: Vec::new(),
        live_per_round: Vec::new(),
        lowest_null_live: None,
    };
    let mean = law_mean();
    for round in 0..=rounds {
        let last = round == rounds;
        let share = if last {
            0.0
        } else {
            let kept = live_b as f64 * (1.0 - FREE_SHARE);
            let empty = n as f64 - holders as f64 * (1.0 - FREE_SHARE);
            ((live * cap - kept) / (empty * mean)).clamp(0.0, 1.0)
        };
        let free_p = if last { PROB_ONE } else { (FREE_SHARE * PROB_ONE as f64) as u64 };
        let alloc_p = (share * PROB_ONE as f64) as u64;
        let mut nulls = 0;
        let warps = n.div_ceil(WARP);
        for w in 0..warps {
            let shard = (w / CHUNK_WARPS) % shards as u64;
            set_host_thread_index(w * shards as u64 + shard);
            let mut want = Vec::new();
            for i in w * WARP..((w + 1) * WARP).min(n) {
                let r = round_draw(seed, i, round as u64);
                let iu = i as usize;
                if ptrs[iu] != 0 && (r & PROB_MASK) < free_p {
                    // SAFETY: ptrs[iu] is this simulated thread's live block from this heap's malloc; freed
                    // once and forgotten (cleared next).
                    unsafe { h.free(ptrs[iu] as *mut u8) };
                    ptrs[iu] = 0;
                    live_b -= sizes[iu];
                    holders -= 1;
                }
                let r2 = mix(r);
                if ptrs[iu] == 0 && (r2 & PROB_MASK) < alloc_p {
                    want.push((i, churn_size(mix(r2 ^ round as u64), &LAW)));
                }
            }
            if want.is_empty() {
                continue;
            }
            let got = cpu.warp_malloc(&want.iter().map(|w| w.1).collect::<Vec<_>>());
            for (&(i, size), p) in want.iter().zip(got) {
                if p.is_null() {
                    nulls += 1;
                    let share = live_b as f64 / cap;
                    run.lowest_null_live = Some(run.lowest_null_live.map_or(share, |l| l.min(share)));
                    if run.first.is_none() {
                        run.first = Some(FirstNull {
                            round,
                            live_share: live_b as f64 / cap,
                            size,
                            occupancy: h.occupancy(),
                        });
                    }
                    continue;
                }
                ptrs[i as usize] = p as u64;
                sizes[i as usize] = size;
                live_b += size;
                holders += 1;
            }
        }
        if !last {
            run.nulls_per_round.push(nulls);
            run.live_per_round.push(live_b as f64 / cap);
        }
    }
    assert_eq!((live_b, holders), (0, 0));
    h.trim();
    let s = h.validate().expect("heap consistent after the churn");
    assert_eq!(s.bytes_in_use, 0, "{s:?}");
    assert_eq!(s.free_segments, segments as u64, "every segment back: {s:?}");
    run
}

fn mib(b: u64) -> String {
    format!("{:.1}", b as f64 / MIB as f64)
}

/// Prints where the memory was at a churn's first null.
fn print_first_null(tag: &str, r: &ChurnRun, cap: u64) {
    println!(
        "{tag}: nulls per round {:?}\n{tag}: live per round {:?}",
        r.nulls_per_round,
        r.live_per_round.iter().map(|s| format!("{:.0}%", 100.0 * s)).collect::<Vec<_>>()
    );
    let Some(f) = &r.first else {
        println!("{tag}: no null");
        return;
    };
    let o = &f.occupancy;
    println!(
        "{tag}: first null in round {} at {:.1}% live, asking {} B; heap {} MiB: {} free segments (longest run {})",
        f.round,
        100.0 * f.live_share,
        f.size,
        mib(cap),
        o.free_segments,
        o.longest_free_run
    );
    println!(" class   slice | cur blk  cur MiB cur live unhanded | ret blk  ret MiB ret live (of slices/blk) | live MiB");
    let (mut cur, mut ret, mut live) = (0, 0, 0);
    for c in 0..TABLE_CLASSES {
        let k = &o.classes[c];
        if k.current_blocks + k.retired_blocks == 0 {
            continue;
        }
        println!(
            "  {c:>4} {:>7} | {:>7} {:>8} {:>8} {:>8} | {:>7} {:>8} {:>8} ({:>5}) | {:>8}",
            slice_bytes(c),
            k.current_blocks,
            mib(o.current_bytes(c)),
            k.current_live,
            k.current_unhanded,
            k.retired_blocks,
            mib(o.retired_bytes(c)),
            k.retired_live,
            slices_per_block(c),
            mib(o.live_bytes(c))
        );
        cur += o.current_bytes(c);
        ret += o.retired_bytes(c);
        live += o.live_bytes(c);
    }
    println!(" group  block | segments free blk  free MiB whole blk whole MiB");
    let (mut free_b, mut whole) = (0, 0);
    for g in 0..NUM_GROUPS {
        let k = &o.groups[g];
        if k.segments == 0 {
            continue;
        }
        println!(
            "  {g:>4} {:>7} | {:>8} {:>8} {:>9} {:>9} {:>9}",
            group_block_bytes(g) >> 10,
            k.segments,
            k.free_blocks,
            mib(o.free_block_bytes(g)),
            k.whole_blocks,
            mib(o.whole_bytes(g))
        );
        free_b += o.free_block_bytes(g);
        whole += o.whole_bytes(g);
    }
    println!(
        "{tag}: totals (MiB): current blocks {} (live slices in all blocks {}), retired blocks {}, free blocks in formatted segments {}, whole blocks {}, free segments {}",
        mib(cur),
        mib(live),
        mib(ret),
        mib(free_b),
        mib(whole),
        mib(o.free_segments * SEGMENT_BYTES)
    );
}

/// A reclaim sweep (run by a request that finds no memory) used to retire every current
/// block, also blocks with live slices, which cannot return to their tree then: the class's
/// next request claimed a fresh block, and under churn every sweep pinned one more block per
/// class and shard (nulls cascaded: 780 in round 2, 4300 a round from round 9, live falling
/// to 8%). The sweep keeps such blocks current now.
#[test]
fn a_reclaim_sweep_keeps_current_blocks_that_hold_live_slices() {
    let cpu = CpuHeap::with_checks(2, 1, false);
    let h = cpu.heap();
    set_host_thread_index(0);
    let p = h.malloc(64);
    assert!(!p.is_null());
    // More than the heap: null, after a reclaim sweep.
    assert!(h.malloc(3 * SEGMENT_BYTES).is_null());
    let q = h.malloc(64);
    assert_eq!(q as u64, p as u64 + 64, "the next slice of the same block");
    let s = h.validate().expect("consistent");
    assert_eq!(s.slice_blocks[class_of(64)], 1, "{s:?}");
    // SAFETY: p came from the malloc above, is freed once and not used after.
    unsafe { h.free(p) };
    // SAFETY: q came from the malloc above, is freed once and not used after.
    unsafe { h.free(q) };
    h.trim();
    assert_eq!(h.validate().expect("consistent").bytes_in_use, 0);
}

/// Every multiprocessor used to have a current block of every class: with 16 shards on a
/// 1 GiB heap (64 MiB per shard, as 8 GiB over an H100's 132 multiprocessors), one slice of
/// every class up to 256 KiB per shard pinned 747 MiB (73%) in current blocks, nearly all
/// of it unhanded (the churn's first null came in round 0 at 26% live). Rows whose blocks are
/// large now share slots, so that all current blocks together pin at most 1/8 of the heap.
#[test]
fn current_blocks_of_every_class_and_shard_pin_at_most_an_eighth_of_the_heap() {
    const SHARDS: u32 = 16;
    const LARGEST: u64 = 256 << 10;
    let cpu = CpuHeap::with_checks(64, SHARDS, false);
    let h = cpu.heap();
    let mut ptrs = Vec::new();
    for sm in 0..SHARDS as u64 {
        set_host_thread_index(sm);
        for c in 0..=class_of(LARGEST) {
            let p = h.malloc(slice_bytes(c));
            assert!(!p.is_null(), "class {c} on shard {sm}");
            ptrs.push(p);
        }
    }
    let o = h.occupancy();
    let pinned: u64 = (0..TABLE_CLASSES).map(|c| o.current_bytes(c)).sum();
    assert!(
        pinned <= h.capacity() >> PIN_SHIFT,
        "current blocks pin {} MiB of {} MiB",
        pinned >> 20,
        h.capacity() >> 20
    );
    for p in ptrs {
        // SAFETY: each p came from this heap's malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    h.trim();
    assert_eq!(h.validate().expect("consistent").bytes_in_use, 0);
}

/// Runs of 64 KiB blocks (requests above `UNIT_RUN_MIN`) come from group 0, whose tree's ids
/// are dense: the lowest free run starts in one segment and ends in the next (here blocks
/// 252..255 of segment 0 and 0 of segment 1). It is one allocation over two segments'
/// metadata, which the validator follows (before runs crossed segments on purpose, such a run
/// came out of the tree by accident and the validator found a parked block out of its tree),
/// and its free gives each segment its blocks back.
#[test]
fn runs_of_64k_blocks_cross_segments() {
    const UNIT: u64 = 64 << 10;
    const { assert!(4 * UNIT + 1 > UNIT_RUN_MIN, "requests of 4 units + 1 byte take runs") };
    let cpu = CpuHeap::with_checks(2, 1, false);
    let h = cpu.heap();
    set_host_thread_index(0);
    let seg_of = |p: *mut u8| (p as u64 - h.mem()) / SEGMENT_BYTES;
    let mut live = vec![h.malloc(16), h.malloc(5 * UNIT + 1)]; // blocks 0 and 1..=6 of segment 0
    for _ in 0..49 {
        live.push(h.malloc(4 * UNIT + 1)); // 7..=251: 252..=255 stay free
    }
    let a = h.malloc(4 * UNIT + 1); // formats segment 1: its blocks 0..=4
    live.push(h.malloc(4 * UNIT + 1)); // segment 1, 5..=9
    assert!(live.iter().all(|p| !p.is_null()) && !a.is_null());
    assert_eq!(seg_of(a), 1);
    // SAFETY: a came from the malloc above, is freed once and not used after.
    unsafe { h.free(a) }; // free: segment 0's 252..=255, segment 1's 0..=4 and 10..
    let b = h.malloc(4 * UNIT + 1);
    assert!(!b.is_null());
    let last = (b as u64 + 5 * UNIT - 1 - h.mem()) / SEGMENT_BYTES;
    assert_eq!((seg_of(b), last), (0, 1), "a run of five blocks from segment 0 into segment 1");
    assert_eq!(h.validate().expect("consistent").crossing_runs, 1);
    live.push(b);
    for p in live {
        // SAFETY: each p came from the mallocs above (all live), is freed once and not used after.
        unsafe { h.free(p) };
    }
    h.trim();
    let s = h.validate().expect("consistent");
    assert_eq!((s.bytes_in_use, s.free_segments), (0, 2), "{s:?}");
}

/// The churn as the harness runs it (half the heap live), on the CPU model's default heap
/// (1 GiB, 2^17 threads) with 4 and 16 shards, and at half the GPU protocol's scale (4 GiB,
/// 2^19 threads, 64 shards: 64 MiB of heap per multiprocessor, as 8 GiB over an H100's 132):
/// no null may come while less than 70% of the heap is live, in 40 rounds. Before this
/// branch the first null came in round 2 at 49.1% live (1 GiB, 4 shards) and in round 0 at
/// 26.2% (16 shards); with the sweep and slot changes but without runs for requests above
/// 256 KiB, in round 2 at 51.8% (1 GiB) and round 3 at 48.2% (4 GiB, 64 shards); with those
/// runs but not the 128/192/256 KiB ones, in round 24 at 50.3% (1 GiB: a 5-block run found
/// no room in group 0's segments). See bench/results/cpu-churn-s4.md.
#[test]
fn churn_no_null_under_70_percent_live() {
    let bad = nulls_under_the_target(&[(64, 4, 1 << 17), (64, 16, 1 << 17), (256, 64, 1 << 19)], 0.5);
    assert!(bad.is_empty(), "{bad:?}");
}

/// Runs the churn with `live` of the heap live on each (segments, shards, threads) of
/// `heaps`, prints where the memory was at each first null, and returns the runs whose first
/// null came with less than `TARGET_NO_NULL_BELOW` of the heap live.
fn nulls_under_the_target(heaps: &[(u32, u32, u64)], live: f64) -> Vec<String> {
    let mut bad = Vec::new();
    for &(segments, shards, n) in heaps {
        let r = churn(segments, shards, n, ROUNDS, live);
        let tag = format!("{} MiB, {shards} shards, {:.0}% live", segments * 16, 100.0 * live);
        print_first_null(&tag, &r, segments as u64 * SEGMENT_BYTES);
        if let Some(f) = r.first.as_ref().filter(|f| f.live_share < TARGET_NO_NULL_BELOW) {
            bad.push(format!(
                "{tag}: null in round {} for {} B at {:.1}% live",
                f.round,
                f.size,
                100.0 * f.live_share
            ));
        }
    }
    bad
}

/// Requests up to 256 KiB that take runs of 64 KiB blocks get no more bytes than a slice of
/// their class takes of its block (its share: a 1 MiB block of five 176 KiB slices leaves 14%
/// of itself unused, so each slice takes 205 KiB), larger ones less than a block over; all at
/// most a third over the size (four blocks just above 192 KiB); the ones that do not take
/// runs keep their slices.
#[test]
fn runs_of_64k_blocks_round_no_more_than_the_classes() {
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    let mut runs = 0;
    for size in (64u64 << 10..=1 << 20).step_by(4093) {
        let p = h.malloc(size);
        assert!(!p.is_null());
        let got = h.usable_size(p);
        let c = class_of(size);
        let share = block_bytes(c) / slices_per_block(c) as u64;
        assert!(got >= size && got * 3 <= size * 4, "{size} B got {got}");
        if size > UNIT_RUN_MIN {
            // Always a run: less than a block over.
            assert!(takes_unit_run(size) && got - size < group_block_bytes(0), "{size} B got {got}");
        }
        if takes_unit_run(size) {
            runs += 1;
            assert!(size > UNIT_RUN_MIN || got <= share, "{size} B got {got}");
        } else {
            assert_eq!(got, slice_bytes(c), "{size} B");
        }
        // SAFETY: p came from the malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert!(runs > 0);
    for size in [128 << 10, 170 << 10, 192 << 10, 200 << 10, 256 << 10, (256 << 10) + 1] {
        assert!(takes_unit_run(size), "{size}");
    }
    for size in [96 << 10, (128 << 10) + 1, 160 << 10] {
        assert!(!takes_unit_run(size), "{size}");
    }
}

/// Requests of 128 KiB..1 MiB all take runs of 64 KiB blocks from group 0 now: a burst of them
/// that finds no run in the tree used to format one segment per claimer (every free segment
/// could end up bound to group 0 with one run in it). At most `formatters` threads format for
/// a group now, and the others take runs from what they formatted: 48 threads asking for one
/// run each at once format one segment (before: 2 segments in some of 200 trials here).
#[test]
fn a_burst_of_run_claims_formats_one_segment() {
    const THREADS: usize = 48;
    for trial in 0..200 {
        let cpu = CpuHeap::with_checks(64, 1, false);
        let h = cpu.heap();
        let barrier = std::sync::Barrier::new(THREADS);
        let got: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..THREADS)
                .map(|t| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        set_host_thread_index(t as u64);
                        barrier.wait();
                        h.malloc(300_000) as u64
                    })
                })
                .collect();
            hs.into_iter().map(|j| j.join().unwrap()).collect()
        });
        assert!(got.iter().all(|&p| p != 0));
        let o = h.occupancy();
        assert_eq!(
            o.groups[0].segments, 1,
            "trial {trial}: {} segments formatted for group 0",
            o.groups[0].segments
        );
        for p in got {
            // SAFETY: each p came from one thread's malloc above (joined), is freed once, unused after.
            unsafe { h.free(p as *mut u8) };
        }
    }
}

/// The churn with 70% of the heap live (the harness's `churn --live 0.7`), at half the GPU
/// protocol's scale and at its full scale (8 GiB, 2^20 threads, 128 shards): no null may come
/// while less than 70% of the heap is live. Before the free masks of the classes of at most
/// 64 slices a block (`class::is_mask_class`) the first null came in round 7 at 70.3% (4 GiB)
/// and round 8 at 70.2% (8 GiB), with 809 of the 881 MiB of retired slice blocks in those
/// classes, about a third of their slices live.
#[test]
fn churn_at_70_percent_live() {
    let bad = nulls_under_the_target(&[(256, 64, 1 << 19), (512, 128, 1 << 20)], 0.7);
    assert!(bad.is_empty(), "{bad:?}");
}

/// `churn_at_70_percent_live` over more draws and rounds (4 GiB, 64 shards: the harness's
/// default draw and seeds 1..=40, 200 rounds each, on two threads; 40 s on two cores in a
/// release build): no null while less than 70% of the heap is live. Before a freed run's end
/// segments went back at once (`Blocks::release_run`), the default draw got a null at 69.6%
/// in round 35 and 6 of the 40 seeds one at 70.0-73.2%; with it, one seed (71.8%).
#[test]
fn churn_at_70_percent_live_over_seeds() {
    const SEEDS: u64 = 40;
    let next = std::sync::atomic::AtomicU64::new(0);
    let bad = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i > SEEDS {
                    return;
                }
                let seed = if i == 0 { SEED } else { i };
                let r = churn_seeded(256, 64, 1 << 19, 200, 0.7, seed);
                if let Some(f) = &r.first {
                    println!(
                        "seed {seed:#x}: first null in round {} at {:.2}% live for {} B, {} nulls, the lowest at {:.2}%",
                        f.round,
                        100.0 * f.live_share,
                        f.size,
                        r.nulls_per_round.iter().sum::<u64>(),
                        100.0 * r.lowest_null_live.unwrap()
                    );
                }
                if r.lowest_null_live.is_some_and(|l| l < TARGET_NO_NULL_BELOW) {
                    bad.lock().unwrap().push(seed);
                }
            });
        }
    });
    let bad = bad.into_inner().unwrap();
    assert!(bad.is_empty(), "a null under 70% live with seeds {bad:x?}");
}
