//! GPU tests: each needs a CUDA GPU, so each is `#[ignore]`d (a plain `cargo test` reports
//! them as ignored, never as passed) and fails, when run, where there is no GPU. On a GPU
//! machine run them one at a time: `cargo test --release --test gpu -- --ignored
//! --test-threads=1` (the device scripts run the prebuilt binaries from `.devbin/` so).
//! `VEBALLOC_TEST_SCALE=k` divides the thread counts of the big tests by k (for runs under
//! compute-sanitizer, which is 10-100x slower). `VEBALLOC_CHECKS_PTX_FILE` names a PTX built
//! with the safety checks, for the double-free test when the loaded PTX has none.

use cust::memory::{CopyDestination, DeviceBuffer};
use veballoc::kernels::block::{slice_bytes, slice_class};
use veballoc::kernels::class::{warp_class, RUN_BLOCK_BYTES, RUN_GROUP};
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::{packed_band, MIXED_PACKED_MAX_BYTES};
use veballoc::kernels::slice::PACKED_CLASSES;
use veballoc::{Gpu, Heap, SEGMENT_BYTES};

const BLOCK: u32 = 256;
const MILLION: u64 = 1 << 20;
const HEAP_8G: u64 = 8 << 30;

/// `n` divided by `VEBALLOC_TEST_SCALE` (default 1), at least 4096.
fn scale(n: u64) -> u64 {
    let k = std::env::var("VEBALLOC_TEST_SCALE").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(1);
    (n / k.max(1)).max(4096)
}

/// The GPU with veballoc's module loaded; panics (the test fails) where there is none.
fn gpu() -> Gpu {
    match Gpu::new() {
        Ok(g) => {
            eprintln!("GPU: {} (driver {}), PTX with checks: {}", g.name(), g.driver_version(), g.checks());
            g
        }
        Err(e) => panic!("this test needs a CUDA GPU: {e}"),
    }
}

fn host<T: cust::memory::DeviceCopy + Default + Clone>(b: &DeviceBuffer<T>) -> Vec<T> {
    let mut v = vec![T::default(); b.len()];
    b.copy_to(&mut v[..]).unwrap();
    v
}

/// The per-thread sizes of the mixed test, in [16, 4096].
fn mixed_sizes(n: u64, seed: u64) -> Vec<u32> {
    (0..n).map(|i| 16 + (veballoc::kernels::mix(seed ^ i) % (4096 - 16 + 1)) as u32).collect()
}

/// `usable_size` of each of the `n` pointers in the device array at `ptrs` (`vb_usable`).
fn usable_sizes(gpu: &Gpu, heap: &Heap, ptrs: u64, n: u64) -> Vec<u64> {
    let out = veballoc::zeroed_u64s(n as usize).unwrap();
    // SAFETY: matches vb_usable's signature in kernels/src/entry_bench.rs; `ptrs` holds n
    // pointers (the caller's buffer, alive through the launch and the sync).
    unsafe {
        let args = veballoc::kernel_args![heap.arg(), ptrs, n, out.as_device_ptr().as_raw()];
        gpu.launch("vb_usable", n, BLOCK, args).unwrap();
    }
    gpu.sync().unwrap();
    host(&out)
}

/// malloc on n threads, write, verify, check the pointers against each other and the stats,
/// free, trim, and check that the heap is empty again.
fn alloc_write_verify_free(gpu: &Gpu, heap: &Heap, n: u64, size: u64, sizes: Option<&[u32]>) {
    let ptrs = veballoc::zeroed_u64s(n as usize).unwrap();
    let errs = veballoc::zeroed_u64s(3).unwrap();
    let sizes_buf = sizes.map(|s| DeviceBuffer::from_slice(s).unwrap());
    let sizes_ptr: u64 = sizes_buf.as_ref().map_or(0, |b| b.as_device_ptr().as_raw());
    let (arg, p, e) = (heap.arg(), ptrs.as_device_ptr().as_raw(), errs.as_device_ptr().as_raw());
    let tag = 7u64;
    // SAFETY: argument lists match the kernels' signatures in kernels/src/entry.rs.
    unsafe {
        gpu.launch("vb_malloc", n, BLOCK, veballoc::kernel_args![arg, p, n, size, sizes_ptr]).unwrap();
        gpu.launch("vb_write", n, BLOCK, veballoc::kernel_args![p, n, size, sizes_ptr, tag]).unwrap();
        gpu.launch("vb_verify", n, BLOCK, veballoc::kernel_args![p, n, size, sizes_ptr, tag, e]).unwrap();
    }
    gpu.sync().unwrap();
    let [bad, nulls, misaligned] = host(&errs)[..] else { unreachable!() };
    assert_eq!((bad, nulls, misaligned), (0, 0, 0), "size {size}: bad words, nulls, misaligned");
    // No two live allocations overlap, and the metadata accounts for exactly them.
    let hp = host(&ptrs);
    // A lane's slice: its class's, or in a warp of mixed sizes, for the odd classes of the
    // eight-per-doubling band, the next class's (`class::warp_class`); a mixed warp's requests
    // up to `MIXED_PACKED_MAX_BYTES` are packed objects instead, rounded to their unit
    // (`CpuHeap::packed_lanes` tells which; warps are 32 consecutive threads). A launch of one
    // size has uniform warps: exactly its class.
    let size_of = |i: usize| sizes.map_or(size, |s| s[i] as u64);
    let packed: Vec<bool> = (0..n as usize)
        .step_by(32)
        .flat_map(|w| CpuHeap::packed_lanes(&(w..(w + 32).min(n as usize)).map(size_of).collect::<Vec<_>>()))
        .collect();
    let usable = |i: usize, mixed: bool| -> u64 {
        let s = size_of(i);
        if packed[i] {
            let unit = slice_bytes(PACKED_CLASSES[packed_band(s)]);
            s.div_ceil(unit) * unit
        } else {
            slice_bytes(warp_class(slice_class(s), !mixed))
        }
    };
    let mut order: Vec<usize> = (0..n as usize).collect();
    order.sort_by_key(|&i| hp[i]);
    for w in order.windows(2) {
        assert!(hp[w[0]] + usable(w[0], false) <= hp[w[1]], "size {size}: allocations overlap");
    }
    // Each allocation's usable size is what it was given (for packed objects, the bounds
    // their warp recorded).
    let got = usable_sizes(gpu, heap, p, n);
    for i in 0..n as usize {
        let want = usable(i, false);
        // A mixed warp's lane of an odd class of the fine band takes the next class.
        let ok = got[i] == want || (!packed[i] && sizes.is_some() && got[i] == usable(i, true));
        assert!(ok, "size {size}: thread {i} ({} B) usable {} against {want}", size_of(i), got[i]);
    }
    // Packed objects are counted as objects, the rest in bytes.
    let live: u64 = (0..n as usize).filter(|&i| !packed[i]).map(|i| usable(i, false)).sum();
    let live_most: u64 = (0..n as usize).filter(|&i| !packed[i]).map(|i| usable(i, sizes.is_some())).sum();
    let stats = heap.stats().unwrap();
    assert!(
        (live..=live_most).contains(&stats.bytes_in_use),
        "size {size}: stats vs live bytes {live}..={live_most}"
    );
    assert_eq!(
        stats.live_packed,
        packed.iter().filter(|&&p| p).count() as u64,
        "size {size}: packed objects"
    );
    let usable = |i: usize| usable(i, false);
    let live: u64 = (0..n as usize).map(usable).sum();
    let range = hp[*order.last().unwrap()] + usable(*order.last().unwrap()) - hp[order[0]];
    println!(
        "size {:>5}: {} allocations ok, {} MiB live, address range {:.3}x live, {} segments used",
        if sizes.is_some() { "mixed".to_string() } else { size.to_string() },
        n,
        live >> 20,
        range as f64 / live as f64,
        stats.segments_in_use()
    );
    // SAFETY: as above.
    unsafe { gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n]).unwrap() };
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!(s.bytes_in_use, 0, "{s:?}");
    assert_eq!(s.free_segments, heap.layout().num_segments as u64, "{s:?}");
    assert_eq!(s.invalid_frees, 0);
}

#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_every_size_and_mixed_1m_threads() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_8G).unwrap();
    let n = scale(MILLION);
    for size in (4..=12).map(|l| 1u64 << l) {
        alloc_write_verify_free(&gpu, &heap, n, size, None);
    }
    for seed in 0..3 {
        alloc_write_verify_free(&gpu, &heap, n, 0, Some(&mixed_sizes(n, seed)));
    }
    heap.destroy().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_churn_100_rounds_mixed_sizes() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_8G).unwrap();
    // Slices of every class, and about one request in 20 for a whole block of up to 64 KiB.
    let errs = churn_rounds(&gpu, &heap, 1 << 18, 42, 65536, 100, 25);
    assert_eq!(errs, [0, 0, 0], "corrupted words, failed allocations, usable sizes");
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!(s.bytes_in_use, 0, "{s:?}");
    assert_eq!(s.free_segments, heap.layout().num_segments as u64, "{s:?}");
    heap.destroy().unwrap();
}

/// `rounds` + 1 launches of `vb_churn` over `n` threads (the last frees only), printing the
/// heap's use every `report` rounds; returns [corrupted words, nulls, usable-size errors].
fn churn_rounds(
    gpu: &Gpu,
    heap: &Heap,
    n: u64,
    seed: u64,
    max_size: u64,
    rounds: u64,
    report: u64,
) -> [u64; 3] {
    let ptrs = veballoc::zeroed_u64s(n as usize).unwrap();
    let sizes = DeviceBuffer::<u32>::zeroed(n as usize).unwrap();
    let errs = veballoc::zeroed_u64s(3).unwrap();
    let (arg, p, sz, e) = (
        heap.arg(),
        ptrs.as_device_ptr().as_raw(),
        sizes.as_device_ptr().as_raw(),
        errs.as_device_ptr().as_raw(),
    );
    for round in 0..=rounds {
        let last = (round == rounds) as u32;
        // SAFETY: matches vb_churn's signature.
        unsafe {
            gpu.launch(
                "vb_churn",
                n,
                BLOCK,
                veballoc::kernel_args![arg, p, sz, n, seed, round, max_size, last, e],
            )
            .unwrap()
        };
        if round % report == 0 {
            let s = heap.stats().unwrap();
            println!(
                "churn round {round}: {} MiB in use, {} segments in use, {} nulls so far",
                s.bytes_in_use >> 20,
                s.segments_in_use(),
                host(&errs)[1]
            );
            print_trace(heap);
        }
    }
    gpu.sync().unwrap();
    host(&errs).try_into().expect("three counters")
}

/// The heap's install-path profile, where the PTX has one (`scripts/ptx-variant.sh trace`,
/// through `VEBALLOC_PTX_FILE`): which path a null came from, and the timeouts behind it.
fn print_trace(heap: &Heap) {
    let events: Vec<String> =
        heap.trace().unwrap().into_iter().filter(|&(_, v)| v != 0).map(|(k, v)| format!("{k}={v}")).collect();
    if !events.is_empty() {
        println!("  trace: {}", events.join(" "));
    }
}

/// Fill a small heap past full: nulls come back (no hang), exactly the heap's capacity is
/// handed out, and after freeing everything the same again.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_out_of_memory_then_recover() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, 512 << 20).unwrap();
    for (size, threads) in [(4096u64, 200_000u64), (1 << 20, 1000), (64 << 20, 40), (16, 36 << 20)] {
        for attempt in 0..2 {
            let ptrs = veballoc::zeroed_u64s(threads as usize).unwrap();
            let (arg, p, zero) = (heap.arg(), ptrs.as_device_ptr().as_raw(), 0u64);
            let t0 = std::time::Instant::now();
            // SAFETY: matches vb_malloc's signature.
            unsafe {
                gpu.launch("vb_malloc", threads, BLOCK, veballoc::kernel_args![arg, p, threads, size, zero])
                    .unwrap()
            };
            gpu.sync().unwrap();
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            let got = host(&ptrs).iter().filter(|&&x| x != 0).count() as u64;
            let usable = if size <= 4096 { slice_bytes(slice_class(size)) } else { size };
            println!("oom: size {size}, attempt {attempt}: {got} of {threads} served ({:.1}% of the heap) in {ms:.1} ms", 100.0 * (got * usable) as f64 / heap.capacity() as f64);
            let cap = heap.capacity() / usable;
            if size == 16 {
                // Partly used current blocks on each multiprocessor may hold some back.
                assert!(got >= cap * 9 / 10 && got <= cap, "{got} of {cap}");
            } else {
                assert_eq!(got, cap.min(threads), "size {size}: the whole heap is handed out");
            }
            assert!(heap.stats().unwrap().out_of_memory > 0 || got == threads);
            // SAFETY: matches vb_free's signature.
            unsafe {
                gpu.launch("vb_free", threads, BLOCK, veballoc::kernel_args![arg, p, threads]).unwrap()
            };
            heap.trim().unwrap();
            let s = heap.stats().unwrap();
            assert_eq!((s.bytes_in_use, s.free_segments), (0, heap.layout().num_segments as u64), "{s:?}");
        }
    }
    heap.destroy().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_calloc_realloc() {
    let gpu = gpu();
    // Up to 2/3 of the threads realloc past 4 KiB into a whole 64 KiB block: 1 GiB at most.
    let heap = Heap::new(&gpu, 4 << 30).unwrap();
    let n = 1u64 << 14;
    let errs = veballoc::zeroed_u64s(2).unwrap();
    let (arg, e) = (heap.arg(), errs.as_device_ptr().as_raw());
    // SAFETY: matches vb_calloc_realloc's signature.
    unsafe { gpu.launch("vb_calloc_realloc", n, BLOCK, veballoc::kernel_args![arg, n, e]).unwrap() };
    gpu.sync().unwrap();
    assert_eq!(host(&errs), vec![0, 0], "wrong contents, nulls");
    heap.trim().unwrap();
    assert_eq!(heap.stats().unwrap().bytes_in_use, 0);
}

#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_large_runs_nearly_whole_heap() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, 1 << 30).unwrap();
    let ptrs = veballoc::zeroed_u64s(1).unwrap();
    let (arg, p, one, zero) = (heap.arg(), ptrs.as_device_ptr().as_raw(), 1u64, 0u64);
    let size = heap.capacity() - SEGMENT_BYTES;
    // SAFETY: matches vb_malloc / vb_write / vb_free signatures.
    unsafe { gpu.launch("vb_malloc", 1, 1, veballoc::kernel_args![arg, p, one, size, zero]).unwrap() };
    gpu.sync().unwrap();
    assert_ne!(host(&ptrs)[0], 0, "a run of all segments but one");
    let s = heap.stats().unwrap();
    let blocks = SEGMENT_BYTES / RUN_BLOCK_BYTES;
    assert_eq!(s.whole_blocks[RUN_GROUP], (heap.capacity() / SEGMENT_BYTES - 1) * blocks, "{s:?}");
    // SAFETY: as above.
    unsafe { gpu.launch("vb_free", 1, 1, veballoc::kernel_args![arg, p, one]).unwrap() };
    // The segments the run covered go straight back to the segment tree.
    assert_eq!(heap.stats().unwrap().free_segments, heap.capacity() / SEGMENT_BYTES);
}

#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn heap_errors_are_clear() {
    let gpu = gpu();
    let too_big = gpu.total_memory() * 2;
    let e = Heap::new(&gpu, too_big).err().expect("a heap twice the card must fail");
    assert!(matches!(e, veballoc::Error::HeapTooLarge { .. }), "{e}");
    assert!(matches!(Heap::new(&gpu, 1 << 20).err(), Some(veballoc::Error::HeapTooSmall { .. })));
}

/// Launches `kernel(heap, ptrs, n, size[, sizes])`, then write + verify; returns the pointers.
fn alloc_with(gpu: &Gpu, heap: &Heap, kernel: &str, n: u64, size: u64, sizes: Option<&[u32]>) -> Vec<u64> {
    let (ptrs, nulls) = alloc_with_nulls(gpu, heap, kernel, n, size, sizes);
    assert_eq!(nulls, 0, "{kernel}: nulls");
    ptrs
}

/// As `alloc_with`, allowing nulls (out of memory); returns the pointers and the null count.
fn alloc_with_nulls(
    gpu: &Gpu,
    heap: &Heap,
    kernel: &str,
    n: u64,
    size: u64,
    sizes: Option<&[u32]>,
) -> (Vec<u64>, u64) {
    let ptrs = veballoc::zeroed_u64s(n as usize).unwrap();
    let errs = veballoc::zeroed_u64s(3).unwrap();
    let sizes_buf = sizes.map(|s| DeviceBuffer::from_slice(s).unwrap());
    let sz: u64 = sizes_buf.as_ref().map_or(0, |b| b.as_device_ptr().as_raw());
    let (arg, p, e, tag) = (heap.arg(), ptrs.as_device_ptr().as_raw(), errs.as_device_ptr().as_raw(), 3u64);
    // SAFETY: argument lists match the kernels' signatures in kernels/src/entry.rs.
    unsafe {
        if kernel == "vb_malloc" || kernel == "vb_malloc_packed" {
            gpu.launch(kernel, n, BLOCK, veballoc::kernel_args![arg, p, n, size, sz]).unwrap();
        } else {
            gpu.launch(kernel, n, BLOCK, veballoc::kernel_args![arg, p, n, size]).unwrap();
        }
        gpu.launch("vb_write", n, BLOCK, veballoc::kernel_args![p, n, size, sz, tag]).unwrap();
        gpu.launch("vb_verify", n, BLOCK, veballoc::kernel_args![p, n, size, sz, tag, e]).unwrap();
    }
    gpu.sync().unwrap();
    let [bad, nulls, misaligned] = host(&errs)[..] else { unreachable!() };
    assert_eq!((bad, misaligned), (0, 0), "{kernel}: bad words, misaligned");
    (host(&ptrs), nulls)
}

fn free_all(gpu: &Gpu, heap: &Heap, ptrs: &[u64]) {
    let buf = DeviceBuffer::from_slice(ptrs).unwrap();
    let (arg, p, n) = (heap.arg(), buf.as_device_ptr().as_raw(), ptrs.len() as u64);
    // SAFETY: matches vb_free's signature.
    unsafe { gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n]).unwrap() };
    gpu.sync().unwrap();
}

fn assert_heap_empty(heap: &Heap) {
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.bytes_in_use, s.live_packed, s.blocks_in_use()), (0, 0, 0), "{s:?}");
    assert_eq!(s.free_segments, heap.layout().num_segments as u64, "{s:?}");
    assert_eq!((s.invalid_frees, s.double_frees), (0, 0), "{s:?}");
}

/// Mixed sizes packed per warp: every lane's object follows the one of its warp's next lower
/// lane of the same unit (except where a heap block ran out), objects never overlap, frees
/// need no size.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_packed_mixed_sizes_are_warp_contiguous() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_8G).unwrap();
    let n = scale(MILLION);
    for max in [64u64, 1024, 4096] {
        let sizes: Vec<u32> = (0..n).map(|i| 1 + (veballoc::kernels::mix(max ^ i) % max) as u32).collect();
        let ptrs = alloc_with(&gpu, &heap, "vb_malloc_packed", n, 0, Some(&sizes));
        let rounded = |i: usize| (sizes[i] as u64).div_ceil(16) * 16;
        // Each request packs in its own size's unit (16, 64 or 256 bytes); a lane's next
        // neighbour is the warp's next lane of the same unit.
        let unit = |i: usize| {
            let band = veballoc::kernels::heap::packed_band(sizes[i] as u64);
            slice_bytes(veballoc::kernels::slice::PACKED_CLASSES[band])
        };
        let (mut adjacent, mut pairs) = (0u64, 0u64);
        for i in 0..n as usize {
            let u = unit(i);
            if let Some(j) = (i + 1..(i / 32 + 1) * 32).find(|&j| unit(j) == u) {
                pairs += 1;
                adjacent += (ptrs[j] == ptrs[i] + (sizes[i] as u64).div_ceil(u) * u) as u64;
            }
        }
        let mut order: Vec<usize> = (0..n as usize).collect();
        order.sort_by_key(|&i| ptrs[i]);
        for w in order.windows(2) {
            assert!(ptrs[w[0]] + rounded(w[0]) <= ptrs[w[1]], "packed objects overlap");
        }
        // Every object's size, rounded to its unit, is recorded (its warp's bound writes).
        let pbuf = DeviceBuffer::from_slice(&ptrs).unwrap();
        let got = usable_sizes(&gpu, &heap, pbuf.as_device_ptr().as_raw(), n);
        for i in 0..n as usize {
            let u = unit(i);
            assert_eq!(
                got[i],
                (sizes[i] as u64).div_ceil(u) * u,
                "packed 1..{max} B: thread {i} ({} B)",
                sizes[i]
            );
        }
        let s = heap.stats().unwrap();
        assert_eq!(s.live_packed, n, "{s:?}");
        let live: u64 = (0..n as usize).map(rounded).sum();
        println!(
            "packed 1..{max} B: {:.2}% of in-warp neighbours adjacent, {} packed blocks for {} MiB",
            100.0 * adjacent as f64 / pairs as f64,
            s.packed_blocks,
            live >> 20
        );
        assert!(adjacent * 10 >= pairs * 9, "at least 90% of neighbours adjacent");
        free_all(&gpu, &heap, &ptrs);
        assert_heap_empty(&heap);
    }
    heap.destroy().unwrap();
}

/// malloc_warp and malloc_block (thread-block collective) hand out consecutive slices.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_collective_warp_and_block_allocation() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_8G).unwrap();
    let n = scale(MILLION);
    for kernel in ["vb_malloc_warp", "vb_malloc_cta"] {
        for size in [16u64, 256, 4096] {
            let ptrs = alloc_with(&gpu, &heap, kernel, n, size, None);
            let group = if kernel == "vb_malloc_warp" { 32 } else { BLOCK as usize };
            let consecutive = (0..n as usize - 1)
                .filter(|&i| (i + 1) % group != 0 && ptrs[i + 1] == ptrs[i] + size)
                .count();
            let mut sorted = ptrs.clone();
            sorted.sort();
            assert!(sorted.windows(2).all(|w| w[0] + size <= w[1]), "{kernel} {size}: overlap");
            let s = heap.stats().unwrap();
            assert_eq!(s.bytes_in_use, n * size, "{kernel} {size}: {s:?}");
            println!(
                "{kernel} {size} B: {:.2}% of in-group neighbours consecutive",
                100.0 * consecutive as f64 / (n as f64 * (group - 1) as f64 / group as f64)
            );
            free_all(&gpu, &heap, &ptrs);
            assert_heap_empty(&heap);
        }
    }
    heap.destroy().unwrap();
}

/// Names a PTX file built with the safety checks (scripts/device-bundle.sh builds
/// `.devbin/veballoc-checks.ptx`), for the tests that need them when the loaded PTX has none.
const CHECKS_PTX_ENV: &str = "VEBALLOC_CHECKS_PTX_FILE";

/// A GPU whose module has the safety checks: the default one if its PTX has them (built with
/// `--features checks`, or `VEBALLOC_PTX_FILE` naming such a build), else the PTX named by
/// `VEBALLOC_CHECKS_PTX_FILE`. Panics (the test fails) when neither has them, so that the
/// detection is exercised wherever the test passes.
fn gpu_with_checks() -> Gpu {
    let g = gpu();
    if g.checks() {
        return g;
    }
    drop(g);
    let path = std::env::var_os(CHECKS_PTX_ENV).unwrap_or_else(|| {
        panic!(
            "this test needs a PTX with the safety checks: the loaded one has none; set \
             {CHECKS_PTX_ENV} (or {}) to such a build, e.g. .devbin/veballoc-checks.ptx from \
             scripts/device-bundle.sh, or build the tests with --features checks",
            veballoc::PTX_FILE_ENV
        )
    });
    // Gpu::new reads the PTX file's name from the environment: point it at the checks build
    // for this one call, then restore it. The GPU tests run one at a time (--test-threads=1),
    // so no other test reads the variable meanwhile.
    let before = std::env::var_os(veballoc::PTX_FILE_ENV);
    std::env::set_var(veballoc::PTX_FILE_ENV, &path);
    let g = Gpu::new();
    match before {
        Some(v) => std::env::set_var(veballoc::PTX_FILE_ENV, v),
        None => std::env::remove_var(veballoc::PTX_FILE_ENV),
    }
    let g = g.unwrap_or_else(|e| panic!("loading {}: {e}", path.to_string_lossy()));
    assert!(g.checks(), "{} ({CHECKS_PTX_ENV}) has no safety checks", path.to_string_lossy());
    g
}

/// With the safety checks, freeing every pointer twice is counted and harms nothing. Runs on
/// a PTX with the checks (see `gpu_with_checks`), and fails where there is none.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_double_frees_are_detected() {
    let gpu = gpu_with_checks();
    let heap = Heap::new(&gpu, HEAP_8G).unwrap();
    let n = scale(MILLION);
    let sizes = mixed_sizes(n, 9);
    let keep = alloc_with(&gpu, &heap, "vb_malloc_packed", n, 0, Some(&sizes));
    let ptrs = alloc_with(&gpu, &heap, "vb_malloc_packed", n, 0, Some(&sizes));
    free_all(&gpu, &heap, &ptrs);
    free_all(&gpu, &heap, &ptrs);
    let s = heap.stats().unwrap();
    println!("double frees: {} counted as double, {} as invalid", s.double_frees, s.invalid_frees);
    assert_eq!(s.double_frees + s.invalid_frees, n, "{s:?}");
    assert_eq!(s.live_packed + s.live_slices.iter().sum::<u64>() + s.whole_blocks.iter().sum::<u64>(), n);
    // The same pointer twice in one warp: one lane frees it, the other is counted.
    let twice = alloc_with(&gpu, &heap, "vb_malloc", n / 2, 48, None);
    let doubled: Vec<u64> = twice.iter().flat_map(|&p| [p, p]).collect();
    let before = heap.stats().unwrap().double_frees;
    free_all(&gpu, &heap, &doubled);
    let s = heap.stats().unwrap();
    println!("same pointer twice in a warp: {} counted", s.double_frees - before);
    assert_eq!(s.double_frees - before, n / 2, "{s:?}");
    free_all(&gpu, &heap, &keep);
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.bytes_in_use, s.live_packed, s.free_segments), (0, 0, heap.layout().num_segments as u64));
    heap.destroy().unwrap();
}

/// A heap kept 90% full by long-lived allocations, with 1000 rounds of mixed-size churn in
/// the rest: nothing is corrupted, and once everything is freed every byte is back.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_churn_at_90_percent_full_1000_rounds() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, 4 << 30).unwrap();
    let segs = heap.layout().num_segments as u64;
    // Fill with long-lived mixed sizes until 90% of the heap's bytes are live or the heap
    // refuses (per-class segments and per-multiprocessor current blocks hold some back).
    let mut filler = Vec::new();
    let batch = scale(1 << 16);
    for b in 0.. {
        let sizes = mixed_sizes(batch, 1000 + b);
        let (ptrs, nulls) = alloc_with_nulls(&gpu, &heap, "vb_malloc", batch, 0, Some(&sizes));
        filler.extend(ptrs.into_iter().filter(|&p| p != 0));
        if nulls > 0 || heap.stats().unwrap().bytes_in_use * 10 >= heap.capacity() * 9 {
            break;
        }
    }
    let full = heap.stats().unwrap();
    println!(
        "filled: {} MiB live ({:.1}% of the heap) in {} of {segs} segments",
        full.bytes_in_use >> 20,
        100.0 * full.bytes_in_use as f64 / heap.capacity() as f64,
        full.segments_in_use()
    );
    // Mixed sizes leave bytes free inside other classes' segments and in each multiprocessor's
    // current blocks: the heap refuses more at about 70% of its bytes, with every segment in use.
    assert!(full.segments_in_use() * 10 >= segs * 9, "the filler holds at least 90% of the segments");
    let (n, rounds) = (scale(1 << 15), 1000u64);
    let [bad, nulls, usable] = churn_rounds(&gpu, &heap, n, 7, 65536, rounds, 200);
    println!("pressure: {nulls} requests got null (out of memory) over {rounds} rounds of {n} threads");
    assert_eq!((bad, usable), (0, 0), "corrupted words, usable sizes");
    let after = heap.stats().unwrap();
    assert_eq!(after.bytes_in_use, full.bytes_in_use, "the churn gave back all it took");
    free_all(&gpu, &heap, &filler);
    assert_heap_empty(&heap);
    heap.destroy().unwrap();
}

/// Host-side allocation from the heap: sizes from 1 B to 1 GiB, typed views, device `free`
/// of a host pointer refused, stream-ordered reuse, and everything back after trim.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_host_pool_alloc_free_async_and_views() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_8G).unwrap();
    let mut ptrs = Vec::new();
    for shift in (0..=30).step_by(3) {
        let bytes = 1u64 << shift;
        let p = heap.alloc(bytes).unwrap();
        assert_eq!(p % veballoc::HOST_ALIGN, 0);
        assert!(heap.alloc_size(p).unwrap() >= bytes);
        ptrs.push(p);
    }
    let mut sorted: Vec<(u64, u64)> = ptrs.iter().map(|&p| (p, heap.alloc_size(p).unwrap())).collect();
    sorted.sort();
    assert!(sorted.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "host allocations overlap");
    // Typed views round-trip, and refuse addresses outside the heap.
    let words: Vec<u64> = (0..1000).map(|i| i * 3).collect();
    let big = ptrs[5]; // 32 KiB
    for (i, w) in words.iter().enumerate() {
        heap.write(big + 8 * i as u64, w).unwrap();
    }
    assert_eq!(heap.read_slice::<u64>(big, 1000).unwrap(), words);
    assert!(matches!(heap.read::<u64>(heap.base() - 8), Err(veballoc::Error::NotInHeap { .. })));
    // A kernel's free of a host pointer is counted as invalid and changes nothing.
    let one = DeviceBuffer::from_slice(&[big]).unwrap();
    let (arg, p1, n1) = (heap.arg(), one.as_device_ptr().as_raw(), 1u64);
    // SAFETY: matches vb_free's signature.
    unsafe { gpu.launch("vb_free", 1, 1, veballoc::kernel_args![arg, p1, n1]).unwrap() };
    let s = heap.stats().unwrap();
    assert_eq!(s.invalid_frees, 1);
    assert!(s.host_segments > 0);
    assert_eq!(heap.read_slice::<u64>(big, 1000).unwrap(), words);
    // Stream-ordered allocation round trip (the reuse itself: the test after this one).
    let stream = cust::stream::Stream::new(cust::stream::StreamFlags::NON_BLOCKING, None).unwrap();
    let a = heap.alloc_async(4096, &stream).unwrap();
    heap.free_async(a, &stream).unwrap();
    let b = heap.alloc_async(4096, &stream).unwrap();
    heap.free_async(b, &stream).unwrap();
    stream.synchronize().unwrap();
    assert!(matches!(heap.free(b), Err(veballoc::Error::UnknownPointer(_))));
    for p in ptrs {
        heap.free(p).unwrap();
    }
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.host_segments, s.free_segments), (0, heap.layout().num_segments as u64), "{s:?}");
    assert_eq!(heap.pool_stats(), veballoc::PoolStats::default());
    heap.destroy().unwrap();
}

/// Segments of the heap that the stream-order test fills.
const STREAM_TEST_SEGMENTS: u64 = 4;
/// How long the stream-order test holds its stream at most (a host function that waits).
const STREAM_HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Stream order: a range freed with `free_async` on a stream whose earlier work has not run
/// yet is reused at once by that stream's next `alloc_async`, and by no one else before the
/// free has run. The heap is full first, so that nothing else could serve the request.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_host_pool_reuses_a_stream_ordered_free_on_that_stream() {
    use cust::stream::{Stream, StreamFlags};
    use veballoc::Error::OutOfMemory;
    let gpu = gpu();
    let heap = Heap::new(&gpu, STREAM_TEST_SEGMENTS * SEGMENT_BYTES).unwrap();
    // Fill the heap with the largest requests the pool carves from shared segments.
    let size = veballoc::SUB_MAX_BYTES;
    let most = STREAM_TEST_SEGMENTS * SEGMENT_BYTES / size;
    let mut held = Vec::new();
    loop {
        match heap.alloc(size) {
            Ok(p) => held.push(p),
            Err(OutOfMemory { .. }) => break,
            Err(e) => panic!("filling the heap: {e}"),
        }
        assert!(held.len() as u64 <= most, "more than the heap holds");
    }
    assert!(!held.is_empty(), "the heap served nothing");
    // Hold the stream with a host function that waits for the test's word: the event the free
    // records behind it stays pending.
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    stream
        .add_callback(Box::new(move || {
            let _ = wait.recv_timeout(STREAM_HOLD_LIMIT);
        }))
        .unwrap();
    let freed = held.pop().unwrap();
    heap.free_async(freed, &stream).unwrap();
    assert_eq!(heap.pool_stats().pending, 1, "the free waits for the held stream");
    assert!(matches!(heap.alloc(size), Err(OutOfMemory { .. })), "reused before the free ran");
    let other = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let before = heap.pool_stats();
    match heap.alloc_async(size, &other) {
        Err(OutOfMemory { .. }) => {}
        got => panic!(
            "another stream got {got:x?} (the pending free was at {freed:#x}; {} held; pool before \
             {before:?}, after {:?})",
            held.len(),
            heap.pool_stats()
        ),
    }
    let again = heap.alloc_async(size, &stream).unwrap();
    assert_eq!(again, freed, "the same stream reuses the range at once");
    assert_eq!(heap.pool_stats().pending, 0);
    go.send(()).unwrap();
    stream.synchronize().unwrap();
    held.push(again);
    for p in held {
        heap.free(p).unwrap();
    }
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.host_segments, s.free_segments), (0, heap.layout().num_segments as u64), "{s:?}");
    heap.destroy().unwrap();
}

/// The largest heap the card allows comes up and serves a 1M-thread run.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_auto_sized_heap() {
    let gpu = gpu();
    let free = gpu.free_memory().unwrap();
    let heap = Heap::auto(&gpu).unwrap();
    println!("auto heap: {} GiB of {} GiB free", heap.capacity() >> 30, free >> 30);
    assert!(heap.capacity() * 10 >= free * 8, "at least 80% of the free memory");
    alloc_write_verify_free(&gpu, &heap, scale(MILLION), 64, None);
    heap.destroy().unwrap();
}

/// A releasable heap gives wholly free segments' memory back to the driver while live data
/// stays intact, keeps serving from what it kept, and maps the memory again on request.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_releasable_heap_returns_and_regrows_memory() {
    let gpu = gpu();
    let t0 = std::time::Instant::now();
    let heap = Heap::releasable(&gpu, 4 << 30).unwrap();
    println!("releasable 4 GiB heap ready in {:.2} ms", t0.elapsed().as_secs_f64() * 1e3);
    let plain = Heap::new(&gpu, 1 << 30).unwrap();
    assert!(matches!(plain.trim_memory(0), Err(veballoc::Error::NotReleasable)));
    plain.destroy().unwrap();
    let n = scale(MILLION);
    let ptrs = alloc_with(&gpu, &heap, "vb_malloc", n, 1024, None);
    let before = gpu.free_memory().unwrap();
    let t1 = std::time::Instant::now();
    let returned = heap.trim_memory(256 << 20).unwrap();
    let after = gpu.free_memory().unwrap();
    println!(
        "trim_memory: {} MiB returned in {:.2} ms; the driver reports {} MiB more free; {} MiB still mapped",
        returned >> 20,
        t1.elapsed().as_secs_f64() * 1e3,
        (after.saturating_sub(before)) >> 20,
        heap.mapped_bytes() >> 20
    );
    assert!(returned >= heap.capacity() / 2, "most of a quarter-used heap goes back");
    assert!(after >= before + returned / 10 * 9, "the driver got the memory");
    let s = heap.stats().unwrap();
    assert_eq!((s.released_segments * SEGMENT_BYTES, s.bytes_in_use), (returned, n * 1024), "{s:?}");
    // The live data is intact, and what was kept still serves.
    let errs = veballoc::zeroed_u64s(3).unwrap();
    let buf = DeviceBuffer::from_slice(&ptrs).unwrap();
    let (p, e, size, zero, tag) =
        (buf.as_device_ptr().as_raw(), errs.as_device_ptr().as_raw(), 1024u64, 0u64, 3u64);
    // SAFETY: matches vb_verify's signature.
    unsafe { gpu.launch("vb_verify", n, BLOCK, veballoc::kernel_args![p, n, size, zero, tag, e]).unwrap() };
    gpu.sync().unwrap();
    assert_eq!(host(&errs), vec![0, 0, 0]);
    let more = alloc_with(&gpu, &heap, "vb_malloc", n / 4, 64, None);
    free_all(&gpu, &heap, &more);
    free_all(&gpu, &heap, &ptrs);
    let back = heap.regrow_memory(u64::MAX).unwrap();
    assert_eq!((back, heap.mapped_bytes()), (returned, heap.capacity()));
    assert_heap_empty(&heap);
    // The whole heap serves again: a run of all but one segment.
    let one = veballoc::zeroed_u64s(1).unwrap();
    let (arg, o, k, big) = (heap.arg(), one.as_device_ptr().as_raw(), 1u64, heap.capacity() - SEGMENT_BYTES);
    // SAFETY: matches vb_malloc's signature (no per-thread sizes).
    unsafe { gpu.launch("vb_malloc", 1, 1, veballoc::kernel_args![arg, o, k, big, zero]).unwrap() };
    let run = host(&one);
    assert_ne!(run[0], 0, "a run of all segments but one after regrow");
    free_all(&gpu, &heap, &run);
    assert_heap_empty(&heap);
    heap.destroy().unwrap();
}

/// A burst of 2^20 requests of 16, 24, 32, 48 and 64 B on a fresh 8 GiB heap (the `frag` test's
/// first round): no null, no overlap, the statistics count exactly the live slices, and the
/// heap is empty after the frees. Prints where the address range beyond the live bytes comes
/// from (issue 9's frag target at 16-64 B): blocks out of their tree against the blocks the
/// slices need, blocks out with no live slice (claimed ahead by a run, or current and not
/// reached), partly filled ones, and the segments the blocks lie in.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_small_size_burst_spread() {
    let gpu = gpu();
    let n = scale(1 << 20);
    for size in [16u64, 24, 32, 48, 64] {
        let heap = Heap::new(&gpu, HEAP_8G).unwrap();
        let c = slice_class(size);
        let (s, block) = (slice_bytes(c), veballoc::kernels::block::block_bytes(c));
        let mut ptrs = alloc_with(&gpu, &heap, "vb_malloc", n, size, None);
        let stats = heap.stats().unwrap();
        assert_eq!(stats.live_slices[c], n, "size {size}: {stats:?}");
        ptrs.sort_unstable();
        assert!(ptrs.windows(2).all(|w| w[0] + s <= w[1]), "size {size}: overlapping slices");
        let base = heap.base();
        let mut per_block = std::collections::BTreeMap::<u64, u64>::new();
        for &p in &ptrs {
            *per_block.entry((p - base) / block).or_default() += 1;
        }
        let per = block / s;
        let full = per_block.values().filter(|&&k| k == per).count();
        let half = per_block.values().filter(|&&k| k < per && k * 2 >= per).count();
        let segs: std::collections::BTreeSet<u64> =
            per_block.keys().map(|b| b * block / SEGMENT_BYTES).collect();
        let range = ptrs[ptrs.len() - 1] + s - ptrs[0];
        println!(
            "spread {size:>3} B: range/live {:.3}; blocks out {} (needed {}), with a live slice {} ({} full, {} half or more, {} less), \
             out with none {}; segments with a live slice {:?} of {} formatted",
            range as f64 / (n * size) as f64,
            stats.slice_blocks[c],
            n.div_ceil(per),
            per_block.len(),
            full,
            half,
            per_block.len() - full - half,
            stats.slice_blocks[c] - per_block.len() as u64,
            segs,
            stats.segments_in_use(),
        );
        free_all(&gpu, &heap, &ptrs);
        assert_heap_empty(&heap);
    }
}

/// A churn of mixed sizes up to 512 B (packed by `malloc`): every object keeps the usable
/// size it read at its allocation, and its whole usable size keeps its pattern until its free
/// (no neighbour's bounds or bytes reach into it), over rounds that reuse packed blocks.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_mixed_small_churn_keeps_usable_sizes() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, 1 << 30).unwrap();
    for (n, rounds, report) in [(1u64 << 20, 40u64, 10u64), (1 << 16, 200, 50)] {
        let errs = churn_rounds(&gpu, &heap, n, 12345, MIXED_PACKED_MAX_BYTES, rounds, report);
        println!("n {n}: bad words, nulls, usable errors = {errs:?}");
        assert_eq!(errs, [0, 0, 0]);
        heap.trim().unwrap();
        let s = heap.stats().unwrap();
        assert_eq!((s.bytes_in_use, s.live_packed, s.invalid_frees, s.double_frees), (0, 0, 0, 0), "{s:?}");
    }
    heap.destroy().unwrap();
}

/// Many rounds of churn inside one launch (`vb_churn_drift`) by `malloc`: the lanes of a warp
/// drift apart, so the allocator sees lanes at different rounds of its loops, or of the
/// kernel's, run together (independent thread scheduling). Before r45 its routing of mixed
/// warps hung here (a ballot under a test of the lane's own round).
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_churn_with_lanes_drifting_apart() {
    churn_drift(0);
}

/// As `gpu_churn_with_lanes_drifting_apart`, by `malloc_warp`, one size a warp a round (16 KiB
/// .. 64 KiB, the mask classes' path, in one round of 16; added after r45's GPU runs). Before
/// r45 each of its rounds served every active lane, lanes of a later call too (with the
/// first lane's class).
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_malloc_warp_with_lanes_drifting_apart() {
    churn_drift(1);
}

/// `vb_churn_drift` (`warp` its mode) for four seeds of 64 rounds over 2^18 threads in an
/// 8 GiB heap: no request may get null with the heap a few percent full, no word may change,
/// and everything taken comes back.
fn churn_drift(warp: u32) {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_8G).unwrap();
    let (n, rounds) = (scale(1 << 18), 64u64);
    let errs = veballoc::zeroed_u64s(2).unwrap();
    let (arg, e) = (heap.arg(), errs.as_device_ptr().as_raw());
    for seed in 1..=4u64 {
        // SAFETY: matches vb_churn_drift's signature in kernels/src/entry_bench.rs.
        unsafe {
            gpu.launch("vb_churn_drift", n, BLOCK, veballoc::kernel_args![arg, n, seed, rounds, warp, e])
                .unwrap()
        };
        gpu.sync().unwrap();
        let s = heap.stats().unwrap();
        println!("seed {seed}: bad words, nulls = {:?}; {} bytes in use after", host(&errs), s.bytes_in_use);
        print_trace(&heap);
        assert_eq!(s.bytes_in_use, 0, "every object was freed: {s:?}");
    }
    assert_eq!(host(&errs), vec![0, 0], "corrupted words, failed allocations");
    assert_heap_empty(&heap);
    heap.destroy().unwrap();
}
