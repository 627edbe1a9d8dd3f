//! GPU tests of the host runtime (issue 10, items 7, 9, 11 and 13): copies and memsets
//! ordered with veballoc's non-blocking stream, a 16 MiB-aligned heap base, stream-ordered
//! reuse on a recreated stream, and calls from threads that did not create the GPU.
//! They need a CUDA GPU: run them with `--ignored --test-threads=1` on a GPU machine; they
//! fail (not skip) without one.

use cust::function::{BlockSize, GridSize};
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use veballoc::{Gpu, Heap, HeapSize, LazyHeap, SEGMENT_BYTES};

/// Two helper kernels in hand-written PTX (checked with ptxas for sm_90): `vh_spin` keeps a
/// stream busy for a number of clock cycles, `vh_store` writes one word.
const HELPERS_PTX: &str = r#"
.version 7.0
.target sm_80
.address_size 64

.visible .entry vh_spin(.param .u64 cycles)
{
    .reg .pred %p;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [cycles];
    mov.u64 %rd2, %clock64;
$L_loop:
    mov.u64 %rd3, %clock64;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p, %rd4, %rd1;
    @%p bra $L_loop;
    ret;
}

.visible .entry vh_store(.param .u64 ptr, .param .u64 value)
{
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [ptr];
    ld.param.u64 %rd2, [value];
    cvta.to.global.u64 %rd3, %rd1;
    st.global.u64 [%rd3], %rd2;
    ret;
}
"#;

/// Clock cycles a spin lasts: about 0.3 s at 1.7 GHz, far longer than a launch and a copy.
const SPIN_CYCLES: u64 = 1 << 29;
/// The value the store kernel writes in the ordering tests.
const STORED: u64 = 42;
const MIB: u64 = 1 << 20;
const HEAP_BYTES: u64 = 256 * MIB;

fn gpu() -> Gpu {
    let gpu = Gpu::new().expect("this test needs a CUDA GPU");
    eprintln!("GPU: {} (driver {})", gpu.name(), gpu.driver_version());
    gpu
}

fn helpers(gpu: &Gpu) -> Module {
    gpu.load_module(HELPERS_PTX, 0).expect("the helper PTX loads")
}

/// Launches one thread of `kernel` (of `module`) on `stream`.
///
/// # Safety
/// `args` must match the kernel's parameters.
unsafe fn launch_on(stream: &Stream, module: &Module, kernel: &str, args: &[*mut std::ffi::c_void]) {
    let f = module.get_function(kernel).unwrap();
    // SAFETY: the caller vouches for the arguments.
    unsafe { stream.launch(&f, GridSize::x(1), BlockSize::x(1), 0, args) }.unwrap();
}

/// A blocking stream (ordered with the legacy default stream, unlike veballoc's) kept busy
/// by a spin kernel: a legacy-stream memset or copy queued now runs after the spin.
fn busy_blocking_stream(module: &Module) -> Stream {
    let busy = Stream::new(StreamFlags::DEFAULT, None).unwrap();
    let cycles = SPIN_CYCLES;
    // SAFETY: vh_spin takes one u64.
    unsafe { launch_on(&busy, module, "vh_spin", veballoc::kernel_args![cycles]) };
    busy
}

fn read_word(buf: &DeviceBuffer<u64>) -> u64 {
    let mut v = [0u64; 1];
    buf.copy_to(&mut v[..]).unwrap();
    v[0]
}

/// Item 7: `zeroed_u64s` zeroes on the legacy stream; a kernel on veballoc's non-blocking
/// stream that writes the buffer right after must not be overwritten by a memset still
/// queued behind a busy stream (before the fix the memset ran after the store: 0).
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_zeroed_u64s_is_ordered_with_the_heap_stream() {
    let gpu = gpu();
    let module = helpers(&gpu);
    let busy = busy_blocking_stream(&module);
    let buf = veballoc::zeroed_u64s(1).unwrap();
    let (p, v) = (buf.as_device_ptr().as_raw(), STORED);
    // SAFETY: vh_store takes a pointer and a value.
    unsafe { gpu.launch_in(&module, "vh_store", 1, 1, veballoc::kernel_args![p, v]).unwrap() };
    gpu.sync().unwrap();
    busy.synchronize().unwrap();
    cust::context::CurrentContext::synchronize().unwrap();
    assert_eq!(read_word(&buf), STORED, "the zeroing landed after the kernel's store");
    // The same through Gpu::zeroed, which zeroes on veballoc's stream.
    let busy = busy_blocking_stream(&module);
    let buf = gpu.zeroed::<u64>(1).unwrap();
    let p = buf.as_device_ptr().as_raw();
    // SAFETY: as above.
    unsafe { gpu.launch_in(&module, "vh_store", 1, 1, veballoc::kernel_args![p, v]).unwrap() };
    gpu.sync().unwrap();
    busy.synchronize().unwrap();
    assert_eq!(read_word(&buf), STORED);
}

/// Item 7: the host pool's segment claim (zeroed word, claim kernel, copy back) is ordered
/// on the heap's stream. Before the fix, with the legacy stream busy, the host read the
/// claim's answer before its memset had run, got 0, and carved segment 0, which a kernel's
/// allocation already used.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_host_claims_are_ordered_with_the_heap_stream() {
    let gpu = gpu();
    let module = helpers(&gpu);
    let heap = Heap::new(&gpu, HEAP_BYTES).unwrap();
    // A kernel allocation first: segment 0 is the device's.
    let ptrs = gpu.zeroed::<u64>(1).unwrap();
    let (arg, p, n, size, no_sizes) = (heap.arg(), ptrs.as_device_ptr().as_raw(), 1u64, 16u64, 0u64);
    // SAFETY: matches vb_malloc's signature (heap, ptrs, n, size, sizes).
    unsafe { gpu.launch("vb_malloc", 1, 1, veballoc::kernel_args![arg, p, n, size, no_sizes]).unwrap() };
    gpu.sync().unwrap();
    let mut dev = [0u64; 1];
    gpu.copy_out(&ptrs, &mut dev[..]).unwrap();
    let seg_of = |a: u64| (a - heap.base()) / SEGMENT_BYTES;
    assert_eq!(seg_of(dev[0]), 0, "the kernel's allocation is in segment 0");
    let busy = busy_blocking_stream(&module);
    let host = heap.alloc(MIB).unwrap();
    busy.synchronize().unwrap();
    assert_ne!(seg_of(host), 0, "the host pool carved the device's segment");
    let s = heap.stats().unwrap();
    assert_eq!((s.host_segments, s.invalid_frees), (1, 0), "{s:?}");
    heap.free(host).unwrap();
    // SAFETY: matches vb_free's signature (heap, ptrs, n).
    unsafe { gpu.launch("vb_free", 1, 1, veballoc::kernel_args![arg, p, n]).unwrap() };
    heap.trim().unwrap();
    let s = heap.stats().unwrap();
    assert_eq!((s.bytes_in_use, s.free_segments), (0, heap.layout().num_segments as u64), "{s:?}");
    heap.destroy().unwrap();
}

/// Item 7: creating a heap (metadata zeroed, header copied, init kernel) while the legacy
/// stream is busy gives a whole, valid heap. (Before the fix the memset and the header copy
/// went to the legacy stream; this checks the outcome, whichever way the race went.)
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_heap_creation_is_ordered_with_the_heap_stream() {
    let gpu = gpu();
    let module = helpers(&gpu);
    let busy = busy_blocking_stream(&module);
    let heap = Heap::new(&gpu, HEAP_BYTES).unwrap();
    let s = heap.stats().unwrap();
    busy.synchronize().unwrap();
    // The boot's formats ahead (`Heap::boot`) are in place, and nothing else.
    let n = heap.layout().num_segments;
    let booted: u32 = if veballoc::boot_requested() {
        (0..veballoc::kernels::block::NUM_GROUPS).map(|g| veballoc::kernels::heap::boot_segments(g, n)).sum()
    } else {
        0
    };
    let free = (n - booted) as u64;
    assert_eq!(s.free_segments, free, "{s:?}");
    let s = heap.stats().unwrap();
    assert_eq!(s.free_segments, free, "{s:?}");
    heap.destroy().unwrap();
}

/// Every new heap boots (`Heap::boot`): a segment formatted ahead for each small classes' group
/// (one for a 256 MiB heap, five from 80 segments up), each with every block free; a second
/// boot formats nothing more; a first malloc of 16 B then formats nothing, and a trim gives
/// every segment back.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_boot_formats_the_small_groups_ahead() {
    use veballoc::kernels::block::NUM_GROUPS;
    use veballoc::kernels::heap::{boot_groups, boot_segments, BOOT_SLOT_CLASS};
    let gpu = gpu();
    for bytes in [HEAP_BYTES, 2 << 30] {
        let heap = Heap::new(&gpu, bytes).unwrap();
        let n = heap.layout().num_segments;
        assert!(boot_groups(n) >= 1);
        // Group 0 (16 B, whose slots the boot fills) gets two segments, the others one.
        let formatted: [u64; NUM_GROUPS] = core::array::from_fn(|g| boot_segments(g, n) as u64);
        let booted = formatted.iter().sum::<u64>();
        // Booted at creation unless VEBALLOC_BOOT=0; the boot below then formats them.
        let at_new = if veballoc::boot_requested() { booted } else { 0 };
        assert_eq!(heap.stats().unwrap().free_segments, n as u64 - at_new, "booted");
        heap.boot().unwrap();
        let s = heap.stats().unwrap();
        let free = n as u64 - booted;
        assert_eq!((s.free_segments, s.segments_per_group), (free, formatted), "{s:?}");
        // A block in each 16-byte slot that a multiprocessor takes from.
        let slots = s.slice_blocks[BOOT_SLOT_CLASS];
        assert!(slots >= 1 && slots <= heap.layout().row_shards(BOOT_SLOT_CLASS) as u64, "{s:?}");
        let ptrs = gpu.zeroed::<u64>(1).unwrap();
        let (arg, p, one, size, no_sizes) = (heap.arg(), ptrs.as_device_ptr().as_raw(), 1u64, 16u64, 0u64);
        // SAFETY: matches vb_malloc's signature (heap, ptrs, n, size, sizes).
        unsafe {
            gpu.launch("vb_malloc", 1, 1, veballoc::kernel_args![arg, p, one, size, no_sizes]).unwrap()
        };
        gpu.sync().unwrap();
        let s = heap.stats().unwrap();
        assert_eq!((s.free_segments, s.segments_per_group, s.bytes_in_use), (free, formatted, 16), "{s:?}");
        assert_eq!(s.slice_blocks[BOOT_SLOT_CLASS], slots, "the first malloc installed no block: {s:?}");
        // SAFETY: matches vb_free's signature (heap, ptrs, n).
        unsafe { gpu.launch("vb_free", 1, 1, veballoc::kernel_args![arg, p, one]).unwrap() };
        heap.trim().unwrap();
        let s = heap.stats().unwrap();
        assert_eq!((s.bytes_in_use, s.free_segments), (0, n as u64), "{s:?}");
        heap.destroy().unwrap();
    }
}

/// Item 9: segment 0 of a `Heap::new` heap is 16 MiB-aligned, whatever `cuMemAlloc` gives
/// (on an H100, 17 and 24 MiB allocations came back 4 MiB past a 16 MiB boundary), and the
/// host pool returns whole segments on every such heap.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_heap_base_is_segment_aligned() {
    let gpu = gpu();
    let mut keep = Vec::new();
    let mut heaps = Vec::new();
    // Odd-sized allocations in between shift where the driver puts the next one.
    for (i, odd) in [MIB, 17 * MIB, 24 * MIB, 3 * MIB, 5 * MIB].into_iter().enumerate() {
        keep.push(veballoc::zeroed_u64s((odd / 8) as usize).unwrap());
        let heap = Heap::new(&gpu, (i as u64 + 1) * SEGMENT_BYTES).unwrap();
        let base = heap.base();
        println!("heap of {} segment(s) at {base:#x}", i + 1);
        assert_eq!(base % SEGMENT_BYTES, 0, "segment 0 at {base:#x}");
        heap.set_release_threshold(0);
        let ps: Vec<u64> = (0..16).map(|_| heap.alloc(MIB).unwrap()).collect();
        for p in ps {
            heap.free(p).unwrap();
        }
        heap.trim().unwrap();
        assert_eq!(heap.pool_stats(), veballoc::PoolStats::default(), "whole segments returned");
        heaps.push(heap);
    }
}

/// Item 11: a range freed on a stream whose work has not run, reused by a new stream that
/// got the destroyed stream's handle, is ordered after that work: the new stream waits for
/// the free. (Before the fix the pool keyed streams by handle only: the new stream's store
/// ran at once and the old stream's later store overwrote it.) When the driver gives the
/// new stream another handle, the range is not reused and the test says so.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_alloc_async_on_a_recreated_stream_is_ordered() {
    let gpu = gpu();
    let module = helpers(&gpu);
    let heap = Heap::new(&gpu, HEAP_BYTES).unwrap();
    let quarter = SEGMENT_BYTES / 4;
    let a = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    // A pool segment filled with four quarters, so that a reuse can only take a freed one.
    let ps: Vec<u64> = (0..4).map(|_| heap.alloc_async(quarter, &a).unwrap()).collect();
    let (cycles, p, old) = (SPIN_CYCLES, ps[0], 1u64);
    // SAFETY: vh_spin takes a u64; vh_store a pointer and a value.
    unsafe {
        launch_on(&a, &module, "vh_spin", veballoc::kernel_args![cycles]);
        launch_on(&a, &module, "vh_store", veballoc::kernel_args![p, old]);
    }
    heap.free_async(ps[0], &a).unwrap();
    let a_handle = a.as_inner() as usize;
    drop(a); // its queued work still runs
    let b = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let q = heap.alloc_async(quarter, &b).unwrap();
    println!(
        "new stream reused the old handle: {}; the freed range was reused: {}",
        b.as_inner() as usize == a_handle,
        q == ps[0]
    );
    let new = STORED;
    // SAFETY: as above.
    unsafe { launch_on(&b, &module, "vh_store", veballoc::kernel_args![q, new]) };
    b.synchronize().unwrap();
    cust::context::CurrentContext::synchronize().unwrap();
    assert_eq!(heap.read::<u64>(q).unwrap(), STORED, "the old stream's store landed after the new one's");
    heap.free_async(q, &b).unwrap();
    b.synchronize().unwrap();
    for &p in &ps[1..] {
        heap.free(p).unwrap();
    }
    heap.trim().unwrap();
    assert_eq!(heap.pool_stats(), veballoc::PoolStats::default());
    heap.destroy().unwrap();
}

/// Item 13: a heap and its GPU, made on one thread, serve calls from threads that never had
/// the context current (before the fix they failed with CUDA_ERROR_INVALID_CONTEXT), a
/// heap is dropped on another thread, and a `LazyHeap` made on one thread serves another.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_heap_is_usable_from_other_threads() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_BYTES).unwrap();
    let releasable = Heap::releasable(&gpu, 4 * SEGMENT_BYTES).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            // Host pool, typed views, stream-ordered calls.
            let a = heap.alloc(1000).unwrap();
            heap.write(a, &7u64).unwrap();
            assert_eq!(heap.read::<u64>(a).unwrap(), 7);
            let stream = {
                let _on = gpu.bind().unwrap();
                Stream::new(StreamFlags::NON_BLOCKING, None).unwrap()
            };
            let b = heap.alloc_async(4096, &stream).unwrap();
            heap.free_async(b, &stream).unwrap();
            heap.free(a).unwrap();
            // Kernels through the Gpu.
            let n = 64u64;
            let ptrs = gpu.zeroed::<u64>(n as usize).unwrap();
            let (arg, p, size, no_sizes) = (heap.arg(), ptrs.as_device_ptr().as_raw(), 100u64, 0u64);
            // SAFETY: matches vb_malloc's and vb_free's signatures.
            unsafe {
                gpu.launch("vb_malloc", n, 64, veballoc::kernel_args![arg, p, n, size, no_sizes]).unwrap();
                gpu.sync().unwrap();
                gpu.launch("vb_free", n, 64, veballoc::kernel_args![arg, p, n]).unwrap();
            }
            heap.trim().unwrap();
            let st = heap.stats().unwrap();
            assert_eq!((st.bytes_in_use, st.invalid_frees), (0, 0), "{st:?}");
            assert!(gpu.free_memory().unwrap() > 0);
            let _on = gpu.bind().unwrap();
            stream.synchronize().unwrap();
            drop(stream);
        })
        .join()
        .unwrap();
    });
    // A releasable heap trimmed, regrown and dropped on another thread.
    std::thread::spawn(move || {
        let returned = releasable.trim_memory(0).unwrap();
        assert_eq!(returned, releasable.capacity());
        assert_eq!(releasable.regrow_memory(u64::MAX).unwrap(), returned);
        drop(releasable);
    })
    .join()
    .unwrap();
    heap.destroy().unwrap();
    // A lazy heap created on one thread, used on a second, dropped with its GPU on neither.
    let lazy = Box::leak(Box::new(LazyHeap::new(HeapSize::Bytes(HEAP_BYTES))));
    let lazy: &'static LazyHeap = lazy;
    std::thread::spawn(move || assert!(lazy.get().is_ok())).join().unwrap();
    std::thread::spawn(move || {
        let h = lazy.get().unwrap();
        let p = h.alloc(4096).unwrap();
        h.write(p, &9u32).unwrap();
        assert_eq!(h.read::<u32>(p).unwrap(), 9);
        h.free(p).unwrap();
        h.trim().unwrap();
        assert_eq!(h.stats().unwrap().bytes_in_use, 0);
    })
    .join()
    .unwrap();
}

/// A `VEBALLOC_PTX_FILE` with the runtime's kernels alone (`veballoc::PTX`): heaps work on it,
/// and the module of the tests' and benchmarks' kernels is refused rather than taken from the
/// embedded `BENCH_PTX`, whose allocator may not be the file's (an A/B run would measure the
/// wrong build). With the embedded runtime module the bench module loads, once.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_a_runtime_only_ptx_file_refuses_the_bench_kernels() {
    let path = std::env::temp_dir().join(format!("veballoc-runtime-{}.ptx", std::process::id()));
    std::fs::write(&path, veballoc::PTX).unwrap();
    // The GPU tests run one at a time (--test-threads=1): no other test reads the variable.
    let before = std::env::var_os(veballoc::PTX_FILE_ENV);
    std::env::set_var(veballoc::PTX_FILE_ENV, &path);
    let file_gpu = Gpu::new();
    let refused = file_gpu.as_ref().ok().map(|g| g.bench_module().map(|_| ()));
    match before {
        Some(v) => std::env::set_var(veballoc::PTX_FILE_ENV, v),
        None => std::env::remove_var(veballoc::PTX_FILE_ENV),
    }
    std::fs::remove_file(&path).ok();
    let file_gpu = file_gpu.unwrap();
    let heap = Heap::new(&file_gpu, SEGMENT_BYTES).unwrap();
    heap.free(heap.alloc(MIB).unwrap()).unwrap();
    match refused.expect("Gpu::new on the runtime PTX file") {
        Err(veballoc::Error::PtxFile(msg)) => assert!(msg.contains("bench-kernels"), "{msg}"),
        other => panic!("a runtime-only VEBALLOC_PTX_FILE gave {other:?}"),
    }
    if std::env::var_os(veballoc::PTX_FILE_ENV).is_none() {
        let gpu = gpu();
        let first = gpu.bench_module().unwrap() as *const Module;
        assert_eq!(gpu.bench_module().unwrap() as *const Module, first, "loaded once");
        assert!(!std::ptr::eq(first, gpu.module()), "a module of its own");
    }
}

/// A dropped `GlobalBinding` takes its failure word out of the module before freeing it:
/// the module's allocator writes that word on every failed allocation (even one a kernel
/// handles, `try_reserve`), and before this it still held the freed word's address. It takes
/// the heap out too (r42): the binding borrows the heap, which may be dropped after it, and a
/// later kernel of the module allocated from the dropped heap's memory.
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_a_dropped_global_binding_leaves_its_module_no_failure_word() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_BYTES).unwrap();
    // veballoc's own module holds the global allocator's words too.
    let module = gpu.module();
    let failure_word = || {
        let mut now = 0u64;
        module.get_global::<u64>(c"VEBALLOC_GLOBAL_FAILURE").unwrap().copy_to(&mut now).unwrap();
        now
    };
    let heap_words = || {
        let mut now = [0u64; 3];
        module.get_global::<[u64; 3]>(c"VEBALLOC_GLOBAL_HEAP").unwrap().copy_to(&mut now).unwrap();
        now
    };
    {
        let _binding = heap.bind_global(module).unwrap();
        assert_ne!(failure_word(), 0, "a bound module names its failure word");
        assert_eq!(heap_words()[0], heap.base(), "a bound module names its heap");
    }
    assert_eq!(failure_word(), 0, "the module still names the freed failure word");
    assert_eq!(heap_words(), [0; 3], "the module still names the heap after its binding");
    heap.destroy().unwrap();
}

/// Reading zero-sized values gives as many as asked (it gave none, and `read` panicked).
#[test]
#[ignore = "needs a CUDA GPU (run with --ignored on a GPU machine)"]
fn gpu_reading_zero_sized_values_gives_each_of_them() {
    let gpu = gpu();
    let heap = Heap::new(&gpu, HEAP_BYTES).unwrap();
    let p = heap.alloc(64).unwrap();
    assert_eq!(heap.read_slice::<()>(p, 3).unwrap().len(), 3);
    heap.read::<()>(p).unwrap();
    assert_eq!(heap.read_slice::<u64>(p, 0).unwrap().len(), 0);
    heap.free(p).unwrap();
    heap.destroy().unwrap();
}
