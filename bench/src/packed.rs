//! Mixed-size coalescing (malloc_packed) and the collective calls (malloc_warp, malloc_block),
//! with write and read passes over the buffers.

use cust::memory::CopyDestination;
use veballoc::Heap;

use crate::common::{Bench, HostSizes, Point, Res, Sizes, BLOCK};

impl Bench {
    /// Times alloc, a write pass and a read pass over every buffer, and free, for one
    /// allocator variant (`kernel`: vb_malloc, vb_malloc_packed, vb_malloc_warp,
    /// vb_malloc_cta or cuda_malloc), fresh heap per iteration; records four phases. Also
    /// returns the lowest and highest range / live of the iterations (warm-up included: every
    /// iteration's heap is fresh, as `frag`'s one round).
    pub(crate) fn run_variant(
        &mut self,
        test: &str,
        label: &str,
        kernel: &str,
        sizes: Sizes,
        n: u64,
        iters: u32,
    ) -> Res<([f64; 4], (f64, f64))> {
        let host = HostSizes::new(sizes, n);
        let (_sizes_buf, sizes_dev, ptrs) = Self::buffers(&host)?;
        let live = host.live();
        let mut ratios = (f64::INFINITY, 0.0f64);
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
            if let Some(h) = &heap {
                self.print_trace(h, &format!("{test} {label} {} n={n}", sizes.label()))?;
            }
            let mut h = [0u64; 3];
            errs.copy_to(&mut h[..])?;
            if h != [0, 0, 0] {
                return Err(
                    format!("{label}: verification failed: {h:?} (bad words, nulls, misaligned)").into()
                );
            }
            let (range, _) = Self::range_of(&Self::host_u64s(&ptrs)?, |i| host.of(i));
            let ratio = range as f64 / live.max(1) as f64;
            ratios = (ratios.0.min(ratio), ratios.1.max(ratio));
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
        let mut medians = [0.0; 4];
        for (i, (phase, samples)) in ["alloc", "write", "read", "free"].into_iter().zip(t).enumerate() {
            let pt = Point::new(test, label, phase, sizes.label(), n, samples);
            medians[i] = pt.median_ms;
            self.points.push(pt);
        }
        Ok((medians, ratios))
    }

    /// Mixed-size coalescing: per-class malloc, malloc_packed and CUDA malloc at sizes drawn
    /// in [16, max], with the access passes.
    pub(crate) fn packed(&mut self, maxima: Vec<u64>) -> Res<()> {
        let n = self.cli.threads;
        println!(
            "
packed: {n} threads, sizes in [16, max], {} iterations; ms for alloc, write pass, read pass, free",
            self.cli.iters
        );
        println!("{}", row_head("max", "allocator"));
        for max in maxima {
            let mut variants = vec![("veballoc", "vb_malloc"), ("veballoc-packed", "vb_malloc_packed")];
            if self.wants("cuda") && self.cli.cuda_sizes.contains(&max) {
                variants.push(("cuda", "cuda_malloc"));
            }
            for (label, kernel) in variants {
                eprint!("  [packed {max} {label}] ...\r");
                let iters = if kernel == "cuda_malloc" { self.cli.cuda_iters } else { self.cli.iters };
                let (m, ratios) = self.run_variant("packed", label, kernel, Sizes::Mixed(max), n, iters)?;
                println!("{}", row(max, label, m, ratios));
            }
        }
        Ok(())
    }

    /// Collective calls: malloc vs malloc_warp vs malloc_block, one size per launch.
    pub(crate) fn collective(&mut self, list: Vec<u64>) -> Res<()> {
        let n = self.cli.threads;
        println!(
            "
collective: {n} threads, {} iterations; ms for alloc, write pass, read pass, free",
            self.cli.iters
        );
        println!("{}", row_head("size", "call"));
        for size in list {
            for (label, kernel) in [
                ("malloc", "vb_malloc"),
                ("malloc_warp", "vb_malloc_warp"),
                ("malloc_block", "vb_malloc_cta"),
            ] {
                eprint!("  [collective {size} {label}] ...\r");
                let (m, ratios) =
                    self.run_variant("collective", label, kernel, Sizes::Fixed(size), n, self.cli.iters)?;
                println!("{}", row(size, label, m, ratios));
            }
        }
        Ok(())
    }
}

/// The header of `run_variant`'s table: the point's column, the variant's, the four phases'
/// medians and range / live.
fn row_head(key: &str, variant: &str) -> String {
    format!(
        "{key:>6} {variant:>16} | {:>9} {:>9} {:>9} {:>9} | {:>13}",
        "alloc", "write", "read", "free", "range / live"
    )
}

/// One line of that table: `run_variant`'s medians (ms) and its lowest and highest range / live.
fn row(key: u64, variant: &str, m: [f64; 4], (lo, hi): (f64, f64)) -> String {
    format!(
        "{key:>6} {variant:>16} | {:>9.4} {:>9.4} {:>9.4} {:>9.4} | {lo:>5.3}-{hi:>5.3}x",
        m[0], m[1], m[2], m[3]
    )
}
