//! Several GPUs from one process (issue 12.4): `Gpu::on_device`, `veballoc::devices`, heaps,
//! launches and host calls on any device, on two at once, from one thread and from many.
//! GPU tests: ignored by default, run on a GPU machine with `--ignored`, where they fail (not
//! skip) without a GPU. The `two_gpus_*` tests need two GPUs and fail with fewer: run them on a
//! 2-GPU machine (e.g. `nvidia-h200-x2`); elsewhere pass `--skip two_gpus`.

use cust::memory::DeviceBuffer;
use veballoc::kernels::block::{slice_bytes, slice_class};
use veballoc::{Error, Gpu, Heap};

const BLOCK: u32 = 256;
const MILLION: u64 = 1 << 20;
/// Room for a million 4 KiB slices (4 GiB) live at once, twice over.
const HEAP: u64 = 8 << 30;
/// Request sizes of the rounds: the smallest class, a middle one, the largest slice.
const SIZES: [u64; 3] = [16, 256, 4096];
/// Rounds per thread in the threaded tests.
const THREAD_ROUNDS: u64 = 4;

/// The number of GPUs, failing (not skipping) when there is none or fewer than `needed`.
fn require_gpus(needed: u32) -> u32 {
    let count = Gpu::device_count().expect("this test needs a CUDA GPU");
    assert!(count >= needed, "this test needs {needed} CUDA GPUs; this machine has {count}");
    for d in veballoc::devices().unwrap() {
        eprintln!(
            "GPU {}: {} ({} MiB, {} SMs, sm_{}{})",
            d.ordinal,
            d.name,
            d.total_memory >> 20,
            d.multiprocessors,
            d.compute_capability.0,
            d.compute_capability.1
        );
    }
    count
}

/// One round's device buffers: a pointer per thread and three error counters.
struct Round {
    ptrs: DeviceBuffer<u64>,
    errs: DeviceBuffer<u64>,
    n: u64,
    size: u64,
}

/// Queues malloc, write and verify of `size` bytes on `n` threads on `gpu`'s stream, without
/// waiting for them.
fn start_round(gpu: &Gpu, heap: &Heap, n: u64, size: u64, tag: u64) -> Round {
    let ptrs = gpu.zeroed::<u64>(n as usize).unwrap();
    let errs = gpu.zeroed::<u64>(3).unwrap();
    let (arg, p, e, no_sizes) =
        (heap.arg(), ptrs.as_device_ptr().as_raw(), errs.as_device_ptr().as_raw(), 0u64);
    // SAFETY: argument lists match the kernels' signatures in kernels/src/entry.rs; the
    // buffers and the heap are this GPU's.
    unsafe {
        gpu.launch("vb_malloc", n, BLOCK, veballoc::kernel_args![arg, p, n, size, no_sizes]).unwrap();
        gpu.launch("vb_write", n, BLOCK, veballoc::kernel_args![p, n, size, no_sizes, tag]).unwrap();
        gpu.launch("vb_verify", n, BLOCK, veballoc::kernel_args![p, n, size, no_sizes, tag, e]).unwrap();
    }
    Round { ptrs, errs, n, size }
}

/// Waits for a round, checks it (no overwritten word, null or misaligned pointer; every
/// pointer inside this heap; the heap's statistics count exactly the round's slices), frees
/// it and checks that the heap is empty again.
fn finish_round(gpu: &Gpu, heap: &Heap, r: Round) {
    // Held until the round's buffers are dropped (at the end): cust's DeviceBuffer frees in
    // the thread's current context.
    let _on = gpu.bind().unwrap();
    gpu.sync().unwrap();
    let mut errs = [0u64; 3];
    gpu.copy_out(&r.errs, &mut errs[..]).unwrap();
    let what = format!("GPU {} ({}), {} B", gpu.ordinal(), gpu.name(), r.size);
    assert_eq!(errs, [0, 0, 0], "{what}: overwritten words, nulls, misaligned");
    let mut ptrs = vec![0u64; r.n as usize];
    gpu.copy_out(&r.ptrs, &mut ptrs[..]).unwrap();
    let (base, end) = (heap.base(), heap.base() + heap.capacity());
    assert!(ptrs.iter().all(|&p| (base..end).contains(&p)), "{what}: a pointer outside this GPU's heap");
    let stats = heap.stats().unwrap();
    assert_eq!(stats.bytes_in_use, r.n * slice_bytes(slice_class(r.size)), "{what}: {stats:?}");
    let (arg, p, n) = (heap.arg(), r.ptrs.as_device_ptr().as_raw(), r.n);
    // SAFETY: vb_free(heap, ptrs, n) with this GPU's heap and buffer.
    unsafe { gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n]).unwrap() };
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.bytes_in_use, s.invalid_frees, s.double_frees), (0, 0, 0), "{what}: {s:?}");
    assert_eq!(s.free_segments, heap.layout().num_segments as u64, "{what}: {s:?}");
    drop(r);
}

/// A host-side allocation of 1 MiB from `heap`: words written and read back through it.
fn host_round_trip(heap: &Heap, tag: u64) {
    const STRIDE: u64 = 64 << 10;
    let p = heap.alloc(1 << 20).unwrap();
    for k in 0..(1 << 20) / STRIDE {
        heap.write(p + k * STRIDE, &(k ^ tag)).unwrap();
    }
    for k in 0..(1 << 20) / STRIDE {
        assert_eq!(
            heap.read::<u64>(p + k * STRIDE).unwrap(),
            k ^ tag,
            "host view, GPU {}",
            heap.gpu().ordinal()
        );
    }
    heap.free(p).unwrap();
}

/// Two GPUs, a heap on each (one plain, one releasable: its segments are mapped on its own
/// device), kernels queued on both before either is waited for, then both checked.
#[test]
#[ignore = "needs 2 CUDA GPUs (run with --ignored on a 2-GPU machine, e.g. nvidia-h200-x2)"]
fn two_gpus_two_heaps_kernels_at_once() {
    require_gpus(2);
    let (g0, g1) = (Gpu::on_device(0).unwrap(), Gpu::on_device(1).unwrap());
    assert_eq!((g0.ordinal(), g1.ordinal()), (0, 1));
    let (h0, h1) = (Heap::new(&g0, HEAP).unwrap(), Heap::releasable(&g1, HEAP).unwrap());
    let (b0, b1) = (h0.base(), h1.base());
    assert!(b0 + h0.capacity() <= b1 || b1 + h1.capacity() <= b0, "the two heaps overlap");
    for (k, size) in SIZES.into_iter().enumerate() {
        let r0 = start_round(&g0, &h0, MILLION, size, 2 * k as u64);
        let r1 = start_round(&g1, &h1, MILLION, size, 2 * k as u64 + 1);
        finish_round(&g0, &h0, r0);
        finish_round(&g1, &h1, r1);
    }
    host_round_trip(&h0, 0xa0);
    host_round_trip(&h1, 0xb1);
    // The releasable heap gives memory back to its own device, and takes it again.
    let returned = h1.trim_memory(0).unwrap();
    assert!(returned > 0, "trim_memory on GPU 1 returned nothing");
    assert_eq!(h1.mapped_bytes(), h1.capacity() - returned);
    assert_eq!(h1.regrow_memory(returned).unwrap(), returned);
    assert_eq!(h1.mapped_bytes(), h1.capacity());
    let r1 = start_round(&g1, &h1, MILLION, 64, 9);
    finish_round(&g1, &h1, r1);
    h0.destroy().unwrap();
    h1.destroy().unwrap();
}

/// Two GPUs driven from two threads at once (each thread its own GPU and heap), then from
/// one thread that alternates between them, then each GPU from the other's thread.
#[test]
#[ignore = "needs 2 CUDA GPUs (run with --ignored on a 2-GPU machine, e.g. nvidia-h200-x2)"]
fn two_gpus_from_threads() {
    require_gpus(2);
    let gpus = [Gpu::on_device(0).unwrap(), Gpu::on_device(1).unwrap()];
    let heaps = [Heap::new(&gpus[0], HEAP).unwrap(), Heap::new(&gpus[1], HEAP).unwrap()];
    let per_thread = |d: usize| {
        for round in 0..THREAD_ROUNDS {
            let size = SIZES[round as usize % SIZES.len()];
            let r = start_round(&gpus[d], &heaps[d], MILLION, size, round + 100 * d as u64);
            finish_round(&gpus[d], &heaps[d], r);
            host_round_trip(&heaps[d], round);
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| per_thread(0));
        s.spawn(|| per_thread(1));
    });
    // One thread, alternating: every call binds its own GPU's context.
    for round in 0..THREAD_ROUNDS {
        let rs = [0, 1].map(|d| start_round(&gpus[d], &heaps[d], MILLION, 32, round));
        for (d, r) in rs.into_iter().enumerate().rev() {
            finish_round(&gpus[d], &heaps[d], r);
        }
    }
    // Each GPU from a thread that never saw it before, both at once.
    std::thread::scope(|s| {
        s.spawn(|| per_thread(1));
        s.spawn(|| per_thread(0));
    });
    for h in heaps {
        h.destroy().unwrap();
    }
}

/// `veballoc::devices` lists every device; `Gpu::on_device` opens each, and past the last one
/// it returns `Error::NoSuchDevice` with the ordinal and the count.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_on_device_each_and_past_the_last() {
    let count = require_gpus(1);
    let list = veballoc::devices().unwrap();
    assert_eq!(list.len() as u32, count);
    for (i, d) in list.iter().enumerate() {
        assert_eq!(d.ordinal, i as u32);
        let gpu = Gpu::on_device(d.ordinal).unwrap();
        assert_eq!(gpu.ordinal(), d.ordinal);
        assert_eq!(
            (gpu.name(), gpu.total_memory(), gpu.multiprocessors()),
            (d.name.as_str(), d.total_memory, d.multiprocessors)
        );
        assert!(d.compute_capability.0 >= 7, "{d:?}");
        let heap = Heap::new(&gpu, HEAP).unwrap();
        let r = start_round(&gpu, &heap, MILLION / 4, 128, i as u64);
        finish_round(&gpu, &heap, r);
        heap.destroy().unwrap();
    }
    match Gpu::on_device(count) {
        Err(Error::NoSuchDevice { ordinal, count: c }) => {
            assert_eq!((ordinal, c), (count, count));
            let msg = Error::NoSuchDevice { ordinal, count: c }.to_string();
            assert!(msg.contains(&format!("no CUDA device {count}")), "{msg}");
        }
        Err(e) => panic!("Gpu::on_device({count}) gave {e} instead of NoSuchDevice"),
        Ok(g) => panic!("Gpu::on_device({count}) opened {} with {count} devices", g.name()),
    }
    assert!(matches!(Gpu::on_device(u32::MAX), Err(Error::NoSuchDevice { .. })));
}

/// One GPU and one heap used by several threads at once (none of which created the GPU):
/// each binds the context through veballoc's calls, launches on the shared stream, and checks
/// its own allocations.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_one_device_from_many_threads() {
    require_gpus(1);
    let gpu = Gpu::new().unwrap();
    let heap = Heap::new(&gpu, HEAP).unwrap();
    const THREADS: u64 = 4;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (gpu, heap) = (&gpu, &heap);
            s.spawn(move || {
                for round in 0..THREAD_ROUNDS {
                    let r = start_round(gpu, heap, MILLION / 4, SIZES[(t + round) as usize % SIZES.len()], t);
                    // Others' rounds may be live: check this round's words and pointers only.
                    gpu.sync().unwrap();
                    let mut errs = [0u64; 3];
                    gpu.copy_out(&r.errs, &mut errs[..]).unwrap();
                    assert_eq!(errs, [0, 0, 0], "thread {t}: overwritten words, nulls, misaligned");
                    let (arg, p, n) = (heap.arg(), r.ptrs.as_device_ptr().as_raw(), r.n);
                    // SAFETY: vb_free(heap, ptrs, n).
                    unsafe { gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n]).unwrap() };
                    gpu.sync().unwrap();
                    host_round_trip(heap, t);
                    // cust's DeviceBuffer frees in the thread's current context.
                    let _on = gpu.bind().unwrap();
                    drop(r);
                }
            });
        }
    });
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.bytes_in_use, s.invalid_frees, s.double_frees), (0, 0, 0), "{s:?}");
    heap.destroy().unwrap();
}
