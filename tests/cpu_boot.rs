//! A booted heap (every `Heap` boots since r32: one segment formatted ahead per group of small
//! slices, `DeviceHeap::boot`) on the CPU model: it serves as much as a heap that did not
//! boot, and the take-back of booted segments (`Blocks::take_back_after`) races its segment's
//! own group safely.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use veballoc::kernels::arch::set_host_thread_index;
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::{
    boot_groups, BOOT_GROUPS, BOOT_ORDER, BOOT_SEGMENTS_PER_GROUP, BOOT_SLOT_CLASS,
};
use veballoc::kernels::{DeviceHeap, SEGMENT_BYTES};

use common::{assert_empty, check, fill, mark_taken};

const MIB: u64 = 1 << 20;

/// What a new GPU heap's boot kernels do (`veballoc_boot`: the groups in `BOOT_ORDER`; then
/// `veballoc_boot_slots`: a thread per slot); returns how many slots got a block.
fn boot(h: &DeviceHeap) -> u64 {
    h.boot_all();
    (0..h.layout().shards as u64).filter(|&i| h.boot_slot(i)).count() as u64
}

/// Requests of `size` (runs of whole segments) on one thread until null, on a new heap of
/// `segments` segments, booted or not: how many were served.
fn runs_until_null(segments: u32, size: u64, booted: bool) -> usize {
    let cpu = CpuHeap::new(segments, 1);
    let h = cpu.heap();
    if booted {
        boot(h);
    }
    let mut ptrs = Vec::new();
    loop {
        let p = h.malloc(size);
        if p.is_null() {
            break;
        }
        ptrs.push(p);
    }
    h.validate().expect("heap consistent");
    let n = ptrs.len();
    for p in ptrs {
        // SAFETY: each p came from this heap's malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
    n
}

/// The boot gives every slot of the smallest class a block: each thread's first warp of
/// 16-byte requests takes slices from it (no install: no block of the class is added), a
/// second boot installs nothing, and a trim returns the blocks. A heap too small for the
/// boot's groups gets none.
#[test]
fn the_boot_gives_every_slot_of_the_smallest_class_a_block() {
    const THREADS: u32 = 8;
    let cpu = CpuHeap::new(BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP, THREADS);
    let h = cpu.heap();
    let slots = h.layout().row_shards(BOOT_SLOT_CLASS) as u64;
    assert_eq!(slots, THREADS as u64, "a slot per thread in this heap");
    assert_eq!(boot(h), slots);
    let stats = h.validate().expect("booted heap consistent");
    assert_eq!(stats.slice_blocks[BOOT_SLOT_CLASS], slots, "one block per slot");
    assert_eq!(boot(h), 0, "a second boot installs nothing");
    let mut ptrs = Vec::new();
    for t in 0..THREADS as u64 {
        set_host_thread_index(t);
        for p in cpu.warp_malloc(&[16; 32]) {
            assert!(!p.is_null());
            fill(p, 16, p as u64);
            ptrs.push(p);
        }
    }
    let stats = h.validate().expect("heap consistent");
    assert_eq!(stats.slice_blocks[BOOT_SLOT_CLASS], slots, "the first takes installed no block");
    assert_eq!(stats.live_slices[BOOT_SLOT_CLASS], 32 * THREADS as u64);
    for p in ptrs {
        check(p, 16, p as u64);
        // SAFETY: each p came from one warp_malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
    let small = CpuHeap::new(BOOT_SEGMENTS_PER_GROUP - 1, THREADS);
    assert_eq!(boot(small.heap()), 0, "no group booted, no block installed");
}

/// The group whose slots the boot fills keeps its second booted segment when a burst takes
/// more than half of its first (the take-back skips a booted segment of the claimer's own
/// group): its bursts grow into it without a format.
#[test]
fn the_boot_slots_group_keeps_its_second_segment() {
    let cpu = CpuHeap::new(BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP, 1);
    let h = cpu.heap();
    boot(h);
    let g = veballoc::kernels::block::group_of(BOOT_SLOT_CLASS);
    assert_eq!(h.validate().expect("booted").segments_per_group[g], 2);
    set_host_thread_index(0);
    // Three quarters of segment 0's blocks out: past the take-back's half.
    let n = SEGMENT_BYTES * 3 / 4 / 16;
    let mut ptrs = Vec::new();
    for _ in 0..n / 32 {
        ptrs.extend(cpu.warp_malloc(&[16; 32]));
    }
    assert!(ptrs.iter().all(|p| !p.is_null()));
    let s = h.validate().expect("heap consistent");
    assert_eq!(s.segments_per_group[g], 2, "its second segment kept: {s:?}");
    let seg = |p: *mut u8| (p as u64 - h.segment_addr(0)) / SEGMENT_BYTES;
    assert!(ptrs.iter().all(|&p| seg(p) == 0), "the burst stays in segment 0");
    for p in ptrs {
        // SAFETY: each p came from one warp_malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// The booted segment after a group's (the next group in `BOOT_ORDER`) goes back to the segment tree at the claim that leaves
/// half of the group's last booted segment out (`TAKE_BACK_FROM`); a group's own second
/// booted segment stays its own (24 B: group 0, and 64 B: `BOOT_TWICE_GROUP`, two booted
/// segments each; 100 B: group 3, one). Each take here uses up a whole block, and the host
/// clock moves on by more than `FAST_BLOCK_NS` between takes, so that every install is one
/// block (a slot whose runs run out fast takes runs of several: `slice::max_run`).
#[test]
fn the_take_back_comes_at_half_of_a_group_s_last_booted_segment() {
    use veballoc::kernels::arch::set_host_clock;
    use veballoc::kernels::block::{
        class_of, group_blocks_per_segment, group_of, slices_per_block, TAKE_BACK_FROM,
    };
    use veballoc::kernels::heap::{boot_segments, BOOT_TWICE_GROUP};
    use veballoc::kernels::slice::FAST_BLOCK_NS;
    set_host_thread_index(0);
    let mut clock = 1u64 << 40;
    let segments = BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP;
    assert_eq!(boot_segments(BOOT_TWICE_GROUP, segments), 2);
    for size in [24u64, 64, 100] {
        let cpu = CpuHeap::new(segments, 1);
        let h = cpu.heap();
        assert!(h.boot_all());
        let c = class_of(size);
        let g = group_of(c);
        // The group booted right after this one: its segment is the next.
        let next = BOOT_ORDER[BOOT_ORDER.iter().position(|&x| x == g).unwrap() + 1];
        let bps = group_blocks_per_segment(g) as u64;
        let booted = boot_segments(g, segments) as u64;
        assert_eq!(booted, if g == 0 || g == BOOT_TWICE_GROUP { 2 } else { 1 }, "{size} B");
        // The group's booted segments but the last fill first.
        let before = (booted - 1) * bps;
        let per = slices_per_block(c);
        let mut taken = Vec::new();
        let mut at = None;
        while at.is_none() {
            clock += 2 * FAST_BLOCK_NS;
            set_host_clock(Some(clock));
            let t = common::take_slices(h, c, per).expect("a block");
            mark_taken(h, c, &t);
            taken.push(t);
            let s = h.validate().expect("heap consistent");
            assert!(s.slice_blocks[c] <= booted * bps, "{size} B: no take-back in its segments: {s:?}");
            assert_eq!(s.segments_per_group[g], booted, "{size} B: its own booted segments kept: {s:?}");
            if s.segments_per_group[next] < boot_segments(next, segments) as u64 {
                at = Some(s.slice_blocks[c]);
            }
        }
        let expect = before + bps - bps / TAKE_BACK_FROM as u64;
        assert_eq!(at, Some(expect), "{size} B (group {g}): the take-back after this many blocks");
        for t in taken {
            for r in 0..t.total() {
                // SAFETY: each slice of the takes above (marked handed out, with the checks) is freed once
                // and not used after.
                unsafe { h.free(t.addr(r, veballoc::kernels::block::slice_bytes(c)) as *mut u8) };
            }
        }
        assert_empty(h);
    }
    set_host_clock(None);
}

/// A boot on a heap whose lower segments are all taken puts the booted segments at its top;
/// a class that then takes half of the last segment looks at the segment after it, past the
/// heap, for the take-back (`take_back_after`: "does another group keep the one after?").
/// That read went past the segment table (r33; the CPU model now checks every per-segment
/// index).
#[test]
fn a_take_back_at_the_heap_s_last_segment_stays_inside_the_table() {
    let segments = 2 * BOOT_SEGMENTS_PER_GROUP;
    let cpu = CpuHeap::new(segments, 1);
    let h = cpu.heap();
    set_host_thread_index(0);
    // Every segment but the last three, in one run.
    let run = h.malloc((segments as u64 - 3) * SEGMENT_BYTES);
    assert!(!run.is_null());
    // Group 0 on the two segments after the run, group 1 (32 B) on the last.
    boot(h);
    let seg = |p: *mut u8| (p as u64 - h.segment_addr(0)) / SEGMENT_BYTES;
    let mut ptrs = Vec::new();
    // Three quarters of the last segment's blocks of 32-byte slices.
    let per_block = veballoc::kernels::class::slices_per_block(veballoc::kernels::class::class_of(32)) as u64;
    for _ in 0..96 * per_block / 32 {
        ptrs.extend(cpu.warp_malloc(&[32; 32]));
    }
    assert!(ptrs.iter().all(|&p| !p.is_null() && seg(p) == segments as u64 - 1));
    h.validate().expect("heap consistent");
    for p in ptrs {
        // SAFETY: each p came from one warp_malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    // SAFETY: run came from the malloc above, is freed once and not used after.
    unsafe { h.free(run) };
    assert_empty(h);
}

/// A booted heap serves as many runs of several segments as one that did not boot: the first
/// claim of fresh segment runs takes every unused booted segment back
/// (`take_back_all_booted`). Before, the booted segments at the bottom split the free ones: a
/// 512 MiB heap served seven 64 MiB runs booted against eight (review of r32).
#[test]
fn a_booted_heap_serves_as_many_big_runs() {
    let mut short = Vec::new();
    for (segments, size) in
        [(16u32, 64 * MIB), (32, 64 * MIB), (32, 40_000_000), (16, 32 * MIB), (64, 40_000_000)]
    {
        assert!(boot_groups(segments) > 0);
        let plain = runs_until_null(segments, size, false);
        let booted = runs_until_null(segments, size, true);
        if booted < plain {
            short.push((segments, size, plain, booted));
        }
    }
    assert!(short.is_empty(), "(segments, size, served unbooted, served booted): {short:?}");
}

/// A booted heap fills as far with slices of one size as one that did not boot: the sweep
/// before a null takes the other groups' booted segments back.
#[test]
fn a_booted_heap_fills_as_far_with_slices() {
    const THREADS: u32 = 4;
    for size in [16u64, 128, 4096] {
        let mut got = [0u64; 2];
        for (k, booted) in [false, true].into_iter().enumerate() {
            let segments = BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP;
            let cpu = CpuHeap::new(segments, THREADS);
            let h = cpu.heap();
            if booted {
                boot(h);
            }
            let mut ptrs = Vec::new();
            'fill: for w in 0u64.. {
                set_host_thread_index(w % THREADS as u64);
                for p in cpu.warp_malloc(&[size; 32]) {
                    if p.is_null() {
                        break 'fill;
                    }
                    ptrs.push(p);
                }
            }
            got[k] = ptrs.len() as u64;
            h.validate().expect("heap consistent");
            for p in ptrs {
                // SAFETY: each p came from one warp_malloc above, is freed once and not used after.
                unsafe { h.free(p) };
            }
            assert_empty(h);
        }
        assert!(got[1] >= got[0], "{size} B, slices (unbooted, booted): {got:?}");
    }
}

/// The take-back of the booted segment after a group's races that segment's own group: threads
/// burst size `a` past half of its last booted segment while two others start on size `b` (the
/// next group, booted on the next segment) when about that much of `a` is out, at a point
/// that moves from round to round. No null, no overlap, every word intact, the heap
/// validates with everything live and is whole after; `b` ends up either in its booted
/// segment (kept) or elsewhere (taken back before its first claim).
#[test]
fn a_take_back_races_the_next_groups_first_claims() {
    use veballoc::kernels::block::{class_of, group_of};
    use veballoc::kernels::heap::boot_segments;
    const THREADS: u64 = 8;
    const B_THREADS: u64 = 2;
    for (a, b) in [(128u64, 4096u64), (16, 24), (48, 128)] {
        for round in 0..12u64 {
            let segments = BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP;
            let cpu = CpuHeap::new(segments, THREADS as u32);
            let h = cpu.heap();
            boot(h);
            let out_a = AtomicU64::new(0);
            // Around half of `a`'s last booted segment, where its take-back comes.
            let first = (boot_segments(group_of(class_of(a)), segments) as u64 - 1) * SEGMENT_BYTES;
            let go_at = first + SEGMENT_BYTES / 2 - (round % 8) * (SEGMENT_BYTES / 64);
            let all: Vec<Vec<(u64, u64)>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let (cpu, out_a) = (&cpu, &out_a);
                        s.spawn(move || {
                            set_host_thread_index(t);
                            let is_b = t >= THREADS - B_THREADS;
                            if is_b {
                                while out_a.load(Relaxed) < go_at {
                                    std::hint::spin_loop();
                                }
                            }
                            let size = if is_b { b } else { a };
                            let budget = if is_b {
                                2 * MIB
                            } else {
                                (first + SEGMENT_BYTES * 5 / 4) / (THREADS - B_THREADS)
                            };
                            let (mut mine, mut asked) = (Vec::new(), 0);
                            while asked < budget {
                                for p in cpu.warp_malloc(&[size; 32]) {
                                    assert!(!p.is_null(), "null on a heap far from full, size {size}");
                                    fill(p, size, p as u64 ^ size);
                                    mine.push((p as u64, size));
                                }
                                asked += 32 * size;
                                if !is_b {
                                    out_a.fetch_add(32 * size, Relaxed);
                                }
                            }
                            mine
                        })
                    })
                    .collect();
                hs.into_iter().map(|t| t.join().unwrap()).collect()
            });
            let mut live: Vec<(u64, u64)> = all.into_iter().flatten().collect();
            live.sort();
            for w in live.windows(2) {
                assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {w:?}");
            }
            let seg = |p: u64| (p - h.segment_addr(0)) / SEGMENT_BYTES;
            let segs_a: BTreeSet<u64> = live.iter().filter(|x| x.1 == a).map(|x| seg(x.0)).collect();
            assert!(segs_a.len() >= 2, "{a} B outgrew its booted segment: {segs_a:?}");
            h.validate().expect("heap consistent with every slice live");
            for &(p, size) in &live {
                check(p as *mut u8, size, p ^ size);
                // SAFETY: each p came from one thread's malloc (joined above; no two overlap), is freed once
                // and not used after.
                unsafe { h.free(p as *mut u8) };
            }
            assert_empty(h);
        }
    }
}

/// The host's `Heap::trim` runs `trim` in parallel (`veballoc_trim`: `trim_slot` per slot,
/// then `veballoc_trim_segments`: `trim_segments_part` per segment); it must leave the heap
/// as `DeviceHeap::trim` does, the booted segments forgotten included (it kept them: the
/// first claim of a fresh run then retired idle 16-byte slots and took booted segments back
/// long after the boot; review of r39).
#[test]
fn the_parallel_trim_forgets_the_booted_segments_as_trim_does() {
    use veballoc::kernels::slice::SLOT_ROWS;
    let segs = BOOT_GROUPS as u32 * BOOT_SEGMENTS_PER_GROUP;
    let (a, b) = (CpuHeap::new(segs, 8), CpuHeap::new(segs, 8));
    let (a, b) = (a.heap(), b.heap());
    boot(a);
    boot(b);
    a.trim();
    let shards = b.layout().shards as u64;
    for i in 0..SLOT_ROWS as u64 * shards {
        b.trim_slot((i / shards) as usize, (i % shards) as u32);
    }
    for i in 0..segs as u64 {
        b.trim_segments_part(i);
    }
    assert_eq!(a.validate().unwrap(), b.validate().unwrap(), "the same heap after either trim");
    // `forget_booted` returns the bits it clears: none are left after either trim.
    assert_eq!(a.blocks().forget_booted(), 0, "DeviceHeap::trim forgets the booted segments");
    assert_eq!(b.blocks().forget_booted(), 0, "the parallel trim kept stale booted bits");
}
