//! Safety checks (double frees, foreign pointers), packed and collective allocation, and a
//! fuzzer that validates the whole heap after every step, on the CPU model of the allocator.
//! The suite runs in both builds (scripts/test.sh): `cargo test --release` tests what the
//! benchmarks run, without the checks, and `cargo test --release --features checks` the
//! checked build. The tests of what only the checks detect are ignored without them (they
//! count as ignored, and fail if forced to run there).

use proptest::prelude::*;
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::counter;
use veballoc::kernels::{DeviceHeap, Stats, CHECKS, SEGMENT_BYTES};

fn stats(h: &DeviceHeap) -> Stats {
    h.validate().unwrap_or_else(|e| panic!("heap inconsistent: {e:?}"))
}

fn bad_frees(h: &DeviceHeap) -> u64 {
    h.counter(counter::INVALID_FREE).load_acquire() + h.counter(counter::DOUBLE_FREE).load_acquire()
}

fn assert_empty(h: &DeviceHeap) {
    h.trim();
    let s = stats(h);
    assert_eq!((s.bytes_in_use, s.live_packed, s.blocks_in_use()), (0, 0, 0), "{s:?}");
    assert_eq!(s.free_segments, h.layout().num_segments as u64, "{s:?}");
}

/// Writes a pattern over `size` bytes at `p` (first and last 64 words for big ones).
fn fill(p: *mut u8, size: u64, tag: u64) {
    for w in words(size) {
        // SAFETY: p holds `size` bytes handed out by the heap; w < size / 8.
        unsafe { (p as *mut u64).add(w).write(tag ^ w as u64) };
    }
}

fn check(p: *mut u8, size: u64, tag: u64) {
    check_prefix(p, size, size, tag);
}

/// Checks what `fill(p, size, tag)` wrote below byte `upto` (after a realloc that kept that much).
fn check_prefix(p: *mut u8, size: u64, upto: u64, tag: u64) {
    for w in words(size).into_iter().filter(|&w| (w as u64 + 1) * 8 <= upto) {
        // SAFETY: as in fill.
        let v = unsafe { (p as *const u64).add(w).read() };
        assert_eq!(v, tag ^ w as u64, "allocation at {p:?} ({size} B) was overwritten");
    }
}

fn words(size: u64) -> Vec<usize> {
    let n = (size / 8) as usize;
    if n <= 128 {
        (0..n).collect()
    } else {
        (0..64).chain(n - 64..n).collect()
    }
}

#[test]
#[cfg_attr(
    not(any(feature = "checks", debug_assertions)),
    ignore = "needs the safety checks (cargo test --features checks)"
)]
fn double_frees_are_counted_and_leave_the_heap_intact() {
    let cpu = CpuHeap::new(8, 4);
    let h = cpu.heap();
    assert!(h.checking(), "this build has no safety checks (veballoc_kernels::CHECKS)");
    // A slice, a whole block and a multi-segment run.
    for (i, size) in [16u64, 100, 4096, 8192, 1 << 20, 2 * SEGMENT_BYTES].into_iter().enumerate() {
        let keep = h.malloc(size); // keeps the block (or class) busy
        let p = h.malloc(size);
        assert!(!p.is_null() && !keep.is_null());
        fill(keep, size, 1);
        // SAFETY: p came from the malloc above, is freed once here and not used after.
        unsafe { h.free(p) };
        // SAFETY: not a valid free, on purpose: the second free of p, at once (no malloc can have
        // handed p out again), which this build's checks refuse and count (asserted next); a
        // refused free changes nothing and never touches p's memory.
        unsafe { h.free(p) };
        assert_eq!(bad_frees(h), i as u64 + 1, "size {size}: the second free is counted");
        let s = stats(h);
        assert_eq!(s.bytes_in_use, h.usable_size(keep), "size {size}: {s:?}");
        check(keep, size, 1);
        // SAFETY: keep came from the malloc above, is freed once and not used after.
        unsafe { h.free(keep) };
    }
    assert_eq!(h.counter(counter::DOUBLE_FREE).load_acquire(), 5);
    assert_eq!(h.counter(counter::INVALID_FREE).load_acquire(), 1, "the run's segment is free: invalid");
    assert_empty(h);
}

#[test]
#[cfg_attr(
    not(any(feature = "checks", debug_assertions)),
    ignore = "needs the safety checks (cargo test --features checks)"
)]
fn frees_of_slices_never_handed_out_are_counted() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    assert!(h.checking(), "this build has no safety checks (veballoc_kernels::CHECKS)");
    let p = h.malloc(64);
    // SAFETY: pointer arithmetic only; the heap never dereferences these.
    let (next, inside) = unsafe { (p.add(64), p.add(8)) };
    // SAFETY: not a valid free, on purpose: the next slice of p's block, never handed out, which
    // the checks refuse and count (asserted below); a refused free changes nothing.
    unsafe { h.free(next) }; // the next slice of the same live block: not handed out
                             // SAFETY: not a valid free, on purpose: a pointer inside p's slice, refused and
                             // counted (asserted below); a refused free changes nothing.
    unsafe { h.free(inside) }; // misaligned
    assert_eq!(h.counter(counter::DOUBLE_FREE).load_acquire(), 1);
    assert_eq!(h.counter(counter::INVALID_FREE).load_acquire(), 1);
    assert_eq!(stats(h).bytes_in_use, 64);
    // SAFETY: p came from the malloc above (live: the frees above were refused), freed once.
    unsafe { h.free(p) };
    assert_empty(h);
}

#[test]
#[cfg_attr(
    not(any(feature = "checks", debug_assertions)),
    ignore = "needs the safety checks (cargo test --features checks)"
)]
fn a_heap_without_checks_has_no_bitmap() {
    let with = CpuHeap::with_checks(4, 1, true);
    let without = CpuHeap::with_checks(4, 1, false);
    assert!(with.heap().checking(), "this build has no safety checks (veballoc_kernels::CHECKS)");
    assert!(!without.heap().checking());
    assert_eq!(without.heap().layout().bits_off, 0);
    let extra = with.heap().layout().meta_bytes - without.heap().layout().meta_bytes;
    assert_eq!(extra, 4 * SEGMENT_BYTES / 128, "one bit per 16 bytes of heap");
    let h = without.heap();
    let p = h.malloc(48);
    // SAFETY: p came from the malloc above, is freed once and not used after.
    unsafe { h.free(p) };
    assert_empty(h);
}

/// `hand_out()` of a heap without the bitmap refuses (its `bits_off` is 0: marking a slice
/// of segment 0 wrote into the metadata header, whose segment count went from 4 to 5;
/// review of r39), and the header is left as it was.
#[test]
fn the_hand_out_bitmap_of_a_heap_without_one_is_refused() {
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    let p = h.malloc(16);
    assert_eq!(p as u64, h.mem(), "slice 0 of segment 0");
    let before = *h.layout();
    let marked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `hand_out` panics first (the heap has no bitmap), as asserted below; were
        // the mark to run, p is slice 0 of class 0, handed out just above.
        unsafe { h.hand_out().mark_handed_out(p as u64, 0, 1) };
    }));
    assert!(marked.is_err(), "a heap without the bitmap lent one");
    assert_eq!(*h.layout(), before, "the metadata header was overwritten");
    // SAFETY: p came from the malloc above (the refused mark changed nothing, as asserted), freed
    // once and not used after.
    unsafe { h.free(p) };
    assert_empty(h);
}

/// The packing unit of a request of `size` bytes, by issue 9's rounding (written out here, not
/// read from the kernels): 16 bytes up to 256 B, 64 up to 1 KiB, 256 up to 4 KiB.
fn packed_unit(size: u64) -> u64 {
    match size {
        0..=256 => 16,
        257..=1024 => 64,
        _ => 256,
    }
}

#[test]
fn packed_requests_round_by_their_own_size_whatever_their_warp_asks() {
    // Issue 9's bound, for the unit above: 16..64 B within 16 bytes, at most 25% from 64 B up.
    for size in 1..=4096u64 {
        let over = size.div_ceil(packed_unit(size)) * packed_unit(size) - size;
        assert!(over < 16 || over * 4 <= size, "{size} B takes {over} bytes more");
    }
    // Two small lanes in a warp whose others ask for 4 KiB each (about 120 KiB in all): they
    // still pack in 16-byte units, next to each other, and so does every lane of each unit.
    for small in [1u64, 24, 65, 100, 200, 256] {
        let cpu = CpuHeap::new(8, 1);
        let h = cpu.heap();
        let mut sizes = vec![4096u64; 32];
        sizes[3] = small;
        sizes[9] = small;
        sizes[20] = 1000;
        sizes[30] = 300;
        let ptrs = cpu.warp_malloc_packed(&sizes);
        assert!(ptrs.iter().all(|p| !p.is_null()));
        for l in 0..32 {
            assert_eq!(ptrs[l] as u64 % packed_unit(sizes[l]), 0, "lane {l} starts on its unit");
            // The next lane of the same unit follows this one's rounded size (a fresh heap: no
            // block runs out).
            if let Some(m) = (l + 1..32).find(|&m| packed_unit(sizes[m]) == packed_unit(sizes[l])) {
                let rounded = sizes[l].div_ceil(packed_unit(sizes[l])) * packed_unit(sizes[l]);
                assert_eq!(ptrs[m] as u64 - ptrs[l] as u64, rounded, "{small} B: lane {l} ({} B)", sizes[l]);
            }
        }
        for p in ptrs {
            // SAFETY: each p is a live packed object from the warp_malloc_packed above, freed once.
            unsafe { h.free(p) };
        }
        assert_eq!(bad_frees(h), 0);
        assert_empty(h);
    }
}

/// A packed block's bound bits are not cleared when it comes back: the next objects' marks
/// clear what lies inside them, so a size read after the block served other objects (packed
/// and slices) is exact, and `realloc` copies the whole object and no more.
#[test]
fn packed_sizes_are_exact_after_the_block_served_others() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    // Lives of one packed block: many bounds, then objects that straddle them.
    for (life, sizes) in [[16u64; 32], [200; 32], [40; 32], [256; 32], [1; 32]].iter().enumerate() {
        let ptrs = cpu.warp_malloc_packed(sizes);
        for (l, &p) in ptrs.iter().enumerate() {
            assert_eq!(h.usable_size(p), sizes[l].div_ceil(16) * 16, "life {life} lane {l}");
            fill(p, sizes[l], (life * 32 + l) as u64);
        }
        // A realloc that grows moves the object and keeps its bytes; one that fits stays.
        // SAFETY: ptrs[0] is a live packed object of this heap, owned here; on success it is
        // replaced by q (freed by the realloc), on failure it stays allocated.
        let q = unsafe { h.realloc(ptrs[0], 1000) };
        assert!(!q.is_null());
        check(q, sizes[0], (life * 32) as u64);
        // SAFETY: ptrs[1] is live and owned here; a shrink keeps it in place.
        assert_eq!(unsafe { h.realloc(ptrs[1], sizes[1].min(8)) }, ptrs[1]);
        h.validate().expect("consistent with live packed objects");
        for p in ptrs[1..].iter().copied().chain([q]) {
            // SAFETY: each came from this life's mallocs (ptrs[0] replaced by q), freed once.
            unsafe { h.free(p) };
        }
        // The packed slot gives back its block (whole again), which the next life claims
        // again, and between two lives it serves 16-byte slices.
        h.trim();
        let s16: Vec<*mut u8> = (0..64).map(|_| h.malloc(16)).collect();
        for p in s16 {
            // SAFETY: p came from the malloc just above, freed once.
            unsafe { h.free(p) };
        }
        h.trim();
        assert_empty(h);
    }
}

/// The 16-byte band packs into blocks of its own geometry (`class::PACKED16_CLASS`): 8192
/// units in 128 KiB, half the installs of class 16 B's 64 KiB blocks. Its objects' bounds
/// span the bits of the block's two 64 KiB units, so an object across the middle (units
/// 4095..4097) keeps its size, as every other does.
#[test]
fn the_16_byte_band_packs_128_kib_blocks() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    // 86 warps of 32 x 48 B (three units each): 85 fill 8160 of a block's 8192 units, the
    // 86th's first ten lanes the rest but two, its other lanes a second block.
    let ptrs: Vec<*mut u8> = (0..86).flat_map(|_| cpu.warp_malloc_packed(&[48; 32])).collect();
    let in_first = (8192 / 3) as usize;
    for (i, &p) in ptrs.iter().enumerate() {
        assert!(!p.is_null(), "object {i}");
        assert_eq!(h.usable_size(p), 48, "object {i}");
        if i < in_first {
            assert_eq!(p as u64, ptrs[0] as u64 + 48 * i as u64, "object {i} in the first block, in order");
        }
        fill(p, 48, i as u64);
    }
    assert!(ptrs[in_first - 1] as u64 - ptrs[0] as u64 > 64 << 10, "the first block is larger than 64 KiB");
    let s = stats(h);
    assert_eq!(s.packed_blocks, 2, "two blocks of 8192 units: {s:?}");
    assert_eq!(s.live_packed, ptrs.len() as u64, "{s:?}");
    for (i, &p) in ptrs.iter().enumerate() {
        check(p, 48, i as u64);
        // SAFETY: each p came from the warp_malloc_packed above, freed once.
        unsafe { h.free(p) };
    }
    assert_eq!(bad_frees(h), 0);
    assert_empty(h);
}

/// A warp of mixed sizes, all up to `MIXED_PACKED_MAX_BYTES`, packs them (one current block
/// for all), each rounded by its own size; a warp with a larger request, or of one size,
/// keeps its classes' slices for every lane. Sizes and `realloc` work for all.
#[test]
fn mixed_warps_of_small_sizes_pack() {
    let cpu = CpuHeap::new(8, 1);
    let h = cpu.heap();
    let max = veballoc::kernels::heap::MIXED_PACKED_MAX_BYTES;
    let small: Vec<u64> = (0..32).map(|l| [24, 100, 33, 512, 129, 16, 65, 1][l % 8]).collect();
    let mut larger = small.clone();
    larger[5] = max + 1;
    let (packed, sliced, uniform) =
        (cpu.warp_malloc(&small), cpu.warp_malloc(&larger), cpu.warp_malloc(&[100; 32]));
    assert_eq!(stats(h).live_packed, 32, "only the small mixed warp packs");
    for (l, &p) in packed.iter().enumerate() {
        let unit = packed_unit(small[l]);
        assert_eq!(h.usable_size(p), small[l].div_ceil(unit) * unit, "lane {l}: {} B", small[l]);
    }
    // The lanes of one unit are back to back, in lane order.
    let sixteen: Vec<usize> = (0..32).filter(|&l| small[l] <= 256).collect();
    for w in sixteen.windows(2) {
        assert_eq!(packed[w[1]] as u64 - packed[w[0]] as u64, small[w[0]].div_ceil(16) * 16);
    }
    for (l, &p) in sliced.iter().enumerate() {
        let class =
            veballoc::kernels::class::warp_class(veballoc::kernels::block::slice_class(larger[l]), false);
        assert_eq!(
            h.usable_size(p),
            veballoc::kernels::block::slice_bytes(class),
            "lane {l}: {} B",
            larger[l]
        );
    }
    let all: Vec<(*mut u8, u64)> = packed
        .into_iter()
        .zip(small.iter().copied())
        .chain(sliced.into_iter().zip(larger.iter().copied()))
        .chain(uniform.into_iter().map(|p| (p, 100)))
        .collect();
    for (i, &(p, size)) in all.iter().enumerate() {
        fill(p, size, i as u64);
    }
    for (i, (p, size)) in all.into_iter().enumerate() {
        check(p, size, i as u64);
        // SAFETY: p came from a warp_malloc above, owned here; the realloc frees it on
        // success (asserted), and q is freed once below.
        let q = unsafe { h.realloc(p, 5000) };
        assert!(!q.is_null());
        check(q, size, i as u64);
        // SAFETY: q came from the realloc above, freed once.
        unsafe { h.free(q) };
    }
    h.trim();
    assert_empty(h);
}

/// A mixed warp's request that its packed rows cannot serve (no block of the packed unit's
/// group to be had) goes on to its own class, which has room: null means full for the class
/// (a review of r44 found the routed request got null here).
#[test]
fn a_routed_request_falls_back_to_its_class() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    // One 192-byte slice: its class's block has room for thousands more (192 B is a class in
    // mixed warps too: `class::warp_class`).
    let keep = h.malloc(192);
    assert!(!keep.is_null());
    // Then 16-byte slices until null: every other segment is group 0's, full.
    let mut small = Vec::new();
    loop {
        let p = h.malloc(16);
        if p.is_null() {
            break;
        }
        small.push(p);
    }
    assert!(CpuHeap::packed_lanes(&[16, 192]) == [true, true], "a mixed small warp packs");
    let mixed = cpu.warp_malloc(&[16, 192]);
    assert!(mixed[0].is_null(), "16 B: the heap is full for its class");
    assert!(!mixed[1].is_null(), "192 B: its class has room");
    assert_eq!(h.usable_size(mixed[1]), 192);
    for p in small.into_iter().chain([keep, mixed[1]]) {
        // SAFETY: each came from a malloc above, freed once.
        unsafe { h.free(p) };
    }
    h.trim();
    assert_empty(h);
}

/// Which lanes pack, where the CPU model and the GPU agree: requests of whole blocks go their
/// own way and do not count; a larger slice request (513 B to 16 KiB) keeps the classes, and
/// so does a warp of one size. (Requests of 16 KiB and up count as larger here and not on the
/// GPU: `CpuHeap::packed_lanes`.)
#[test]
fn mixed_warps_pack_unless_a_request_is_larger() {
    let whole = 1 << 20;
    assert!(veballoc::kernels::heap::takes_unit_run(whole));
    assert_eq!(CpuHeap::packed_lanes(&[16, 32, whole]), [true, true, false]);
    assert_eq!(CpuHeap::packed_lanes(&[16, 32, 1000]), [false; 3], "a larger request keeps the classes");
    assert_eq!(CpuHeap::packed_lanes(&[100; 4]), [false; 4], "one size keeps its class");
}

#[test]
fn packed_warps_are_contiguous_and_free_without_headers() {
    let cpu = CpuHeap::new(8, 2);
    let h = cpu.heap();
    let mut live = Vec::new();
    let (mut split_runs, mut block_units) = (0, [0u64; 3]);
    for round in 0..400u64 {
        // Each request packs in its own size's unit (16, 64 or 256 bytes).
        let max = [64, 1024, 4096][round as usize % 3];
        let sizes: Vec<u64> = (0..32).map(|l| 1 + veballoc::kernels::mix(round * 32 + l) % max).collect();
        let ptrs = cpu.warp_malloc_packed(&sizes);
        let mut split = false;
        for l in 0..32 {
            let unit = packed_unit(sizes[l]);
            block_units[unit.trailing_zeros() as usize / 2 - 2] += sizes[l].div_ceil(unit);
            assert!(!ptrs[l].is_null(), "round {round} lane {l}");
            assert_eq!(ptrs[l] as u64 % unit, 0, "objects start on their unit");
            // A heap block ran out mid-warp: the rest of the unit's lanes were packed again in
            // the next block.
            if let Some(m) = (l + 1..32).find(|&m| packed_unit(sizes[m]) == unit) {
                split |= ptrs[m] as u64 != ptrs[l] as u64 + sizes[l].div_ceil(unit) * unit;
            }
            fill(ptrs[l], sizes[l], round ^ l as u64);
            live.push((ptrs[l], sizes[l], round ^ l as u64));
        }
        split_runs += split as u64;
        // Each object's size, rounded to its unit, is recorded (its bounds), and nothing more:
        // the heap's bytes between objects are no one's.
        for l in 0..32 {
            let unit = packed_unit(sizes[l]);
            assert_eq!(h.usable_size(ptrs[l]), sizes[l].div_ceil(unit) * unit, "round {round} lane {l}");
            if sizes[l] > 16 {
                assert_eq!(h.usable_size(ptrs[l].wrapping_add(16)), 0, "no object starts inside one");
            }
        }
    }
    let per_block = |i: usize| {
        veballoc::kernels::block::slices_per_block(veballoc::kernels::slice::PACKED_CLASSES[i]) as u64
    };
    let blocks: u64 = block_units.iter().enumerate().map(|(i, u)| u.div_ceil(per_block(i))).sum();
    assert!(
        split_runs <= blocks,
        "warps split only at block ends ({split_runs} split warps, {blocks} blocks)"
    );
    assert!(block_units.iter().all(|&u| u > 0), "all three units were used: {block_units:?}");
    let s = stats(h);
    assert_eq!(s.live_packed, live.len() as u64, "{s:?}");
    assert_eq!(s.bytes_in_use, 0, "packed objects are not counted in bytes: {s:?}");
    // Free in an interleaved order, checking every object first.
    live.sort_by_key(|&(p, _, _)| (p as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    for (i, &(p, size, tag)) in live.iter().enumerate() {
        check(p, size, tag);
        // SAFETY: each p is a live packed object from the warp_malloc_packed above, freed once.
        unsafe { h.free(p) };
        if i % 1000 == 0 {
            stats(h);
        }
    }
    assert_eq!(bad_frees(h), 0);
    assert_empty(h);
}

#[test]
fn collective_calls_on_the_host_serve_one_thread() {
    let cpu = CpuHeap::new(4, 1);
    let h = cpu.heap();
    // SAFETY: a host warp (and block) is this one thread, which makes the call alone.
    let (a, b) = unsafe { (h.malloc_warp(100), h.malloc_block(100)) };
    assert!(!a.is_null() && !b.is_null() && a != b);
    assert_eq!((h.usable_size(a), h.usable_size(b)), (104, 104));
    // A 10240-byte slice (classes are eight per doubling there).
    // SAFETY: a host warp (and block) is this one thread, which makes the call alone.
    let big = unsafe { h.malloc_block(10_000) };
    assert_eq!(h.usable_size(big), 10240);
    for p in [a, b, big] {
        // SAFETY: a, b and big came from the mallocs above; each is freed once, unused after.
        unsafe { h.free(p) };
    }
    assert_empty(h);
}

/// One step of the fuzzer.
#[derive(Clone, Debug)]
enum Op {
    Malloc(u64),
    Free(usize),
    Realloc(usize, u64),
    Packed(Vec<u64>),
    /// `malloc` by a warp of these sizes (`CpuHeap::warp_malloc`: a mixed warp packs its
    /// small requests).
    Warp(Vec<u64>),
    /// Free, then free the same pointer again at once (before any malloc can reuse it); a
    /// no-op where the build cannot catch it (`double_free_caught`).
    FreeTwice(usize),
    /// Free a misaligned pointer into a live allocation.
    FreeInterior(usize),
}

fn size_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 1u64..=4096,
        3 => 4097u64..=(1 << 20),
        1 => ((1 << 20) + 1)..=SEGMENT_BYTES,
        1 => (SEGMENT_BYTES + 1)..=(2 * SEGMENT_BYTES),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => size_strategy().prop_map(Op::Malloc),
        4 => any::<usize>().prop_map(Op::Free),
        2 => (any::<usize>(), size_strategy()).prop_map(|(i, s)| Op::Realloc(i, s)),
        2 => prop::collection::vec(1u64..=4096, 1..=32).prop_map(Op::Packed),
        2 => prop::collection::vec(size_strategy(), 1..=32).prop_map(Op::Warp),
        1 => any::<usize>().prop_map(Op::FreeTwice),
        1 => any::<usize>().prop_map(Op::FreeInterior),
    ]
}

/// Whether this build catches a second free of the live allocation `l`: with the checks,
/// always; without them, for whole blocks and segment runs (a parked block's kind says free;
/// a freed run's head entry is gone).
fn double_free_caught(h: &DeviceHeap, l: &Live) -> bool {
    CHECKS || (!l.packed && h.usable_size(l.p) > veballoc::kernels::block::MAX_SLICE_BYTES)
}

/// A live allocation of the model: pointer, requested size, pattern tag, packed or not.
struct Live {
    p: *mut u8,
    size: u64,
    tag: u64,
    packed: bool,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random malloc/free/realloc/packed sequences, with bad frees mixed in; after every
    /// step the validator walks the heap and its statistics must match the model.
    #[test]
    fn fuzz_random_sequences_validate_after_every_step(ops in prop::collection::vec(op_strategy(), 1..120)) {
        let cpu = CpuHeap::new(6, 2);
        let h = cpu.heap();
        let mut live: Vec<Live> = Vec::new();
        let (mut expected_bad, mut tag) = (0u64, 0u64);
        for op in ops {
            tag += 1;
            match op {
                Op::Malloc(size) => {
                    let p = h.malloc(size);
                    if !p.is_null() {
                        prop_assert!(h.usable_size(p) >= size);
                        fill(p, size, tag);
                        live.push(Live { p, size, tag, packed: false });
                    }
                }
                Op::Free(i) if !live.is_empty() => {
                    let l = live.swap_remove(i % live.len());
                    check(l.p, l.size, l.tag);
                    // SAFETY: l.p was live and owned here (just taken out of `live`): freed once, unused
                    // after.
                    unsafe { h.free(l.p) };
                }
                Op::Realloc(i, size) if !live.is_empty() => {
                    let i = i % live.len();
                    // SAFETY: live[i].p is live and owned here, and nothing else touches it; when the realloc
                    // succeeds q replaces it below, and when it fails (null) it stays allocated.
                    let q = unsafe { h.realloc(live[i].p, size) };
                    if !q.is_null() {
                        check_prefix(q, live[i].size, size, live[i].tag);
                        fill(q, size, tag);
                        // Kept in place (a packed object that has room stays packed), or moved
                        // to `malloc`'s memory.
                        let packed = live[i].packed && q == live[i].p;
                        live[i] = Live { p: q, size, tag, packed };
                    }
                }
                Op::Warp(sizes) => {
                    // A routed lane that the packed rows could not serve took its class.
                    let (ptrs, packed) = cpu.warp_malloc_paths(&sizes);
                    for (lane, p) in ptrs.into_iter().enumerate() {
                        if !p.is_null() {
                            prop_assert!(h.usable_size(p) >= sizes[lane]);
                            fill(p, sizes[lane], tag + lane as u64);
                            live.push(Live { p, size: sizes[lane], tag: tag + lane as u64, packed: packed[lane] });
                        }
                    }
                }
                Op::Packed(sizes) => {
                    for (lane, p) in cpu.warp_malloc_packed(&sizes).into_iter().enumerate() {
                        if !p.is_null() {
                            prop_assert_eq!(h.usable_size(p), sizes[lane].div_ceil(packed_unit(sizes[lane])) * packed_unit(sizes[lane]));
                            fill(p, sizes[lane], tag + lane as u64);
                            live.push(Live { p, size: sizes[lane], tag: tag + lane as u64, packed: true });
                        }
                    }
                }
                Op::FreeTwice(i) if !live.is_empty() && double_free_caught(h, &live[i % live.len()]) => {
                    let l = live.swap_remove(i % live.len());
                    // SAFETY: l.p was live and owned here (just taken out of `live`): freed once here.
                    unsafe { h.free(l.p) };
                    // SAFETY: not a valid free, on purpose: the second free of l.p, at once (no malloc can
                    // have handed it out again), which this build catches (`double_free_caught`: counted and
                    // refused, checked below); a refused free changes nothing.
                    unsafe { h.free(l.p) };
                    expected_bad += 1;
                }
                Op::FreeInterior(i) if !live.is_empty() => {
                    let l = &live[i % live.len()];
                    // SAFETY: p + 8 stays inside l's allocation (every size is at least 16).
                    // Not a valid free, on purpose: a pointer inside a live allocation, which the
                    // heap must refuse and count (checked below); a refused free changes nothing
                    // and never touches the allocation's memory.
                    unsafe { h.free(l.p.add(8)) };
                    expected_bad += 1;
                }
                _ => {}
            }
            let s = stats(h);
            prop_assert_eq!(bad_frees(h), expected_bad);
            let bytes: u64 = live.iter().filter(|l| !l.packed).map(|l| h.usable_size(l.p)).sum();
            prop_assert_eq!(s.bytes_in_use, bytes);
            prop_assert_eq!(s.live_packed, live.iter().filter(|l| l.packed).count() as u64);
        }
        for l in &live {
            check(l.p, l.size, l.tag);
        }
        for l in live {
            // SAFETY: each l.p is live and owned here, freed once and not used after.
            unsafe { h.free(l.p) };
        }
        assert_empty(h);
    }
}

#[test]
fn threads_packing_and_freeing_each_others_objects() {
    use std::sync::Mutex;
    const THREADS: u64 = 8;
    let cpu = CpuHeap::new(16, 4); // fewer shards than threads: shared current blocks
    let h = cpu.heap();
    let pool: Mutex<Vec<(u64, u64, u64)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (cpu, pool) = (&cpu, &pool);
            s.spawn(move || {
                veballoc::kernels::arch::set_host_thread_index(t);
                for round in 0..300u64 {
                    let seed = t << 32 | round;
                    let sizes: Vec<u64> =
                        (0..32).map(|l| 1 + veballoc::kernels::mix(seed * 32 + l) % 1024).collect();
                    let mut mine = Vec::new();
                    for (l, p) in cpu.warp_malloc_packed(&sizes).into_iter().enumerate() {
                        assert!(!p.is_null());
                        fill(p, sizes[l], seed ^ l as u64);
                        mine.push((p as u64, sizes[l], seed ^ l as u64));
                    }
                    // Swap half with the pool, free what we got from other threads.
                    let theirs: Vec<_> = {
                        let mut pool = pool.lock().unwrap();
                        let keep = pool.len() - pool.len().min(16);
                        let theirs = pool.split_off(keep);
                        pool.extend(mine.drain(..16));
                        theirs
                    };
                    for (p, size, tag) in theirs.into_iter().chain(mine) {
                        check(p as *mut u8, size, tag);
                        // SAFETY: each p came from a warp_malloc_packed and is this thread's alone (its own,
                        // or taken out of the shared pool under the lock): freed once, unused after.
                        unsafe { cpu.heap().free(p as *mut u8) };
                    }
                }
            });
        }
    });
    for (p, size, tag) in pool.into_inner().unwrap() {
        check(p as *mut u8, size, tag);
        // SAFETY: each p left in the pool is live and owned here (the threads joined), freed once.
        unsafe { h.free(p as *mut u8) };
    }
    assert_eq!(bad_frees(h), 0);
    assert_empty(h);
}

/// The hand-out bitmap marks a slice by its first 16-byte unit. 24-byte slices start every
/// 1.5 units, so a run of them taken from an odd slice (the second warp's here) must be marked
/// at each slice's own byte offset: marking `first unit + i * 24 / 16` marked the wrong units,
/// and their frees were counted as double frees (H100, checks PTX: 372 double frees in a
/// 100-round churn, and 24-byte slices left "live" after every free).
#[test]
#[cfg_attr(
    not(any(feature = "checks", debug_assertions)),
    ignore = "needs the safety checks (cargo test --features checks)"
)]
fn slices_of_24_bytes_from_odd_offsets_are_marked_and_freed() {
    let cpu = CpuHeap::new(2, 1);
    let h = cpu.heap();
    assert!(h.checking(), "this build has no safety checks (veballoc_kernels::CHECKS)");
    let mut live = cpu.warp_malloc(&[24]);
    for n in [3, 32, 7, 32] {
        live.extend(cpu.warp_malloc(&vec![20; n]));
    }
    assert!(live.iter().all(|p| !p.is_null()));
    let s = stats(h);
    assert_eq!(s.bytes_in_use, live.len() as u64 * 24, "{s:?}");
    for p in live {
        // SAFETY: each p came from the warp_mallocs above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    assert_eq!(bad_frees(h), 0, "frees of handed-out slices counted as bad");
    assert_empty(h);
}

/// Safe calls with indices past the heap's tables do nothing (session 21's review): a
/// `preformat` for a group past the last wrote a segment entry for it before any bounds
/// check (the validator then found a corrupt entry), and a partial take for a class past the
/// last built an out-of-range slice before it panicked.
#[test]
fn safe_calls_with_out_of_range_indices_change_nothing() {
    use veballoc::kernels::block::{NUM_CLASSES, NUM_GROUPS};
    let cpu = CpuHeap::new(2, 1);
    let h = cpu.heap();
    for g in [NUM_GROUPS, NUM_GROUPS + 2] {
        assert!(!h.blocks().preformat(g, 1), "preformat of group {g}");
    }
    h.validate().expect("the heap after preformats of no group");
    for c in [NUM_CLASSES, NUM_CLASSES + 5] {
        assert_eq!(h.slots().take_partial(c, 1, 1), (0, 0), "a partial take of class {c}");
    }
    h.validate().expect("the heap after partial takes of no class");
}

/// `CpuHeap::with_layout` trusts every offset of its layout, whose fields are public: it
/// takes only what `HeapLayout::try_new` (and `with_pin_shift`) make, unchanged. A layout
/// with a counters offset far past the metadata crashed the process (SIGSEGV) from safe code
/// at the first counter read.
#[test]
#[should_panic(expected = "with_layout takes a layout")]
fn a_tampered_layout_is_refused() {
    let mut layout = veballoc::kernels::HeapLayout::new(1, 1, false);
    layout.counters_off = 1 << 40;
    let cpu = CpuHeap::with_layout(layout);
    let _ = cpu.heap().counter(counter::OUT_OF_MEMORY);
}

/// A heap of no segment is refused: it asked the host allocator for zero bytes, which is
/// undefined behaviour, and then freed that.
#[test]
#[should_panic(expected = "a layout of 1..=MAX_SEGMENTS segments")]
fn a_heap_of_no_segment_is_refused() {
    let _ = CpuHeap::new(0, 1);
}
