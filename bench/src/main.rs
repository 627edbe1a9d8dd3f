//! veballoc's benchmark harness: the field's protocol (shared/anchors.md) for veballoc, the
//! bump-allocator floor and CUDA's device malloc, in one run, with CSV and JSON results.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, Subcommand};
use cust::event::{Event, EventFlags};
use cust::memory::{CopyDestination, DeviceBuffer};
use serde::Serialize;
use veballoc::{Gpu, Heap};

mod plot;

/// Threads per block, as in the protocol.
const BLOCK: u32 = 256;
/// Gallatin's published means on an H100 (shared/anchors.md): (size, alloc ms, free ms).
const GALLATIN_H100: [(u64, f64, f64); 9] = [
    (16, 0.139, 0.046),
    (32, 0.187, 0.044),
    (64, 0.313, 0.041),
    (128, 0.571, 0.036),
    (256, 1.068, 0.032),
    (512, 1.835, 0.030),
    (1024, 2.005, 0.047),
    (2048, 2.527, 0.085),
    (4096, 3.754, 0.031),
];
/// Gallatin's published mixed-size means on an H100: (max size, alloc ms, free ms).
const GALLATIN_MIXED_H100: [(u64, f64, f64); 3] =
    [(64, 0.292, 0.042), (512, 1.106, 0.051), (4096, 1.996, 0.056)];

#[derive(Parser)]
#[command(
    about = "veballoc benchmark harness (single, mixed, scaling, init) against the bump floor and CUDA malloc"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Threads (allocations) per kernel.
    #[arg(long, default_value_t = 1 << 20, global = true)]
    threads: u64,
    /// Iterations per point (fresh heap each).
    #[arg(long, default_value_t = 5, global = true)]
    iters: u32,
    /// Heap size in GiB.
    #[arg(long, default_value_t = 8, global = true)]
    heap_gib: u64,
    /// Sizes (bytes, comma-separated) for single; maxima for mixed.
    #[arg(long, value_delimiter = ',', global = true)]
    sizes: Option<Vec<u64>>,
    /// Allocators to run: veballoc, bump, cuda.
    #[arg(long, value_delimiter = ',', default_values_t = ["veballoc".to_string(), "bump".into(), "cuda".into()], global = true)]
    allocators: Vec<String>,
    /// Sizes at which CUDA malloc is run (it takes seconds at some sizes and over a minute at
    /// 512 and 1024 B in the published figures).
    #[arg(long, value_delimiter = ',', default_values_t = [16u64, 32, 64, 128, 2048], global = true)]
    cuda_sizes: Vec<u64>,
    /// Iterations for CUDA malloc points.
    #[arg(long, default_value_t = 1, global = true)]
    cuda_iters: u32,
    /// JIT register cap for veballoc's kernels (0: none).
    #[arg(long, default_value_t = veballoc::DEFAULT_MAX_REGISTERS, global = true)]
    maxreg: u32,
    /// Alloc/free rounds per point of `frag`.
    #[arg(long, default_value_t = 5, global = true)]
    rounds: u32,
    /// Heap size for `oom`, in MiB.
    #[arg(long, default_value_t = 1024, global = true)]
    oom_heap_mib: u64,
    /// Most live allocations in `host` (powers of ten up to this).
    #[arg(long, default_value_t = 1_000_000, global = true)]
    host_max_live: u64,
    /// Output folder for CSV and JSON.
    #[arg(long, default_value = "bench/results/latest", global = true)]
    out: PathBuf,
}

#[derive(Subcommand, Clone, Copy, PartialEq)]
enum Cmd {
    /// One size per run, 16..4096 B.
    Single,
    /// Sizes drawn in [16, max], max 64..4096 B.
    Mixed,
    /// Threads 2^0..2^20 at 16, 64, 512 and 8192 B.
    Scaling,
    /// Time until an 8 GiB heap is ready.
    Init,
    /// Address range handed out vs live bytes, over repeated alloc/free rounds.
    Frag,
    /// Bytes handed out before null, as a share of the heap.
    Oom,
    /// The single-size test on one reused heap (warm) next to fresh heaps (cold).
    Warm,
    /// Mixed sizes per warp: per-class malloc vs malloc_packed vs CUDA malloc, with the
    /// time of a linear write and read pass over every thread's buffer.
    Packed,
    /// One size per launch: malloc vs the collective malloc_warp and malloc_block.
    Collective,
    /// Host-side allocation: Heap::alloc/free vs cuMemAlloc/cuMemFree vs
    /// cuMemAllocAsync/cuMemFreeAsync, sizes 1 B..1 GiB and 1..10^6 live allocations.
    Host,
    /// All of the above.
    All,
}

/// One measured point.
#[derive(Serialize, Clone)]
struct Point {
    test: String,
    allocator: String,
    phase: String,
    size: u64,
    threads: u64,
    samples_ms: Vec<f64>,
    mean_ms: f64,
    std_ms: f64,
    min_ms: f64,
    max_ms: f64,
    median_ms: f64,
}

impl Point {
    fn new(test: &str, allocator: &str, phase: &str, size: u64, threads: u64, samples: Vec<f64>) -> Point {
        let n = samples.len().max(1) as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let std = (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        let mut s = samples.clone();
        s.sort_by(f64::total_cmp);
        let median = if s.is_empty() {
            f64::NAN
        } else if s.len() % 2 == 1 {
            s[s.len() / 2]
        } else {
            (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
        };
        Point {
            test: test.into(),
            allocator: allocator.into(),
            phase: phase.into(),
            size,
            threads,
            min_ms: s.first().copied().unwrap_or(f64::NAN),
            max_ms: s.last().copied().unwrap_or(f64::NAN),
            samples_ms: samples,
            mean_ms: mean,
            std_ms: std,
            median_ms: median,
        }
    }
}

#[derive(Serialize)]
struct Report<'a> {
    gpu: String,
    driver: i32,
    date_utc: String,
    git_rev: &'static str,
    threads: u64,
    iters: u32,
    heap_bytes: u64,
    block: u32,
    max_registers: u32,
    points: &'a [Point],
    frag: &'a [FragPoint],
    oom: &'a [OomPoint],
}

/// Address range handed out vs live bytes after one alloc round.
#[derive(Serialize, Clone)]
struct FragPoint {
    allocator: String,
    /// Size, or the maximum for mixed sizes.
    size: u64,
    mixed: bool,
    round: u32,
    threads: u64,
    /// Highest address + its size - lowest address.
    range_bytes: u64,
    /// Bytes requested (N*S, or the sum of the mixed sizes).
    live_bytes: u64,
    ratio: f64,
}

/// Bytes handed out before null.
#[derive(Serialize, Clone)]
struct OomPoint {
    allocator: String,
    size: u64,
    threads: u64,
    served: u64,
    heap_bytes: u64,
    /// served * size / heap_bytes.
    share: f64,
    ms: f64,
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct Bench {
    gpu: Gpu,
    cli: Cli,
    points: Vec<Point>,
    frag: Vec<FragPoint>,
    oom: Vec<OomPoint>,
    /// Null pointers in the last veballoc alloc round.
    last_nulls: u64,
}

/// How thread i's size is chosen.
#[derive(Clone, Copy)]
enum Sizes {
    Fixed(u64),
    /// Uniform in [16, max].
    Mixed(u64),
}

impl Sizes {
    fn per_thread(self, n: u64) -> Option<Vec<u32>> {
        match self {
            Sizes::Fixed(_) => None,
            Sizes::Mixed(max) => {
                Some((0..n).map(|i| 16 + (veballoc::kernels::mix(0xbe9c ^ i) % (max - 15)) as u32).collect())
            }
        }
    }
    fn fixed(self) -> u64 {
        match self {
            Sizes::Fixed(s) => s,
            Sizes::Mixed(_) => 0,
        }
    }
    fn label(self) -> u64 {
        match self {
            Sizes::Fixed(s) | Sizes::Mixed(s) => s,
        }
    }
}

impl Bench {
    /// Event time (ms) around the launches `f` enqueues.
    fn timed(&self, f: impl FnOnce() -> veballoc::Result<()>) -> Res<f64> {
        let (a, b) = (Event::new(EventFlags::DEFAULT)?, Event::new(EventFlags::DEFAULT)?);
        a.record(self.gpu.stream())?;
        f()?;
        b.record(self.gpu.stream())?;
        b.synchronize()?;
        Ok(b.elapsed_time_f32(&a)? as f64)
    }

    /// Writes the pattern and checks it; fails the run on any error.
    fn write_verify(&self, ptrs: u64, n: u64, sizes: Sizes, sizes_dev: u64, what: &str) -> Res<()> {
        let errs = veballoc::zeroed_u64s(3)?;
        let (e, size, tag) = (errs.as_device_ptr().as_raw(), sizes.fixed(), 3u64);
        // SAFETY: argument lists match vb_write / vb_verify.
        unsafe {
            self.gpu.launch("vb_write", n, BLOCK, veballoc::kernel_args![ptrs, n, size, sizes_dev, tag])?;
            self.gpu.launch(
                "vb_verify",
                n,
                BLOCK,
                veballoc::kernel_args![ptrs, n, size, sizes_dev, tag, e],
            )?;
        }
        self.gpu.sync()?;
        let mut h = [0u64; 3];
        errs.copy_to(&mut h[..])?;
        if h != [0, 0, 0] {
            return Err(format!(
                "{what}: verification failed: {} bad words, {} nulls, {} misaligned",
                h[0], h[1], h[2]
            )
            .into());
        }
        Ok(())
    }

    /// Per-thread sizes on the device (address, or 0 for one fixed size; keep the buffer
    /// alive) and a zeroed pointer array.
    fn buffers(sizes: Sizes, n: u64) -> Res<(Option<DeviceBuffer<u32>>, u64, DeviceBuffer<u64>)> {
        let buf = sizes.per_thread(n).map(|s| DeviceBuffer::from_slice(&s)).transpose()?;
        let dev = buf.as_ref().map_or(0, |b| b.as_device_ptr().as_raw());
        Ok((buf, dev, veballoc::zeroed_u64s(n as usize)?))
    }

    fn run_veballoc(
        &mut self,
        test: &str,
        sizes: Sizes,
        n: u64,
        iters: u32,
        verify: bool,
    ) -> Res<(f64, f64)> {
        let (_sizes_buf, sizes_dev, ptrs) = Self::buffers(sizes, n)?;
        let p = ptrs.as_device_ptr().as_raw();
        let (mut ta, mut tf) = (Vec::new(), Vec::new());
        // One more iteration than asked: the first is a warm-up and is dropped.
        for _ in 0..=iters {
            let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
            let (arg, size) = (heap.arg(), sizes.fixed());
            // SAFETY: matches vb_malloc.
            ta.push(self.timed(|| unsafe {
                self.gpu.launch("vb_malloc", n, BLOCK, veballoc::kernel_args![arg, p, n, size, sizes_dev])
            })?);
            if verify {
                self.write_verify(p, n, sizes, sizes_dev, "veballoc")?;
            } else {
                self.last_nulls = Self::host_u64s(&ptrs)?.iter().filter(|&&x| x == 0).count() as u64;
            }
            // SAFETY: matches vb_free.
            tf.push(self.timed(|| unsafe {
                self.gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n])
            })?);
            heap.destroy()?;
        }
        let (ta, tf) = (ta[1..].to_vec(), tf[1..].to_vec());
        self.record(test, "veballoc", sizes.label(), n, ta, tf)
    }

    fn run_bump(
        &mut self,
        test: &str,
        sizes: Sizes,
        n: u64,
        iters: u32,
        arena: u64,
        verify: bool,
    ) -> Res<(f64, f64)> {
        // The floor hands out the largest size for every thread (no size classes to pick).
        let size = match sizes {
            Sizes::Fixed(s) => s,
            Sizes::Mixed(m) => m,
        };
        let ptrs = veballoc::zeroed_u64s(n as usize)?;
        let mut counter = veballoc::zeroed_u64s(1)?;
        let (p, c) = (ptrs.as_device_ptr().as_raw(), counter.as_device_ptr().as_raw());
        let mut ta = Vec::new();
        // One more iteration than asked: the first is a warm-up and is dropped.
        for _ in 0..=iters {
            counter.copy_from(&[0u64][..])?;
            // SAFETY: matches bump_malloc.
            ta.push(self.timed(|| unsafe {
                self.gpu.launch("bump_malloc", n, BLOCK, veballoc::kernel_args![c, arena, p, n, size])
            })?);
            if verify && n * size <= self.cli.heap_gib << 30 {
                self.write_verify(p, n, Sizes::Fixed(size), 0, "bump")?;
            }
        }
        self.record(test, "bump", sizes.label(), n, ta[1..].to_vec(), Vec::new())
    }

    fn run_cuda(&mut self, test: &str, sizes: Sizes, n: u64, iters: u32, verify: bool) -> Res<(f64, f64)> {
        let (_sizes_buf, sizes_dev, ptrs) = Self::buffers(sizes, n)?;
        let p = ptrs.as_device_ptr().as_raw();
        let (mut ta, mut tf) = (Vec::new(), Vec::new());
        for _ in 0..iters {
            let size = sizes.fixed();
            // SAFETY: matches cuda_malloc / cuda_free.
            ta.push(self.timed(|| unsafe {
                self.gpu.launch("cuda_malloc", n, BLOCK, veballoc::kernel_args![p, n, size, sizes_dev])
            })?);
            if verify {
                self.write_verify(p, n, sizes, sizes_dev, "cuda malloc")?;
            }
            // SAFETY: matches the free kernel's signature.
            tf.push(
                self.timed(|| unsafe {
                    self.gpu.launch("cuda_free", n, BLOCK, veballoc::kernel_args![p, n])
                })?,
            );
        }
        self.record(test, "cuda", sizes.label(), n, ta, tf)
    }

    fn record(
        &mut self,
        test: &str,
        alloc: &str,
        size: u64,
        n: u64,
        ta: Vec<f64>,
        tf: Vec<f64>,
    ) -> Res<(f64, f64)> {
        let a = Point::new(test, alloc, "alloc", size, n, ta);
        let f = Point::new(test, alloc, "free", size, n, tf);
        let r = (a.mean_ms, f.mean_ms);
        self.points.push(a);
        if !f.samples_ms.is_empty() {
            self.points.push(f);
        }
        Ok(r)
    }

    fn wants(&self, a: &str) -> bool {
        self.cli.allocators.iter().any(|x| x == a)
    }

    fn sizes_test(&mut self, test: &str, list: Vec<u64>, mixed: bool) -> Res<()> {
        let n = self.cli.threads;
        let arena = DeviceBuffer::<u8>::zeroed((self.cli.heap_gib << 30) as usize)?;
        let base = arena.as_device_ptr().as_raw();
        println!("\n{test}: {n} threads, {} iterations, {} GiB heap", self.cli.iters, self.cli.heap_gib);
        println!(
            "{:>7} | {:>10} {:>10} | {:>9} {:>8} | {:>10} {:>10} | {:>9} {:>9}",
            "size",
            "vb alloc",
            "vb free",
            "bump",
            "vb/bump",
            "cuda alloc",
            "cuda free",
            "vs Gal. a",
            "vs Gal. f"
        );
        for s in list {
            let sizes = if mixed { Sizes::Mixed(s) } else { Sizes::Fixed(s) };
            eprint!("  [{test} {s}] ...\r");
            let vb = if self.wants("veballoc") {
                Some(self.run_veballoc(test, sizes, n, self.cli.iters, true)?)
            } else {
                None
            };
            let bump = if self.wants("bump") {
                Some(self.run_bump(test, sizes, n, self.cli.iters, base, true)?.0)
            } else {
                None
            };
            let cuda = if self.wants("cuda") && self.cli.cuda_sizes.contains(&s) {
                Some(self.run_cuda(test, sizes, n, self.cli.cuda_iters, true)?)
            } else {
                None
            };
            let gal = if mixed {
                GALLATIN_MIXED_H100.iter().find(|g| g.0 == s)
            } else {
                GALLATIN_H100.iter().find(|g| g.0 == s)
            };
            let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                _ => "-".into(),
            };
            println!(
                "{:>7} | {:>10} {:>10} | {:>9} {:>8} | {:>10} {:>10} | {:>9} {:>9}",
                if mixed { format!("≤{s}") } else { s.to_string() },
                f(vb.map(|v| v.0)),
                f(vb.map(|v| v.1)),
                f(bump),
                ratio(vb.map(|v| v.0), bump),
                cuda.map_or("-".into(), |c| format!("{:.2}", c.0)),
                cuda.map_or("-".into(), |c| format!("{:.2}", c.1)),
                ratio(gal.map(|g| g.1), vb.map(|v| v.0)),
                ratio(gal.map(|g| g.2), vb.map(|v| v.1)),
            );
            std::io::stdout().flush().ok();
        }
        Ok(())
    }

    fn scaling(&mut self) -> Res<()> {
        let arena = DeviceBuffer::<u8>::zeroed((self.cli.heap_gib << 30) as usize)?;
        let base = arena.as_device_ptr().as_raw();
        println!("\nscaling: {} iterations (nulls: requests the heap could not serve)", self.cli.iters);
        println!(
            "{:>6} {:>9} | {:>10} {:>10} {:>8} | {:>9}",
            "size", "threads", "vb alloc", "vb free", "nulls", "bump"
        );
        for size in [16u64, 64, 512, 8192] {
            let max_log = if size == 8192 { 18 } else { 20 };
            for l in 0..=max_log {
                let n = 1u64 << l;
                eprint!("  [scaling {size} B, 2^{l}] ...\r");
                let vb = self.run_veballoc("scaling", Sizes::Fixed(size), n, self.cli.iters, false)?;
                let nulls = self.last_nulls;
                let bump = self.run_bump("scaling", Sizes::Fixed(size), n, self.cli.iters, base, false)?.0;
                println!("{size:>6} {n:>9} | {:>10.4} {:>10.4} {nulls:>8} | {bump:>9.4}", vb.0, vb.1);
            }
        }
        Ok(())
    }

    fn init(&mut self) -> Res<()> {
        let bytes = self.cli.heap_gib << 30;
        let mut wall = Vec::new();
        for _ in 0..self.cli.iters.max(3) {
            self.gpu.sync()?;
            let t = Instant::now();
            let heap = Heap::new(&self.gpu, bytes)?;
            wall.push(t.elapsed().as_secs_f64() * 1e3);
            heap.destroy()?;
        }
        let p = Point::new("init", "veballoc", "create", bytes, 0, wall);
        println!("\ninit: {} GiB heap ready (cuMemAlloc + metadata memset + init kernel + sync): mean {:.3} ms, median {:.3} ms, min {:.3} ms", self.cli.heap_gib, p.mean_ms, p.median_ms, p.min_ms);
        self.points.push(p);
        Ok(())
    }

    /// The pointers a kernel wrote.
    fn host_u64s(b: &DeviceBuffer<u64>) -> Res<Vec<u64>> {
        let mut v = vec![0u64; b.len()];
        b.copy_to(&mut v[..])?;
        Ok(v)
    }

    /// Range handed out (highest end - lowest start) and the number of nulls.
    fn range_of(ptrs: &[u64], size: impl Fn(usize) -> u64) -> (u64, u64) {
        let (mut lo, mut hi, mut nulls) = (u64::MAX, 0u64, 0u64);
        for (i, &p) in ptrs.iter().enumerate() {
            if p == 0 {
                nulls += 1;
            } else {
                lo = lo.min(p);
                hi = hi.max(p + size(i));
            }
        }
        (hi.saturating_sub(lo), nulls)
    }

    fn frag(&mut self, singles: Vec<u64>) -> Res<()> {
        let n = self.cli.threads;
        println!(
            "\nfrag: {n} threads, {} alloc/free rounds on one heap; range handed out / live bytes",
            self.cli.rounds
        );
        println!("{:>9} | {:>22} | {:>22}", "size", "veballoc (round 0, max)", "cuda malloc (round 0)");
        let list: Vec<(bool, u64)> = singles
            .into_iter()
            .map(|s| (false, s))
            .chain([64u64, 512, 4096].into_iter().map(|s| (true, s)))
            .collect();
        for (mixed, s) in list {
            let sizes = if mixed { Sizes::Mixed(s) } else { Sizes::Fixed(s) };
            let per = sizes.per_thread(n);
            let size_of = |i: usize| per.as_ref().map_or(s, |v| v[i] as u64);
            let live: u64 = (0..n as usize).map(size_of).sum();
            let sizes_buf = per.as_ref().map(|v| DeviceBuffer::from_slice(v)).transpose()?;
            let sizes_dev = sizes_buf.as_ref().map_or(0, |b| b.as_device_ptr().as_raw());
            let ptrs = veballoc::zeroed_u64s(n as usize)?;
            let p = ptrs.as_device_ptr().as_raw();
            let mut row = Vec::new();
            let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
            let (arg, fixed) = (heap.arg(), sizes.fixed());
            for round in 0..self.cli.rounds {
                // SAFETY: matches vb_malloc / vb_free.
                unsafe {
                    self.gpu.launch(
                        "vb_malloc",
                        n,
                        BLOCK,
                        veballoc::kernel_args![arg, p, n, fixed, sizes_dev],
                    )?
                };
                self.gpu.sync()?;
                let (range, nulls) = Self::range_of(&Self::host_u64s(&ptrs)?, size_of);
                if nulls > 0 {
                    return Err(format!("frag: veballoc returned {nulls} nulls at size {s}").into());
                }
                // SAFETY: as above.
                unsafe { self.gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n])? };
                let ratio = range as f64 / live as f64;
                row.push(ratio);
                self.frag.push(FragPoint {
                    allocator: "veballoc".into(),
                    size: s,
                    mixed,
                    round,
                    threads: n,
                    range_bytes: range,
                    live_bytes: live,
                    ratio,
                });
            }
            heap.destroy()?;
            let mut cuda = "-".to_string();
            if self.wants("cuda") && !mixed && self.cli.cuda_sizes.contains(&s) {
                // SAFETY: matches cuda_malloc / cuda_free.
                unsafe {
                    self.gpu.launch(
                        "cuda_malloc",
                        n,
                        BLOCK,
                        veballoc::kernel_args![p, n, fixed, sizes_dev],
                    )?
                };
                self.gpu.sync()?;
                let (range, nulls) = Self::range_of(&Self::host_u64s(&ptrs)?, size_of);
                unsafe { self.gpu.launch("cuda_free", n, BLOCK, veballoc::kernel_args![p, n])? };
                self.gpu.sync()?;
                let ratio = range as f64 / live as f64;
                cuda = format!("{ratio:.3}x ({nulls} nulls)");
                self.frag.push(FragPoint {
                    allocator: "cuda".into(),
                    size: s,
                    mixed,
                    round: 0,
                    threads: n,
                    range_bytes: range,
                    live_bytes: live,
                    ratio,
                });
            }
            let max = row.iter().copied().fold(0.0, f64::max);
            println!(
                "{:>9} | {:>22} | {:>22}",
                if mixed { format!("mixed≤{s}") } else { s.to_string() },
                format!("{:.3}x, {:.3}x", row[0], max),
                cuda
            );
        }
        Ok(())
    }

    fn oom(&mut self) -> Res<()> {
        let heap_bytes = self.cli.oom_heap_mib << 20;
        println!(
            "\noom: {} MiB heap, 1.1x more requests than fit; bytes handed out before null / heap",
            self.cli.oom_heap_mib
        );
        println!("{:>10} | {:>10} | {:>10} | {:>8} | {:>9}", "size", "threads", "served", "share", "ms");
        for s in [16u64, 256, 4096, 65536, 1 << 20, 32 << 20] {
            let threads = (heap_bytes / s) * 11 / 10 + 64;
            let ptrs = veballoc::zeroed_u64s(threads as usize)?;
            let heap = Heap::new(&self.gpu, heap_bytes)?;
            let (arg, p, zero) = (heap.arg(), ptrs.as_device_ptr().as_raw(), 0u64);
            // SAFETY: matches vb_malloc.
            let ms = self.timed(|| unsafe {
                self.gpu.launch("vb_malloc", threads, BLOCK, veballoc::kernel_args![arg, p, threads, s, zero])
            })?;
            let served = Self::host_u64s(&ptrs)?.iter().filter(|&&x| x != 0).count() as u64;
            let share = (served * s) as f64 / heap_bytes as f64;
            println!("{s:>10} | {threads:>10} | {served:>10} | {:>7.2}% | {ms:>9.3}", 100.0 * share);
            self.oom.push(OomPoint {
                allocator: "veballoc".into(),
                size: s,
                threads,
                served,
                heap_bytes,
                share,
                ms,
            });
            heap.destroy()?;
        }
        Ok(())
    }

    /// Times alloc, a write pass and a read pass over every buffer, and free, for one
    /// allocator variant (`kernel`: vb_malloc, vb_malloc_packed, vb_malloc_warp,
    /// vb_malloc_cta or cuda_malloc), fresh heap per iteration; records four phases.
    fn run_variant(
        &mut self,
        test: &str,
        label: &str,
        kernel: &str,
        sizes: Sizes,
        n: u64,
        iters: u32,
    ) -> Res<[f64; 4]> {
        let (_sizes_buf, sizes_dev, ptrs) = Self::buffers(sizes, n)?;
        let errs = veballoc::zeroed_u64s(3)?;
        let (p, e, size, tag) =
            (ptrs.as_device_ptr().as_raw(), errs.as_device_ptr().as_raw(), sizes.fixed(), 5u64);
        let mut t: [Vec<f64>; 4] = Default::default();
        let cuda = kernel == "cuda_malloc";
        // One more iteration than asked for veballoc: the first is a warm-up and is dropped.
        let first = if cuda { 0 } else { 1 };
        for it in 0..iters + first {
            let heap = if cuda { None } else { Some(Heap::new(&self.gpu, self.cli.heap_gib << 30)?) };
            let arg = heap.as_ref().map(|h| h.arg());
            // SAFETY: argument lists match the kernels in kernels/src/entry.rs.
            let ta = self.timed(|| unsafe {
                match (kernel, arg) {
                    ("cuda_malloc", _) => {
                        self.gpu.launch(kernel, n, BLOCK, veballoc::kernel_args![p, n, size, sizes_dev])
                    }
                    ("vb_malloc" | "vb_malloc_packed", Some(a)) => {
                        self.gpu.launch(kernel, n, BLOCK, veballoc::kernel_args![a, p, n, size, sizes_dev])
                    }
                    (_, Some(a)) => self.gpu.launch(kernel, n, BLOCK, veballoc::kernel_args![a, p, n, size]),
                    _ => unreachable!("veballoc kernels get a heap"),
                }
            })?;
            // SAFETY: as above.
            let tw = self.timed(|| unsafe {
                self.gpu.launch("vb_write", n, BLOCK, veballoc::kernel_args![p, n, size, sizes_dev, tag])
            })?;
            // SAFETY: as above.
            let tr = self.timed(|| unsafe {
                self.gpu.launch("vb_verify", n, BLOCK, veballoc::kernel_args![p, n, size, sizes_dev, tag, e])
            })?;
            let mut h = [0u64; 3];
            errs.copy_to(&mut h[..])?;
            if h != [0, 0, 0] {
                return Err(
                    format!("{label}: verification failed: {h:?} (bad words, nulls, misaligned)").into()
                );
            }
            // SAFETY: as above.
            let tf = self.timed(|| unsafe {
                match arg {
                    Some(a) => self.gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![a, p, n]),
                    None => self.gpu.launch("cuda_free", n, BLOCK, veballoc::kernel_args![p, n]),
                }
            })?;
            if let Some(h) = heap {
                h.destroy()?;
            }
            if it >= first {
                for (v, x) in t.iter_mut().zip([ta, tw, tr, tf]) {
                    v.push(x);
                }
            }
        }
        let mut means = [0.0; 4];
        for (i, (phase, samples)) in ["alloc", "write", "read", "free"].into_iter().zip(t).enumerate() {
            let pt = Point::new(test, label, phase, sizes.label(), n, samples);
            means[i] = pt.mean_ms;
            self.points.push(pt);
        }
        Ok(means)
    }

    /// Mixed-size coalescing: per-class malloc, malloc_packed and CUDA malloc at sizes drawn
    /// in [16, max], with the access passes.
    fn packed(&mut self, maxima: Vec<u64>) -> Res<()> {
        let n = self.cli.threads;
        println!(
            "
packed: {n} threads, sizes in [16, max], {} iterations; ms for alloc, write pass, read pass, free",
            self.cli.iters
        );
        println!(
            "{:>6} {:>16} | {:>9} {:>9} {:>9} {:>9}",
            "max", "allocator", "alloc", "write", "read", "free"
        );
        for max in maxima {
            let mut variants = vec![("veballoc", "vb_malloc"), ("veballoc-packed", "vb_malloc_packed")];
            if self.wants("cuda") && self.cli.cuda_sizes.contains(&max) {
                variants.push(("cuda", "cuda_malloc"));
            }
            for (label, kernel) in variants {
                eprint!("  [packed {max} {label}] ...\r");
                let iters = if kernel == "cuda_malloc" { self.cli.cuda_iters } else { self.cli.iters };
                let m = self.run_variant("packed", label, kernel, Sizes::Mixed(max), n, iters)?;
                println!("{max:>6} {label:>16} | {:>9.4} {:>9.4} {:>9.4} {:>9.4}", m[0], m[1], m[2], m[3]);
            }
        }
        Ok(())
    }

    /// Collective calls: malloc vs malloc_warp vs malloc_block, one size per launch.
    fn collective(&mut self, list: Vec<u64>) -> Res<()> {
        let n = self.cli.threads;
        println!(
            "
collective: {n} threads, {} iterations; ms for alloc, write pass, read pass, free",
            self.cli.iters
        );
        println!("{:>6} {:>16} | {:>9} {:>9} {:>9} {:>9}", "size", "call", "alloc", "write", "read", "free");
        for size in list {
            for (label, kernel) in [
                ("malloc", "vb_malloc"),
                ("malloc_warp", "vb_malloc_warp"),
                ("malloc_block", "vb_malloc_cta"),
            ] {
                eprint!("  [collective {size} {label}] ...\r");
                let m =
                    self.run_variant("collective", label, kernel, Sizes::Fixed(size), n, self.cli.iters)?;
                println!("{size:>6} {label:>16} | {:>9.4} {:>9.4} {:>9.4} {:>9.4}", m[0], m[1], m[2], m[3]);
            }
        }
        Ok(())
    }

    /// Host-side allocation against the driver's allocators.
    fn host(&mut self) -> Res<()> {
        let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
        let stream = cust::stream::Stream::new(cust::stream::StreamFlags::NON_BLOCKING, None)?;
        let raw = stream.as_inner();
        let check = |r: cust::sys::CUresult, what: &str| -> Res<()> {
            if r == cust::sys::cudaError_enum::CUDA_SUCCESS {
                Ok(())
            } else {
                Err(format!("{what} failed: {r:?}").into())
            }
        };
        // The async allocator keeps freed memory in its pool (its usual setting for reuse).
        let mut pool: cust::sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: plain driver calls on the current context's device 0.
        unsafe {
            check(cust::sys::cuDeviceGetDefaultMemPool(&mut pool, 0), "cuDeviceGetDefaultMemPool")?;
            let mut max = u64::MAX;
            check(
                cust::sys::cuMemPoolSetAttribute(
                    pool,
                    cust::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    &mut max as *mut u64 as *mut std::ffi::c_void,
                ),
                "cuMemPoolSetAttribute",
            )?;
        }
        type Alloc<'a> = Box<dyn FnMut(u64) -> Res<u64> + 'a>;
        type Free<'a> = Box<dyn FnMut(u64) -> Res<()> + 'a>;
        let kinds = ["veballoc", "cuMemAlloc", "cuMemAllocAsync"];
        let make = |k: &str| -> (Alloc<'_>, Free<'_>) {
            match k {
                "veballoc" => (Box::new(|b| Ok(heap.alloc(b)?)), Box::new(|p| Ok(heap.free(p)?))),
                "cuMemAlloc" => (
                    Box::new(move |b| {
                        let mut p = 0;
                        // SAFETY: driver allocation of b bytes.
                        check(unsafe { cust::sys::cuMemAlloc_v2(&mut p, b as usize) }, "cuMemAlloc")?;
                        Ok(p)
                    }),
                    // SAFETY: p came from cuMemAlloc.
                    Box::new(move |p| check(unsafe { cust::sys::cuMemFree_v2(p) }, "cuMemFree")),
                ),
                _ => (
                    Box::new(move |b| {
                        let mut p = 0;
                        // SAFETY: stream-ordered allocation on our stream.
                        check(
                            unsafe { cust::sys::cuMemAllocAsync(&mut p, b as usize, raw) },
                            "cuMemAllocAsync",
                        )?;
                        Ok(p)
                    }),
                    // SAFETY: p came from cuMemAllocAsync on the same stream.
                    Box::new(move |p| check(unsafe { cust::sys::cuMemFreeAsync(p, raw) }, "cuMemFreeAsync")),
                ),
            }
        };
        println!("\nhost: alloc+free pairs (us per pair), sizes 1 B .. 1 GiB");
        println!("{:>12} | {:>10} {:>12} {:>16}", "size", "veballoc", "cuMemAlloc", "cuMemAllocAsync");
        for l in (0..=30).step_by(2) {
            let size = 1u64 << l;
            let reps = if size >= 64 << 20 { 20 } else { 200 };
            let mut row = Vec::new();
            for k in kinds {
                eprint!("  [host {size} {k}] ...\r");
                let (mut a, mut f) = make(k);
                let mut samples = Vec::new();
                for _ in 0..self.cli.iters {
                    let t0 = Instant::now();
                    for _ in 0..reps {
                        let p = a(size)?;
                        f(p)?;
                    }
                    stream.synchronize()?;
                    samples.push(t0.elapsed().as_secs_f64() * 1e3 / reps as f64);
                }
                let pt = Point::new("host", k, "pair", size, 1, samples);
                row.push(pt.mean_ms * 1e3);
                self.points.push(pt);
            }
            println!("{size:>12} | {:>10.2} {:>12.2} {:>16.2}", row[0], row[1], row[2]);
        }
        println!("\nhost: N live 256 B allocations, then all freed (us per call)");
        println!(
            "{:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9}",
            "live", "vb alloc", "vb free", "cu alloc", "cu free", "as alloc", "as free"
        );
        let mut n = 1u64;
        while n <= self.cli.host_max_live {
            let mut row = Vec::new();
            for k in kinds {
                eprint!("  [host live {n} {k}] ...\r");
                let (mut a, mut f) = make(k);
                let (mut ta, mut tf) = (Vec::new(), Vec::new());
                for _ in 0..self.cli.iters.min(3) {
                    let mut ptrs = Vec::with_capacity(n as usize);
                    let t0 = Instant::now();
                    for _ in 0..n {
                        ptrs.push(a(256)?);
                    }
                    stream.synchronize()?;
                    ta.push(t0.elapsed().as_secs_f64() * 1e3 / n as f64);
                    let t1 = Instant::now();
                    for &p in &ptrs {
                        f(p)?;
                    }
                    stream.synchronize()?;
                    tf.push(t1.elapsed().as_secs_f64() * 1e3 / n as f64);
                }
                let (pa, pf) = (
                    Point::new("host-live", k, "alloc", 256, n, ta),
                    Point::new("host-live", k, "free", 256, n, tf),
                );
                row.extend([pa.mean_ms * 1e3, pf.mean_ms * 1e3]);
                self.points.extend([pa, pf]);
            }
            println!(
                "{n:>9} | {:>9.2} {:>9.2} | {:>9.2} {:>9.2} | {:>9.2} {:>9.2}",
                row[0], row[1], row[2], row[3], row[4], row[5]
            );
            n *= 10;
        }
        heap.destroy()?;
        Ok(())
    }

    fn warm(&mut self, list: Vec<u64>) -> Res<()> {
        let n = self.cli.threads;
        println!(
            "\nwarm: {n} threads, {} iterations; cold = fresh heap per iteration, warm = one heap reused",
            self.cli.iters
        );
        println!(
            "{:>7} | {:>10} {:>10} | {:>10} {:>10}",
            "size", "cold alloc", "cold free", "warm alloc", "warm free"
        );
        for s in list {
            let cold = self.run_veballoc("warm", Sizes::Fixed(s), n, self.cli.iters, true)?;
            let ptrs = veballoc::zeroed_u64s(n as usize)?;
            let (p, zero) = (ptrs.as_device_ptr().as_raw(), 0u64);
            let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
            let arg = heap.arg();
            let (mut ta, mut tf) = (Vec::new(), Vec::new());
            for _ in 0..self.cli.iters {
                // SAFETY: matches vb_malloc / vb_free.
                ta.push(self.timed(|| unsafe {
                    self.gpu.launch("vb_malloc", n, BLOCK, veballoc::kernel_args![arg, p, n, s, zero])
                })?);
                self.write_verify(p, n, Sizes::Fixed(s), 0, "veballoc (warm)")?;
                // SAFETY: matches the free kernel's signature.
                tf.push(self.timed(|| unsafe {
                    self.gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n])
                })?);
            }
            heap.destroy()?;
            let warm = self.record("warm", "veballoc-warm", s, n, ta, tf)?;
            println!("{s:>7} | {:>10.4} {:>10.4} | {:>10.4} {:>10.4}", cold.0, cold.1, warm.0, warm.1);
        }
        Ok(())
    }

    fn save(&self, name: &str) -> Res<()> {
        std::fs::create_dir_all(&self.cli.out)?;
        let report = Report {
            gpu: self.gpu.name().into(),
            driver: self.gpu.driver_version(),
            date_utc: date_utc(),
            git_rev: env!("VEBALLOC_GIT_REV"),
            threads: self.cli.threads,
            iters: self.cli.iters,
            heap_bytes: self.cli.heap_gib << 30,
            block: BLOCK,
            max_registers: self.cli.maxreg,
            points: &self.points,
            frag: &self.frag,
            oom: &self.oom,
        };
        let json = self.cli.out.join(format!("{name}.json"));
        std::fs::write(&json, serde_json::to_string_pretty(&report)?)?;
        write_csv(&self.cli.out.join(format!("{name}.csv")), &report)?;
        let head = format!(
            "# gpu={} driver={} date={} rev={}\n",
            report.gpu, report.driver, report.date_utc, report.git_rev
        );
        if !self.frag.is_empty() {
            let mut t = head.clone() + "allocator,size,mixed,round,threads,range_bytes,live_bytes,ratio\n";
            for f in &self.frag {
                t += &format!(
                    "{},{},{},{},{},{},{},{:.4}\n",
                    f.allocator, f.size, f.mixed, f.round, f.threads, f.range_bytes, f.live_bytes, f.ratio
                );
            }
            std::fs::write(self.cli.out.join(format!("{name}-frag.csv")), t)?;
        }
        if !self.oom.is_empty() {
            let mut t = head + "allocator,size,threads,served,heap_bytes,share,ms\n";
            for o in &self.oom {
                t += &format!(
                    "{},{},{},{},{},{:.4},{:.3}\n",
                    o.allocator, o.size, o.threads, o.served, o.heap_bytes, o.share, o.ms
                );
            }
            std::fs::write(self.cli.out.join(format!("{name}-oom.csv")), t)?;
        }
        let plots = self.plots(name);
        println!(
            "\nwrote {} and .csv{}",
            json.display(),
            if plots.is_empty() { String::new() } else { format!(", plots: {}", plots.join(", ")) }
        );
        Ok(())
    }

    /// Draws the plots this run has data for; returns their file names.
    fn plots(&self, name: &str) -> Vec<String> {
        let mut made = Vec::new();
        // Draws one plot; a failure is reported and the run goes on.
        let mut emit =
            |file: String, title: &str, x: &str, log_y: bool, y: &str, ss: &[plot::Series]| match plot::draw(
                &self.cli.out.join(&file),
                title,
                x,
                y,
                log_y,
                ss,
            ) {
                Ok(()) => made.push(file),
                Err(e) => eprintln!("warning: plot {file}: {e}"),
            };
        let series = |test: &str,
                      alloc: &str,
                      phase: &str,
                      threads: Option<u64>,
                      size: Option<u64>,
                      by_threads: bool| plot::Series {
            label: format!("{alloc} {phase}"),
            points: self
                .points
                .iter()
                .filter(|p| p.test == test && p.allocator == alloc && p.phase == phase)
                .filter(|p| threads.is_none_or(|t| p.threads == t) && size.is_none_or(|s| p.size == s))
                .map(|p| (if by_threads { p.threads as f64 } else { p.size as f64 }, p.mean_ms))
                .collect(),
            dashed: false,
        };
        for (test, gal) in [
            ("single", &GALLATIN_H100[..]),
            ("mixed", &GALLATIN_MIXED_H100[..]),
            ("warm", &GALLATIN_H100[..]),
        ] {
            let mut ss = Vec::new();
            for (alloc, phase) in [
                ("veballoc", "alloc"),
                ("veballoc", "free"),
                ("bump", "alloc"),
                ("cuda", "alloc"),
                ("cuda", "free"),
                ("veballoc-warm", "alloc"),
                ("veballoc-warm", "free"),
            ] {
                let s = series(test, alloc, phase, None, None, false);
                if !s.points.is_empty() {
                    ss.push(s);
                }
            }
            if ss.is_empty() {
                continue;
            }
            for (i, phase) in ["alloc", "free"].iter().enumerate() {
                let pts = gal.iter().map(|g| (g.0 as f64, if i == 0 { g.1 } else { g.2 })).collect();
                ss.push(plot::Series {
                    label: format!("Gallatin {phase} (H100, published)"),
                    points: pts,
                    dashed: true,
                });
            }
            let file = format!("{name}-{test}.svg");
            let title = format!(
                "{test}: {} threads, mean of {} iterations ({})",
                self.cli.threads,
                self.cli.iters,
                self.gpu.name()
            );
            let x = if test == "mixed" { "max size (bytes)" } else { "size (bytes)" };
            emit(file, &title, x, true, "time (ms)", &ss);
        }
        for (test, allocs, x) in [
            ("packed", &["veballoc", "veballoc-packed", "cuda"][..], "max size (bytes)"),
            ("collective", &["malloc", "malloc_warp", "malloc_block"][..], "size (bytes)"),
        ] {
            let mut ss = Vec::new();
            for (i, alloc) in allocs.iter().enumerate() {
                for phase in ["alloc", "read", "free"] {
                    let mut s = series(test, alloc, phase, None, None, false);
                    s.dashed = i > 0 && phase != "alloc";
                    if !s.points.is_empty() {
                        ss.push(s);
                    }
                }
            }
            if !ss.is_empty() {
                let title = format!(
                    "{test}: {} threads, mean of {} iterations ({})",
                    self.cli.threads,
                    self.cli.iters,
                    self.gpu.name()
                );
                emit(format!("{name}-{test}.svg"), &title, x, true, "time (ms)", &ss);
            }
        }
        for (test, phases, by_threads, x, file) in [
            ("host", &["pair"][..], false, "size (bytes)", "host-sizes"),
            ("host-live", &["alloc", "free"][..], true, "live allocations", "host-live"),
        ] {
            let mut ss = Vec::new();
            for (i, alloc) in ["veballoc", "cuMemAlloc", "cuMemAllocAsync"].iter().enumerate() {
                for phase in phases {
                    let mut s = series(test, alloc, phase, None, None, by_threads);
                    s.points.iter_mut().for_each(|p| p.1 *= 1e3);
                    s.dashed = i > 0;
                    if !s.points.is_empty() {
                        ss.push(s);
                    }
                }
            }
            if !ss.is_empty() {
                let title = format!("{test}: host-side allocation, us per call ({})", self.gpu.name());
                emit(format!("{name}-{file}.svg"), &title, x, true, "time (us)", &ss);
            }
        }
        let sizes: Vec<u64> = {
            let mut v: Vec<u64> =
                self.points.iter().filter(|p| p.test == "scaling").map(|p| p.size).collect();
            v.sort();
            v.dedup();
            v
        };
        if !sizes.is_empty() {
            let mut ss = Vec::new();
            for &sz in &sizes {
                for (alloc, phase) in [("veballoc", "alloc"), ("veballoc", "free"), ("bump", "alloc")] {
                    let mut s = series("scaling", alloc, phase, None, Some(sz), true);
                    s.label = format!("{alloc} {phase} {sz} B");
                    s.dashed = alloc == "bump";
                    ss.push(s);
                }
            }
            emit(
                format!("{name}-scaling.svg"),
                "scaling: time vs threads",
                "threads",
                true,
                "time (ms)",
                &ss,
            );
        }
        if !self.frag.is_empty() {
            let mut ss = Vec::new();
            for alloc in ["veballoc", "cuda"] {
                for mixed in [false, true] {
                    let pts: Vec<(f64, f64)> = self
                        .frag
                        .iter()
                        .filter(|f| f.allocator == alloc && f.mixed == mixed && f.round == 0)
                        .map(|f| (f.size as f64, f.ratio))
                        .collect();
                    if !pts.is_empty() {
                        ss.push(plot::Series {
                            label: format!(
                                "{alloc} {}",
                                if mixed { "mixed (x = max)" } else { "single size" }
                            ),
                            points: pts,
                            dashed: alloc == "cuda",
                        });
                    }
                }
            }
            emit(
                format!("{name}-frag.svg"),
                "address range handed out / live bytes (first round)",
                "size (bytes)",
                false,
                "range / live",
                &ss,
            );
        }
        made
    }
}

fn write_csv(path: &Path, r: &Report) -> Res<()> {
    let mut f = std::fs::File::create(path)?;
    writeln!(f, "# gpu={} driver={} date={} rev={}", r.gpu, r.driver, r.date_utc, r.git_rev)?;
    writeln!(f, "test,allocator,phase,size,threads,iters,mean_ms,std_ms,min_ms,max_ms,median_ms")?;
    for p in r.points {
        writeln!(
            f,
            "{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6}",
            p.test,
            p.allocator,
            p.phase,
            p.size,
            p.threads,
            p.samples_ms.len(),
            p.mean_ms,
            p.std_ms,
            p.min_ms,
            p.max_ms,
            p.median_ms
        )?;
    }
    Ok(())
}

/// Now, as an ISO-8601 UTC timestamp.
fn date_utc() -> String {
    let secs =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn main() {
    let cli = Cli::parse();
    let gpu = match Gpu::with_max_registers(cli.maxreg) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("veballoc-bench: {e}.\nThere is nothing to measure on this machine: run it where an NVIDIA GPU and its driver are present.");
            std::process::exit(2);
        }
    };
    println!(
        "GPU: {} | driver {} | {} SMs | {} MiB | rev {} | JIT register cap {}",
        gpu.name(),
        gpu.driver_version(),
        gpu.multiprocessors(),
        gpu.total_memory() >> 20,
        env!("VEBALLOC_GIT_REV"),
        cli.maxreg
    );
    if cli.allocators.iter().any(|a| a == "cuda") {
        // CUDA's device heap limit, as in the protocol (8 GiB by default).
        // SAFETY: plain driver call on the current context.
        let r = unsafe {
            cust::sys::cuCtxSetLimit(
                cust::sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE,
                (cli.heap_gib << 30) as usize,
            )
        };
        if r != cust::sys::cudaError_enum::CUDA_SUCCESS {
            eprintln!("warning: cuCtxSetLimit(MALLOC_HEAP_SIZE) failed: {r:?}");
        }
    }
    let cmd = cli.cmd;
    let mut b = Bench { gpu, cli, points: Vec::new(), frag: Vec::new(), oom: Vec::new(), last_nulls: 0 };
    let pow2 =
        |lo: u64, hi: u64| (lo.trailing_zeros()..=hi.trailing_zeros()).map(|l| 1u64 << l).collect::<Vec<_>>();
    let result = (|| -> Res<()> {
        if matches!(cmd, Cmd::Single | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| pow2(16, 4096));
            b.sizes_test("single", list, false)?;
        }
        if matches!(cmd, Cmd::Mixed | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| pow2(64, 4096));
            b.sizes_test("mixed", list, true)?;
        }
        if matches!(cmd, Cmd::Scaling | Cmd::All) {
            b.scaling()?;
        }
        if matches!(cmd, Cmd::Init | Cmd::All) {
            b.init()?;
        }
        if matches!(cmd, Cmd::Frag | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| pow2(16, 4096));
            b.frag(list)?;
        }
        if matches!(cmd, Cmd::Oom | Cmd::All) {
            b.oom()?;
        }
        if matches!(cmd, Cmd::Warm | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| pow2(16, 4096));
            b.warm(list)?;
        }
        if matches!(cmd, Cmd::Packed | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| vec![64, 256, 1024, 4096]);
            b.packed(list)?;
        }
        if matches!(cmd, Cmd::Host | Cmd::All) {
            b.host()?;
        }
        if matches!(cmd, Cmd::Collective | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| vec![16, 64, 256, 1024, 4096]);
            b.collective(list)?;
        }
        Ok(())
    })();
    let name = match cmd {
        Cmd::Single => "single",
        Cmd::Mixed => "mixed",
        Cmd::Scaling => "scaling",
        Cmd::Init => "init",
        Cmd::Frag => "frag",
        Cmd::Oom => "oom",
        Cmd::Warm => "warm",
        Cmd::Packed => "packed",
        Cmd::Collective => "collective",
        Cmd::Host => "host",
        Cmd::All => "all",
    };
    if let Err(e) = b.save(name) {
        eprintln!("veballoc-bench: could not write results: {e}");
    }
    if let Err(e) = result {
        eprintln!("veballoc-bench: {e}");
        std::process::exit(1);
    }
}
