//! Defects found by review (issue 10), each shown on the CPU model of the allocator, in the
//! configuration the benchmarks use: heaps without the hand-out bitmap (`with_checks(.., false)`).

use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::counter;
use veballoc::kernels::{DeviceHeap, Stats};

/// A request served by a whole block (above the largest slice): a 2 MiB block of one slice.
const WHOLE: u64 = 2 << 20;

fn stats(h: &DeviceHeap) -> Stats {
    h.validate().unwrap_or_else(|e| panic!("heap inconsistent: {e:?}"))
}

/// Issue 10.4: a second free of a whole block, without the checks, must be counted and
/// ignored. It used to take the slice path (the first free had set the kind to "slices") and
/// give back a slice of a parked block, so that the validator failed and a later whole-block
/// malloc could return memory a user still held.
#[test]
fn whole_block_double_free_without_checks_is_counted_and_harmless() {
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    assert!(!h.checking());
    let keep = h.malloc(WHOLE); // keeps the segment formatted for the class
    let p = h.malloc(WHOLE);
    assert!(!p.is_null() && !keep.is_null());
    // SAFETY: p came from the malloc above, is freed once here and not used after.
    unsafe { h.free(p) };
    // SAFETY: not a valid free, on purpose: the second free of a whole block at once (no malloc
    // can have handed it out again), which the heap refuses and counts even without the
    // checks (asserted next); a refused free changes nothing.
    unsafe { h.free(p) };
    assert_eq!(h.counter(counter::DOUBLE_FREE).load_acquire(), 1, "the second free is counted");
    assert_eq!(stats(h).bytes_in_use, h.usable_size(keep));
    // Every later whole block is distinct from the live one and from each other.
    let mut got = vec![keep as u64];
    for _ in 0..300 {
        let q = h.malloc(WHOLE);
        if q.is_null() {
            break;
        }
        got.push(q as u64);
    }
    let n = got.len();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), n, "a block was handed out twice");
    assert_eq!(stats(h).bytes_in_use, n as u64 * h.usable_size(keep));
}

/// Issue 10.4, the same for a whole block whose slices were handed out before: a double free
/// of a block-aligned pointer into a parked block (every slice given back) is counted.
#[test]
fn free_into_a_parked_block_without_checks_is_counted() {
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    let keep = h.malloc(WHOLE);
    let p = h.malloc(WHOLE);
    // SAFETY: p came from the malloc above, is freed once here and not used after.
    unsafe { h.free(p) };
    // SAFETY: pointer arithmetic only; the heap never dereferences it.
    let inside = unsafe { p.add(4096) };
    // SAFETY: not a valid free, on purpose: a pointer into p's block, parked by the free above
    // (no malloc since), which the heap refuses and counts (asserted next); a refused free
    // changes nothing.
    unsafe { h.free(inside) }; // a pointer into the parked block
    let bad =
        h.counter(counter::DOUBLE_FREE).load_acquire() + h.counter(counter::INVALID_FREE).load_acquire();
    assert_eq!(bad, 1, "a free into a parked block is counted");
    assert_eq!(stats(h).bytes_in_use, h.usable_size(keep));
    // SAFETY: keep came from the malloc above, is freed once and not used after.
    unsafe { h.free(keep) };
}

/// The stamp kernel that names an allocator build's checks, in veballoc's PTX and swapped.
fn stamps() -> (&'static str, &'static str) {
    use veballoc::kernels::{STAMP_WITHOUT_CHECKS, STAMP_WITH_CHECKS};
    if veballoc::PTX_HAS_CHECKS {
        (STAMP_WITH_CHECKS, STAMP_WITHOUT_CHECKS)
    } else {
        (STAMP_WITHOUT_CHECKS, STAMP_WITH_CHECKS)
    }
}

/// Issue 10.6: every PTX build of the allocator says whether it keeps the checks' bitmap, and
/// a module built the other way than veballoc's PTX is refused with a clear error.
#[test]
fn modules_built_with_other_checks_are_refused() {
    let (ours, other) = stamps();
    assert_eq!(
        veballoc::ptx_checks(veballoc::PTX),
        Some(veballoc::PTX_HAS_CHECKS),
        "veballoc's PTX is stamped"
    );
    assert!(veballoc::check_layout_stamp(veballoc::PTX, veballoc::PTX_HAS_CHECKS).is_ok());
    let swapped = veballoc::PTX.replace(ours, other);
    let err = veballoc::check_layout_stamp(&swapped, veballoc::PTX_HAS_CHECKS).unwrap_err();
    assert!(matches!(err, veballoc::Error::ChecksMismatch { .. }), "{err}");
    assert!(err.to_string().contains("safety checks"), "{err}");
    // A module without the allocator has no stamp and is accepted.
    assert_eq!(veballoc::ptx_checks(".version 7.0\n.target sm_80\n"), None);
}

/// Issue 9.1: four shards each allocate and free one 4 KiB slice. Their current blocks keep
/// the heap's one segment formatted for 4 KiB slices with 0 live bytes; `malloc(16)` used to
/// get null until the host called `trim`.
#[test]
fn current_blocks_of_other_shards_do_not_pin_the_heap() {
    use veballoc::kernels::arch::set_host_thread_index;
    let cpu = CpuHeap::with_checks(1, 4, false);
    let h = cpu.heap();
    for shard in 0..4 {
        set_host_thread_index(shard);
        let p = h.malloc(4096);
        assert!(!p.is_null());
        // SAFETY: p came from the malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
    set_host_thread_index(0);
    let q = h.malloc(16);
    assert!(!q.is_null(), "null with 0 live bytes: the heap was not full");
    // SAFETY: q came from the malloc above, is freed once and not used after.
    unsafe { h.free(q) };
    assert_eq!(stats(h).bytes_in_use, 0);
}

/// Issue 9.1: after any sequence of requests of every kind and size has been freed, with no
/// host `trim`, the whole heap is one free run again: a request for all of it succeeds.
/// Current blocks of every class on every shard, packed blocks, and segments formatted for
/// other classes must all be taken back first.
#[test]
fn with_nothing_live_a_request_for_the_whole_heap_succeeds() {
    use veballoc::kernels::arch::set_host_thread_index;
    use veballoc::kernels::SEGMENT_BYTES;
    const SEGMENTS: u32 = 12;
    let cpu = CpuHeap::with_checks(SEGMENTS, 4, false);
    let h = cpu.heap();
    let sizes = [16u64, 24, 100, 1000, 3000, 4096, 4097, 10_000, 70_000, 1 << 20, 5 << 20, 20 << 20];
    for round in 0..3u64 {
        let mut live = Vec::new();
        for (i, &s) in sizes.iter().enumerate() {
            set_host_thread_index((i as u64 + round) % 4);
            for _ in 0..3 {
                let p = h.malloc(s);
                if !p.is_null() {
                    live.push(p);
                }
            }
            live.extend(cpu.warp_malloc_packed(&[16, 48, 200, 900]).into_iter().filter(|p| !p.is_null()));
        }
        assert!(live.len() > 30, "round {round}: only {} allocations", live.len());
        for p in live {
            // SAFETY: each p came from this round's mallocs above, is freed once and not used after.
            unsafe { h.free(p) };
        }
        set_host_thread_index(round % 4);
        let all = h.malloc(SEGMENTS as u64 * SEGMENT_BYTES);
        assert!(!all.is_null(), "round {round}: 0 live bytes, yet the whole heap could not be had");
        // SAFETY: `all` came from the malloc above, is freed once and not used after.
        unsafe { h.free(all) };
    }
    // (Nulls during the rounds are real: with live slices of every class, each in a segment of
    // its own, no two segments in a row are free for a 20 MiB run.)
    let s = stats(h);
    assert_eq!((s.bytes_in_use, s.free_segments), (0, SEGMENTS as u64), "{s:?}");
}

/// The bound's exception, as documented: segments the host holds (its pool's, live or idle)
/// count as live, so with nothing live on the device a request for the whole heap gets null
/// while the host pool keeps a segment, and succeeds once it is returned (`Heap::trim`).
#[test]
fn segments_the_host_holds_count_as_live() {
    use veballoc::kernels::SEGMENT_BYTES;
    const SEGMENTS: u32 = 12;
    let cpu = CpuHeap::with_checks(SEGMENTS, 4, false);
    let h = cpu.heap();
    let seg = h.claim_host_reclaiming(1).expect("a segment for the host pool");
    assert!(h.malloc(SEGMENTS as u64 * SEGMENT_BYTES).is_null(), "the host's segment is not the device's");
    let most = h.malloc((SEGMENTS - 1) as u64 * SEGMENT_BYTES);
    assert!(!most.is_null(), "every other segment");
    // SAFETY: `most` came from the malloc above, is freed once and not used after.
    unsafe { h.free(most) };
    // SAFETY: seg came from claim_host_reclaiming above, is given back once and not used after.
    unsafe { h.release_host(seg, 1) };
    let all = h.malloc(SEGMENTS as u64 * SEGMENT_BYTES);
    assert!(!all.is_null(), "the whole heap once the host returned its segment");
    // SAFETY: `all` came from the malloc above, is freed once and not used after.
    unsafe { h.free(all) };
    let s = stats(h);
    assert_eq!((s.bytes_in_use, s.free_segments), (0, SEGMENTS as u64), "{s:?}");
}

/// `free` takes a block's kind from the copy kept for the pointer's 64 KiB unit (r30), not from
/// the block's own word: pointers into a later unit of a multi-unit block must be judged as
/// the block's word would judge them, whatever the block served before. A 1 MiB block of
/// 512-byte slices (16 units): a slice in unit 5 frees; once the block is parked again, a
/// free there is a double free (a copy left at "slices" would give a slice back to a parked
/// block, which the validator reports). A run of 256 KiB blocks (4 units each): pointers into
/// its head's later units and into its tails are invalid, and after its free a tail's start
/// and a unit inside it are double frees.
#[test]
fn frees_in_later_units_of_a_block_follow_its_kind() {
    const UNIT: u64 = 64 << 10;
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    // Acquire: one thread, no kernel running; acquire for form's sake.
    let count = |c: usize| h.counter(c).load_acquire();
    // Slices of one 1 MiB block: 2048 of 512 B; the 640th starts unit 5.
    let slices: Vec<*mut u8> = (0..2048).map(|_| h.malloc(512)).collect();
    let block = slices[0] as u64;
    assert!(
        slices.iter().enumerate().all(|(i, &p)| p as u64 == block + 512 * i as u64),
        "one block, in order"
    );
    let in_unit5 = slices[640];
    assert_eq!((in_unit5 as u64 - block) / UNIT, 5);
    // SAFETY: in_unit5 came from the mallocs above, is freed once here and not used after.
    unsafe { h.free(in_unit5) };
    assert_eq!(stats(h).live_slices.iter().sum::<u64>(), 2047);
    for (i, &p) in slices.iter().enumerate() {
        if i != 640 {
            // SAFETY: each other slice came from the mallocs above, is freed once and not used after.
            unsafe { h.free(p) };
        }
    }
    assert_eq!(stats(h).bytes_in_use, 0, "the block recycled");
    // SAFETY: not a valid free, on purpose: in_unit5 again, its block recycled and parked (no
    // malloc since), which the heap refuses and counts (asserted next); a refused free
    // changes nothing.
    unsafe { h.free(in_unit5) };
    assert_eq!(
        (count(counter::DOUBLE_FREE), count(counter::INVALID_FREE)),
        (1, 0),
        "a slice of a parked block"
    );
    stats(h);
    // A run of nine 256 KiB blocks (a request of 2 MiB and a byte).
    let run = h.malloc((2 << 20) + 1);
    assert!(!run.is_null());
    let at = |off: u64| (run as u64 + off) as *mut u8;
    // SAFETY: not a valid free, on purpose: a pointer inside the live run, refused and counted
    // (asserted below) like the next two; a refused free changes nothing.
    unsafe { h.free(at(UNIT)) }; // the head's second unit
                                 // SAFETY: as above: not a valid free, on purpose (the first tail's start).
    unsafe { h.free(at(4 * UNIT)) }; // the first tail's start
                                     // SAFETY: as above: not a valid free, on purpose (inside the first
                                     // tail).
    unsafe { h.free(at(5 * UNIT)) }; // inside the first tail
    assert_eq!(count(counter::INVALID_FREE), 3, "pointers inside a run");
    assert_eq!(stats(h).bytes_in_use, 9 * 4 * UNIT);
    // SAFETY: run came from the malloc above (live: the frees above were refused), freed once.
    unsafe { h.free(run) };
    // SAFETY: not a valid free, on purpose: the start of a block of the run freed just above, now
    // parked (no malloc since), refused and counted (asserted below) like the next one.
    unsafe { h.free(at(4 * UNIT)) }; // a parked block's start
                                     // SAFETY: as above: not a valid free, on purpose (inside a parked
                                     // block).
    unsafe { h.free(at(5 * UNIT)) }; // inside a parked block
    assert_eq!(count(counter::DOUBLE_FREE), 3, "pointers into the freed run's parked blocks");
    assert_eq!(count(counter::INVALID_FREE), 3);
    h.trim();
    assert_eq!(stats(h).bytes_in_use, 0);
}
