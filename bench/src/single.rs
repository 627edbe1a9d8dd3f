//! Single sizes and mixed sizes (the protocol's main tests), and the warm-heap variant.

use std::io::Write;

use cust::memory::{CopyDestination, DeviceBuffer};
use veballoc::Heap;

use crate::common::{Bench, Res, Sizes, BLOCK};

/// Gallatin's published means on an H100 (shared/anchors.md): (size, alloc ms, free ms).
pub(crate) const GALLATIN_H100: [(u64, f64, f64); 9] = [
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
pub(crate) const GALLATIN_MIXED_H100: [(u64, f64, f64); 3] =
    [(64, 0.292, 0.042), (512, 1.106, 0.051), (4096, 1.996, 0.056)];

impl Bench {
    pub(crate) fn run_veballoc(
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

    pub(crate) fn run_bump(
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

    pub(crate) fn run_cuda(
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

    pub(crate) fn sizes_test(&mut self, test: &str, list: Vec<u64>, mixed: bool) -> Res<()> {
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

    pub(crate) fn warm(&mut self, list: Vec<u64>) -> Res<()> {
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
}
