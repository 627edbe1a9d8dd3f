//! Runs Rust's own collections in kernels on a veballoc heap: `cargo run --release -p
//! collections-example [threads]`. Every thread grows a `Vec<u32>` by push (up to 4 KiB),
//! boxes an array, formats a `String` and fills a `BTreeMap`, through veballoc's global
//! allocator; the results are checked against the same logic on the CPU. Then the try-APIs in
//! a kernel, and (each in a process of its own, since a trap ends the GPU context)
//! `--unbound`: a kernel allocating with no heap bound, and `--too-much`: an infallible
//! allocation larger than the heap; both must end with a clear error. `--hash N`: a
//! device-wide hash table of N keys. (`veballoc-bench collections` measures these kernels
//! against CUDA's device malloc as their global allocator.)

use std::time::Instant;

use veballoc::{Error, Gpu, Heap};

/// The example's kernels, built from `examples/collections/kernels` by build.rs.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/collections.ptx"));
/// Threads per block.
const BLOCK: u32 = 256;
/// Stack per GPU thread for these kernels (format!, BTreeMap): see `Gpu::set_stack_size`.
const STACK_BYTES: usize = veballoc::GLOBAL_ALLOC_STACK_BYTES;
/// The seed of the item counts.
const SEED: u64 = 0x0c01_1ec7;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("collections example: {e}.\nIt needs a CUDA GPU.");
            std::process::exit(2);
        }
    };
    // `--stack BYTES` first: the per-thread stack (format! and BTreeMap need more than CUDA's
    // default 1 KiB; see Gpu::set_stack_size).
    let (stack, args) = match args.first().map(String::as_str) {
        Some("--stack") => (args[1].parse().expect("stack bytes"), args[2..].to_vec()),
        _ => (STACK_BYTES, args),
    };
    if let Err(e) = gpu.set_stack_size(stack) {
        eprintln!("collections example: {e}");
        std::process::exit(1);
    }
    let result = match args.first().map(String::as_str) {
        Some("--unbound") => unbound(&gpu),
        Some("--too-much") => too_much(&gpu),
        Some("--hash") => hash(&gpu, args.get(1).map_or(1 << 20, |n| n.parse().expect("keys"))),
        other => run(&gpu, other.map_or(1 << 20, |n| n.parse().expect("threads"))),
    };
    if let Err(e) = result {
        eprintln!("collections example failed: {e}");
        std::process::exit(1);
    }
}

fn run(gpu: &Gpu, n: u64) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "GPU: {} (driver {}); {n} threads with Vec, Box, String, BTreeMap; {} B of stack per thread",
        gpu.name(),
        gpu.driver_version(),
        gpu.stack_size()?
    );
    let heap = Heap::new(gpu, 8 << 30)?;
    let module = gpu.load_module(PTX, veballoc::DEFAULT_MAX_REGISTERS)?;
    let global = heap.bind_global(&module)?;
    let out = gpu.zeroed::<u64>(n as usize)?;
    let o = out.as_device_ptr().as_raw();
    let t = Instant::now();
    // SAFETY: collections_run(out, n, seed) with n output words.
    unsafe { gpu.launch_in(&module, "collections_run", n, BLOCK, veballoc::kernel_args![o, n, SEED]) }
        .and_then(|_| gpu.sync())
        .map_err(|e| global.explain(e))?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let mut got = vec![0u64; n as usize];
    gpu.copy_out(&out, &mut got)?;
    let wrong = (0..n).filter(|&i| got[i as usize] != collections_kernels::work(i, SEED)).count();
    let pushed: u64 = (0..n).map(|i| collections_kernels::items(i, SEED)).sum();
    println!("{n} threads: {ms:.3} ms (kernel and launch), {pushed} items pushed, {wrong} threads wrong");
    assert_eq!(wrong, 0, "threads whose collections differ from the CPU's");
    // A BTreeMap per warp, built by lane 0 from all 32 lanes' items.
    let warps = n.div_ceil(collections_kernels::WARP);
    let maps = gpu.zeroed::<u64>(warps as usize)?;
    let mp = maps.as_device_ptr().as_raw();
    let t = Instant::now();
    // SAFETY: collections_warp_maps(out, n, seed) with n / 32 output words.
    unsafe { gpu.launch_in(&module, "collections_warp_maps", n, BLOCK, veballoc::kernel_args![mp, n, SEED]) }
        .and_then(|_| gpu.sync())
        .map_err(|e| global.explain(e))?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let mut got = vec![0u64; warps as usize];
    gpu.copy_out(&maps, &mut got)?;
    let wrong = (0..warps).filter(|&w| got[w as usize] != collections_kernels::warp_map(w, SEED)).count();
    println!("{warps} per-warp BTreeMaps: {ms:.3} ms, {wrong} wrong");
    assert_eq!(wrong, 0, "warps whose maps differ from the CPU's");
    heap.trim()?;
    let s = heap.stats()?;
    assert_eq!(s.bytes_in_use, 0, "every collection was dropped: {s:?}");
    // The try-APIs: more than the heap holds is an error the kernel sees.
    let flag = gpu.zeroed::<u64>(1)?;
    let (f, too_much) = (flag.as_device_ptr().as_raw(), 2 * heap.capacity());
    // SAFETY: collections_try_reserve(out, bytes) with one output word.
    unsafe { gpu.launch_in(&module, "collections_try_reserve", 1, 1, veballoc::kernel_args![f, too_much])? };
    gpu.sync()?;
    let mut v = [0u64; 1];
    gpu.copy_out(&flag, &mut v)?;
    assert_eq!(v[0], 3, "try_reserve past the heap refused and Box::try_new served");
    global.clear();
    println!("try_reserve past the heap: Err in the kernel; Box::try_new: Ok");
    Ok(())
}

/// A kernel that allocates with no heap bound must end with `KernelAlloc { no_heap: true }`.
fn unbound(gpu: &Gpu) -> Result<(), Box<dyn std::error::Error>> {
    let module = gpu.load_module(PTX, veballoc::DEFAULT_MAX_REGISTERS)?;
    let global = gpu.watch_global_allocator(&module)?;
    let out = gpu.zeroed::<u64>(32)?;
    let (o, n) = (out.as_device_ptr().as_raw(), 32u64);
    // SAFETY: collections_run(out, n, seed) with n output words.
    let r = unsafe { gpu.launch_in(&module, "collections_run", n, 32, veballoc::kernel_args![o, n, SEED]) }
        .and_then(|_| gpu.sync())
        .map_err(|e| global.explain(e));
    match r {
        Err(e @ Error::KernelAlloc { no_heap: true, .. }) => {
            println!("no heap bound: the kernel ended with: {e}");
            Ok(())
        }
        other => Err(format!("expected KernelAlloc {{ no_heap: true }}, got {other:?}").into()),
    }
}

/// An infallible allocation larger than the heap must end with `KernelAlloc { no_heap: false }`.
fn too_much(gpu: &Gpu) -> Result<(), Box<dyn std::error::Error>> {
    let heap = Heap::new(gpu, 64 << 20)?;
    let module = gpu.load_module(PTX, veballoc::DEFAULT_MAX_REGISTERS)?;
    let global = heap.bind_global(&module)?;
    let bytes = 1u64 << 30;
    // SAFETY: collections_alloc(bytes).
    let r = unsafe { gpu.launch_in(&module, "collections_alloc", 1, 1, veballoc::kernel_args![bytes]) }
        .and_then(|_| gpu.sync())
        .map_err(|e| global.explain(e));
    match r {
        Err(e @ Error::KernelAlloc { no_heap: false, size }) if size == bytes => {
            println!("an allocation past the heap: the kernel ended with: {e}");
            Ok(())
        }
        other => {
            Err(format!("expected KernelAlloc {{ no_heap: false, size: {bytes} }}, got {other:?}").into())
        }
    }
}

/// A device-wide chained hash table: `n` threads each box a node and push it onto its bucket
/// (`hash_insert`), then look every key up (`hash_lookup`), then free every chain
/// (`hash_free`); the heap must be empty again.
fn hash(gpu: &Gpu, n: u64) -> Result<(), Box<dyn std::error::Error>> {
    let heap = Heap::new(gpu, 8 << 30)?;
    let module = gpu.load_module(PTX, veballoc::DEFAULT_MAX_REGISTERS)?;
    let global = heap.bind_global(&module)?;
    let nb = (n / 4).max(1);
    let table = gpu.zeroed::<u64>(nb as usize)?;
    let counts = gpu.zeroed::<u64>(2)?;
    let (t, failed) = (table.as_device_ptr().as_raw(), counts.as_device_ptr().as_raw());
    let found = failed + 8;
    let launch = |name: &str, threads: u64, args: &[*mut std::ffi::c_void]| -> Result<f64, Error> {
        let t0 = Instant::now();
        // SAFETY: the argument lists below match the kernels in collections-kernels.
        unsafe { gpu.launch_in(&module, name, threads, BLOCK, args) }
            .and_then(|_| gpu.sync())
            .map_err(|e| global.explain(e))?;
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    };
    let ins = launch("hash_insert", n, veballoc::kernel_args![t, nb, n, SEED, failed])?;
    let look = launch("hash_lookup", n, veballoc::kernel_args![t, nb, n, SEED, found])?;
    let mut c = [0u64; 2];
    gpu.copy_out(&counts, &mut c)?;
    let live = heap.stats()?.bytes_in_use;
    let free = launch("hash_free", nb, veballoc::kernel_args![t, nb])?;
    println!(
        "hash table of {n} keys in {nb} buckets: insert {ins:.3} ms, lookup {look:.3} ms, free {free:.3} ms; \
         {} found, {} pushes given up, {} MiB of nodes",
        c[1],
        c[0],
        live >> 20
    );
    assert_eq!((c[0], c[1]), (0, n), "every key inserted once and found with its value");
    heap.trim()?;
    let s = heap.stats()?;
    assert_eq!(s.bytes_in_use, 0, "every node freed: {s:?}");
    Ok(())
}
