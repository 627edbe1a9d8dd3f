//! GPU tests of the defects found by review (issue 10) that only a real warp can show.
//! They need a CUDA GPU: ignored by default, run on a GPU machine with `--ignored`, where
//! they fail (not skip) if no GPU is found.

use cust::memory::{CopyDestination, DeviceBuffer};
use veballoc::{Gpu, Heap};

const BLOCK: u32 = 256;
/// 8 GiB: a thread block whose thread 0 asks for 4 KiB takes from its multiprocessor's current
/// block of 4 KiB slices, a whole 16 MiB segment: 132 of them take 2.1 GiB.
const HEAP: u64 = 8 << 30;

fn gpu() -> Gpu {
    let g = Gpu::new().expect("this test needs a CUDA GPU");
    eprintln!("GPU: {} (driver {})", g.name(), g.driver_version());
    g
}

fn host<T: cust::memory::DeviceCopy + Default + Clone>(b: &DeviceBuffer<T>) -> Vec<T> {
    let mut v = vec![T::default(); b.len()];
    b.copy_to(&mut v[..]).unwrap();
    v
}

/// Allocates with `kernel` (one of the `_sizes` kernels) for `sizes.len()` threads, writes and
/// verifies every word, checks that no two allocations overlap (by requested size), frees
/// everything and checks that the heap is empty and counted no bad free.
fn mixed_sizes_round(gpu: &Gpu, heap: &Heap, kernel: &str, sizes: &[u32]) {
    let n = sizes.len() as u64;
    let ptrs = veballoc::zeroed_u64s(n as usize).unwrap();
    let errs = veballoc::zeroed_u64s(3).unwrap();
    let sizes_buf = DeviceBuffer::from_slice(sizes).unwrap();
    let (arg, p, e, sz) = (
        heap.arg(),
        ptrs.as_device_ptr().as_raw(),
        errs.as_device_ptr().as_raw(),
        sizes_buf.as_device_ptr().as_raw(),
    );
    let (tag, zero) = (11u64, 0u64);
    // SAFETY: argument lists match the kernels' signatures in kernels/src/entry.rs.
    unsafe {
        gpu.launch(kernel, n, BLOCK, veballoc::kernel_args![arg, p, n, zero, sz]).unwrap();
        gpu.launch("vb_write", n, BLOCK, veballoc::kernel_args![p, n, zero, sz, tag]).unwrap();
        gpu.launch("vb_verify", n, BLOCK, veballoc::kernel_args![p, n, zero, sz, tag, e]).unwrap();
    }
    gpu.sync().unwrap();
    let [bad, nulls, misaligned] = host(&errs)[..] else { unreachable!() };
    assert_eq!((bad, nulls, misaligned), (0, 0, 0), "{kernel}: overwritten words, nulls, misaligned");
    let hp = host(&ptrs);
    let mut order: Vec<usize> = (0..n as usize).collect();
    order.sort_by_key(|&i| hp[i]);
    for w in order.windows(2) {
        assert!(
            hp[w[0]] + sizes[w[0]] as u64 <= hp[w[1]],
            "{kernel}: thread {} ({} B at {:#x}) overlaps thread {} ({} B at {:#x})",
            w[0],
            sizes[w[0]],
            hp[w[0]],
            w[1],
            sizes[w[1]],
            hp[w[1]]
        );
    }
    // A mixed warp's small requests may be packed objects (counted as objects, each at most
    // MIXED_PACKED_MAX_BYTES), the rest slices counted in bytes.
    let small = veballoc::kernels::heap::MIXED_PACKED_MAX_BYTES;
    let asked: u64 = sizes.iter().map(|&s| s as u64).sum();
    let asked_big: u64 = sizes.iter().map(|&s| s as u64).filter(|&s| s > small).sum();
    let s = heap.stats().unwrap();
    assert!(
        s.bytes_in_use >= asked_big && s.bytes_in_use + s.live_packed * small >= asked,
        "{kernel}: {s:?} holds less than the {asked} bytes asked"
    );
    // SAFETY: as above.
    unsafe { gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n]).unwrap() };
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.bytes_in_use, s.invalid_frees, s.double_frees), (0, 0, 0), "{kernel}: {s:?}");
    assert_eq!(s.free_segments, heap.layout().num_segments as u64, "{kernel}: {s:?}");
}

/// Issue 10.3: `malloc_warp` with different sizes in one warp used to hand every lane
/// `base + rank * its own slice size` from a run taken for the leader's class, so a 4 KiB lane
/// of a warp led by a 16-byte lane got 16 bytes spaced 4 KiB apart, over other lanes' memory.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_malloc_warp_with_mixed_sizes_hands_out_disjoint_memory() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP).unwrap();
    let n = 1u64 << 16;
    // Even lanes 16 bytes, odd lanes 4 KiB; then every lane a different class.
    let alternating: Vec<u32> = (0..n).map(|i| if i % 2 == 0 { 16 } else { 4096 }).collect();
    mixed_sizes_round(&gpu, &heap, "vb_malloc_warp_sizes", &alternating);
    let spread: Vec<u32> = (0..n).map(|i| 16u32 << (i % 9)).collect();
    mixed_sizes_round(&gpu, &heap, "vb_malloc_warp_sizes", &spread);
    heap.destroy().unwrap();
}

/// Issue 10.3 for `malloc_block`: thread 0 takes slices for its own class; threads asking for
/// more (or for whole blocks, or nothing) must not use those slices, and must not skip the
/// barriers.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_malloc_block_with_mixed_sizes_hands_out_disjoint_memory() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP).unwrap();
    let n = 1u64 << 16;
    // Thread 0 of each block asks for 16 bytes; others for up to 4 KiB, or a whole block.
    let sizes: Vec<u32> = (0..n)
        .map(|i| match i % 7 {
            0 => 16,
            1 | 2 => 48,
            3 => 1000,
            4 => 4096,
            5 => 8192,
            _ => 16,
        })
        .collect();
    mixed_sizes_round(&gpu, &heap, "vb_malloc_cta_sizes", &sizes);
    // One size per block, as the fast path expects, for comparison.
    let same: Vec<u32> = vec![256; n as usize];
    mixed_sizes_round(&gpu, &heap, "vb_malloc_cta_sizes", &same);
    heap.destroy().unwrap();
}

/// Issue 10.6: `load_module` refuses a module whose allocator keeps other metadata than
/// veballoc's PTX (here veballoc's own PTX with the other build's stamp); it used to load it,
/// and a heap used by both modules was corrupted.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_module_with_other_checks_is_refused() {
    use veballoc::kernels::{STAMP_WITHOUT_CHECKS, STAMP_WITH_CHECKS};
    let gpu = gpu();
    let (ours, other) = if gpu.checks() {
        (STAMP_WITH_CHECKS, STAMP_WITHOUT_CHECKS)
    } else {
        (STAMP_WITHOUT_CHECKS, STAMP_WITH_CHECKS)
    };
    let ptx = std::fs::read_to_string(std::env::var(veballoc::PTX_FILE_ENV).unwrap_or_default())
        .unwrap_or_else(|_| veballoc::PTX.to_string());
    assert!(gpu.load_module(&ptx, veballoc::DEFAULT_MAX_REGISTERS).is_ok());
    match gpu.load_module(&ptx.replace(ours, other), veballoc::DEFAULT_MAX_REGISTERS) {
        Err(veballoc::Error::ChecksMismatch { .. }) => {}
        Err(e) => panic!("refused for the wrong reason: {e}"),
        Ok(_) => panic!("a module built with other checks was loaded"),
    }
}

/// `vb_malloc` of `size` bytes on `n` threads; returns the pointers.
fn malloc_n(gpu: &Gpu, heap: &Heap, n: u64, size: u64) -> Vec<u64> {
    let ptrs = veballoc::zeroed_u64s(n as usize).unwrap();
    let (arg, p, none) = (heap.arg(), ptrs.as_device_ptr().as_raw(), 0u64);
    // SAFETY: argument list matches vb_malloc in kernels/src/entry.rs.
    unsafe { gpu.launch("vb_malloc", n, BLOCK, veballoc::kernel_args![arg, p, n, size, none]).unwrap() };
    gpu.sync().unwrap();
    host(&ptrs)
}

/// `vb_free` of `ptrs`.
fn free_all(gpu: &Gpu, heap: &Heap, ptrs: &[u64]) {
    let buf = DeviceBuffer::from_slice(ptrs).unwrap();
    let (arg, p, n) = (heap.arg(), buf.as_device_ptr().as_raw(), ptrs.len() as u64);
    // SAFETY: argument list matches vb_free in kernels/src/entry.rs.
    unsafe { gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n]).unwrap() };
    gpu.sync().unwrap();
}

/// Frees `ptrs`, trims, checks that the heap is whole again (nothing in use, no bad free,
/// every segment free) and destroys it.
fn free_all_and_check_whole(gpu: &Gpu, heap: Heap, ptrs: &[u64]) {
    free_all(gpu, &heap, ptrs);
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.bytes_in_use, s.invalid_frees, s.double_frees), (0, 0, 0), "{s:?}");
    assert_eq!(s.free_segments, heap.layout().num_segments as u64, "{s:?}");
    heap.destroy().unwrap();
}

/// Issue 9.1 / 10.2: requests that exactly fill the heap all succeed, whatever the
/// multiprocessors' current blocks hold (slices left in other shards' blocks are taken, and
/// nobody gives up waiting while memory is left): 2^20 x 4 KiB in 4 GiB (blocks of 1 MiB, 16
/// to a segment, none left over), and 2^20 x 16 B in one segment.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_requests_that_exactly_fill_the_heap_all_succeed() {
    let gpu = gpu();
    for (size, n) in [(4096u64, 1u64 << 20), (16, 1 << 20)] {
        let heap = Heap::new(&gpu, size * n).unwrap();
        assert_eq!(heap.capacity(), size * n);
        let ptrs = malloc_n(&gpu, &heap, n, size);
        let nulls = ptrs.iter().filter(|&&p| p == 0).count();
        assert_eq!(nulls, 0, "{n} x {size} B in a heap of exactly that size: {nulls} nulls");
        let mut sorted = ptrs.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ptrs.len(), "a slice was handed out twice");
        free_all(&gpu, &heap, &ptrs);
        heap.destroy().unwrap();
    }
}

/// Issue 9.1: a kernel in which every thread allocates and frees 4 KiB leaves each
/// multiprocessor's current block (1 MiB of 4 KiB slices; a whole 16 MiB segment before the
/// finer classes) pinned with nothing live. With no host trim, a request for the whole heap must still succeed: it
/// used to get null until the host called `trim`.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_current_blocks_do_not_pin_the_heap() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, 256 << 20).unwrap();
    // 132 KiB-slices' worth per multiprocessor at most: the blocks are left partly handed out
    // (a heap of 16 blocks of 4096 slices cannot be handed out whole by 33792 requests).
    let n = 132 * 256;
    let ptrs = malloc_n(&gpu, &heap, n, 4096);
    assert!(ptrs.iter().all(|&p| p != 0));
    free_all(&gpu, &heap, &ptrs);
    let all = malloc_n(&gpu, &heap, 1, heap.capacity());
    assert_ne!(all[0], 0, "0 live bytes, yet the whole heap could not be had");
    free_all(&gpu, &heap, &all);
    let s = heap.stats().unwrap();
    assert_eq!(s.bytes_in_use, 0, "{s:?}");
}

/// Issue 9.2 / 9.3: requests between 4 KiB and 1 MiB take slices of their class (the
/// warp-coalesced path), not a 64 KiB block each: 2^18 x 8 KiB fill a 2 GiB heap exactly (8 KiB
/// blocks leave nothing at a segment's end) with no null, where 2^18 x 64 KiB blocks used to
/// overflow an 8 GiB heap; and 65536 requests of 4097, 6000, 10000, 40000 and 70000 B each get
/// a slice within 12.5% of the size asked (sixteen classes from 4 to 8 KiB, eight per doubling
/// above), with no null. Prints the time of each kernel (with
/// its copy back) and the address range handed out over the bytes asked.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_mid_sizes_take_slices_of_their_class() {
    use veballoc::kernels::block::{class_of, slice_bytes};
    let gpu = gpu();
    let cases = [(8192u64, 1u64 << 18, 2u64 << 30), (4097, 65536, 8 << 30), (6000, 65536, 8 << 30)];
    let more = [10_000u64, 40_000, 70_000].map(|s| (s, 65536, 8 << 30));
    for (size, n, heap_bytes) in cases.into_iter().chain(more) {
        let heap = Heap::new(&gpu, heap_bytes).unwrap();
        let usable = slice_bytes(class_of(size));
        assert!(usable * 8 <= size * 9, "at least eight classes per doubling above 4 KiB");
        let t0 = std::time::Instant::now();
        let ptrs = malloc_n(&gpu, &heap, n, size);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let nulls = ptrs.iter().filter(|&&p| p == 0).count();
        assert_eq!(nulls, 0, "{n} x {size} B in {} MiB: {nulls} nulls", heap_bytes >> 20);
        let mut sorted = ptrs.clone();
        sorted.sort();
        for w in sorted.windows(2) {
            assert!(w[0] + usable <= w[1], "{size} B: slices overlap");
        }
        let s = heap.stats().unwrap();
        assert_eq!(s.bytes_in_use, n * usable, "{size} B: {s:?}");
        let range = sorted[sorted.len() - 1] + usable - sorted[0];
        println!(
            "{n} x {size} B: {ms:.2} ms (with the copy back), slices of {usable} B, range / asked {:.3}x",
            range as f64 / (n * size) as f64
        );
        free_all_and_check_whole(&gpu, heap, &ptrs);
    }
}

/// Issue 9.1 / 10.2: a burst of requests for runs of whole blocks (above 256 KiB: runs of
/// 64 KiB blocks; above 1 MiB: runs of 256 KiB blocks) that fit in the heap all succeed. They
/// used to search the group's tree each and format segments one at a time under one lock; a
/// requester that waited more than `FORMAT_WAIT_NS` for its turn gave up, and its null did not
/// mean full (H100: 3136 nulls in the first round of `churn` with 31% of the heap live, all
/// runs of whole blocks after such timeouts). Prints each burst's time with the copy back.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_a_burst_of_runs_that_fit_gets_no_null() {
    let gpu = gpu();
    // 2^14 x 300000 B: 5 blocks of 64 KiB each, 5 GiB of an 8 GiB heap; 2^11 x 1.5 MiB: 6
    // blocks of 256 KiB each, 3 GiB.
    for (size, n) in [(300_000u64, 1u64 << 14), (3 << 19, 1 << 11)] {
        let heap = Heap::new(&gpu, HEAP).unwrap();
        let usable = if size <= 1 << 20 {
            size.div_ceil(64 << 10) * (64 << 10)
        } else {
            size.div_ceil(256 << 10) * (256 << 10)
        };
        let t0 = std::time::Instant::now();
        let ptrs = malloc_n(&gpu, &heap, n, size);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let nulls = ptrs.iter().filter(|&&p| p == 0).count();
        let s = heap.stats().unwrap();
        assert_eq!(
            nulls,
            0,
            "{n} x {size} B ({} MiB asked of {} MiB): {nulls} nulls; {s:?}",
            (n * size) >> 20,
            HEAP >> 20
        );
        let mut sorted = ptrs.clone();
        sorted.sort();
        for w in sorted.windows(2) {
            assert!(w[0] + usable <= w[1], "{size} B: runs overlap");
        }
        assert_eq!(s.bytes_in_use, n * usable, "{size} B: {s:?}");
        println!("{n} x {size} B: {ms:.2} ms (with the copy back), no null");
        free_all_and_check_whole(&gpu, heap, &ptrs);
    }
}

/// `malloc_block` hands a thread whose class is below thread 0's a slice of thread 0's
/// class only where that slice has the alignment the thread's size is promised: a 72-byte
/// class's slices are 8-aligned, and 64-byte requests got them (review of r39).
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_malloc_block_keeps_the_alignment_of_smaller_requests() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP).unwrap();
    let n = 1u64 << 12;
    // Thread 0 of each block asks for 72 bytes (an 8-aligned class), the others for 64.
    let sizes: Vec<u32> = (0..n).map(|i| if i % BLOCK as u64 == 0 { 72 } else { 64 }).collect();
    mixed_sizes_round(&gpu, &heap, "vb_malloc_cta_sizes", &sizes);
    heap.destroy().unwrap();
}

/// Converged lanes of one warp that call `malloc` (or `malloc_packed`) on two different heaps
/// each get memory of their own heap, and their `free`s give it back there: both heaps end
/// whole. Lanes used to be grouped by class alone (`malloc_packed`: not at all, and `free` by
/// the block's index in its heap), so one leader's take from its heap served the other
/// heap's lanes too, and their frees went to the wrong heap (review of session 21).
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_lanes_of_one_warp_on_two_heaps_each_get_their_own_heap_s_memory() {
    let gpu = gpu();
    let n = 1u64 << 16;
    // (kernel's `how`: 0 malloc, 1 malloc_packed; size)
    for (how, size) in [(0u32, 64u64), (0, 4096), (1, 24)] {
        // Bit 0: even and odd lanes on different heaps; bit 4: the two half-warps.
        for lane_bit in [0u32, 4] {
            let what = format!("how {how}, {size} B, lane bit {lane_bit}");
            let (a, b) = (Heap::new(&gpu, 1 << 30).unwrap(), Heap::new(&gpu, 1 << 30).unwrap());
            let ptrs = veballoc::zeroed_u64s(n as usize).unwrap();
            let p = ptrs.as_device_ptr().as_raw();
            // SAFETY: argument list matches vb_malloc_two_heaps in kernels/src/entry_bench.rs.
            unsafe {
                gpu.launch(
                    "vb_malloc_two_heaps",
                    n,
                    BLOCK,
                    veballoc::kernel_args![a.arg(), b.arg(), p, n, size, lane_bit, how],
                )
                .unwrap()
            };
            gpu.sync().unwrap();
            let hp = host(&ptrs);
            for (i, &q) in hp.iter().enumerate() {
                let (name, h) = if (i as u32 % 32) >> lane_bit & 1 == 1 { ("b", &b) } else { ("a", &a) };
                let base = h.base();
                assert!(
                    q >= base && q + size <= base + h.capacity(),
                    "{what}: thread {i} asked heap {name} and got {q:#x}, outside it"
                );
            }
            let mut sorted = hp.clone();
            sorted.sort_unstable();
            assert!(sorted.windows(2).all(|w| w[0] + size <= w[1]), "{what}: two threads share memory");
            // SAFETY: argument list matches vb_free_two_heaps; the same launch shape and lanes.
            unsafe {
                gpu.launch(
                    "vb_free_two_heaps",
                    n,
                    BLOCK,
                    veballoc::kernel_args![a.arg(), b.arg(), p, n, lane_bit],
                )
                .unwrap()
            };
            gpu.sync().unwrap();
            for (name, h) in [("a", &a), ("b", &b)] {
                h.trim().unwrap();
                let s = h.stats().unwrap();
                assert_eq!(
                    (s.bytes_in_use, s.invalid_frees, s.double_frees),
                    (0, 0, 0),
                    "{what}, heap {name}: {s:?}"
                );
                assert_eq!(s.free_segments, h.layout().num_segments as u64, "{what}, heap {name}: {s:?}");
            }
        }
    }
}
