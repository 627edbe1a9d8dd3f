//! Single sizes and mixed sizes (the protocol's main tests), and the warm-heap variant.

use std::io::Write;

use veballoc::Heap;

use crate::common::{Bench, HostSizes, Res, Sizes, BLOCK};

impl Bench {
    pub(crate) fn run_veballoc(
        &mut self,
        test: &str,
        sizes: Sizes,
        n: u64,
        iters: u32,
        verify: bool,
    ) -> Res<(f64, f64)> {
        let (_sizes_buf, sizes_dev, ptrs) = Self::buffers(&HostSizes::new(sizes, n))?;
        let p = ptrs.as_device_ptr().as_raw();
        let (mut ta, mut tf) = (Vec::new(), Vec::new());
        self.last_nulls = 0;
        // One more iteration than asked: the first is a warm-up and is dropped.
        for it in 0..=iters {
            let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
            let (arg, size) = (heap.arg(), sizes.fixed());
            // SAFETY: matches vb_malloc.
            ta.push(self.timed(|| unsafe {
                self.gpu.launch("vb_malloc", n, BLOCK, veballoc::kernel_args![arg, p, n, size, sizes_dev])
            })?);
            self.print_trace(&heap, &format!("{test} {} n={n}", sizes.label()))?;
            if verify {
                self.write_verify(p, n, sizes, sizes_dev, "veballoc")?;
            } else {
                let nulls = Self::host_u64s(&ptrs)?.iter().filter(|&&x| x == 0).count() as u64;
                if it > 0 {
                    // The most of any recorded iteration, not the last one's.
                    self.last_nulls = self.last_nulls.max(nulls);
                }
            }
            // SAFETY: matches vb_free.
            tf.push(self.timed(|| unsafe {
                self.gpu.launch("vb_free", n, BLOCK, veballoc::kernel_args![arg, p, n])
            })?);
            self.print_trace(&heap, &format!("(after free) {test} {} n={n}", sizes.label()))?;
            heap.destroy()?;
        }
        let (ta, tf) = (ta[1..].to_vec(), tf[1..].to_vec());
        self.record(test, "veballoc", sizes.label(), n, ta, tf)
    }

    pub(crate) fn run_cuda(
        &mut self,
        test: &str,
        sizes: Sizes,
        n: u64,
        iters: u32,
        verify: bool,
    ) -> Res<(f64, f64)> {
        let (_sizes_buf, sizes_dev, ptrs) = Self::buffers(&HostSizes::new(sizes, n))?;
        let p = ptrs.as_device_ptr().as_raw();
        let (mut ta, mut tf) = (Vec::new(), Vec::new());
        // One more iteration than asked, as for veballoc: the first is a warm-up and is dropped.
        for _ in 0..=iters {
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
        self.record(test, "cuda", sizes.label(), n, ta[1..].to_vec(), tf[1..].to_vec())
    }

    /// Single sizes (`mixed` false) or mixed sizes in [16, max] (`mixed` true): veballoc,
    /// the floors, CUDA malloc and the peers at each point, medians and ratios printed.
    pub(crate) fn sizes_test(&mut self, test: &str, list: Vec<u64>, mixed: bool) -> Res<()> {
        let n = self.cli.threads;
        let mut arena = if self.wants("floor") { Some(self.floor_arena()?) } else { None };
        println!(
            "\n{test}: {n} threads, {} iterations after a warm-up, {} GiB heap; medians (ms); \
             x floor = veballoc / floor, vs P = P / veballoc (above 1: veballoc faster)",
            self.cli.iters, self.cli.heap_gib
        );
        let mut head = format!(
            "{:>7} | {:>9} {:>9} | {:>9} {:>9} | {:>8} {:>8} | {:>10} {:>10}",
            "size",
            "vb alloc",
            "vb free",
            "fl alloc",
            "fl free",
            "x fl a",
            "x fl f",
            "cuda alloc",
            "cuda free"
        );
        for p in &self.peers {
            head += &format!(" | {:>18} {:>9} {:>9}", format!("{} a / f", p.label), "vs a", "vs f");
        }
        println!("{head}");
        for s in list {
            let sizes = if mixed { Sizes::Mixed(s) } else { Sizes::Fixed(s) };
            eprint!("  [{test} {s}] ...\r");
            let vb = if self.wants("veballoc") {
                Some(self.run_veballoc(test, sizes, n, self.cli.iters, true)?)
            } else {
                None
            };
            let floor = match arena.as_mut() {
                Some(a) => Some(self.run_floor(a, test, sizes, n, self.cli.iters, true)?),
                None => None,
            };
            let cuda = if self.wants("cuda") && self.cli.cuda_sizes.contains(&s) {
                Some(self.run_cuda(test, sizes, n, self.cli.cuda_iters, true)?)
            } else {
                None
            };
            let peers = self.peers_at(test, mixed, s, n)?;
            let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
            let mut line = format!(
                "{:>7} | {:>9} {:>9} | {:>9} {:>9} | {:>8} {:>8} | {:>10} {:>10}",
                if mixed { format!("≤{s}") } else { s.to_string() },
                f(vb.map(|v| v.0)),
                f(vb.map(|v| v.1)),
                f(floor.map(|v| v.0)),
                f(floor.map(|v| v.1)),
                ratio_text(vb.map(|v| v.0), floor.map(|v| v.0)),
                ratio_text(vb.map(|v| v.1), floor.map(|v| v.1)),
                cuda.map_or("-".into(), |c| format!("{:.2}", c.0)),
                cuda.map_or("-".into(), |c| format!("{:.2}", c.1)),
            );
            for p in &self.peers {
                let r = peers.iter().find(|r| r.0 == p.label);
                line += &format!(
                    " | {:>18} {:>9} {:>9}",
                    r.map_or("-".into(), |r| format!("{:.4} / {:.4}", r.1, r.2)),
                    ratio_text(r.map(|r| r.1), vb.map(|v| v.0)),
                    ratio_text(r.map(|r| r.2), vb.map(|v| v.1)),
                );
            }
            println!("{line}");
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

/// `a / b` as "1.23x", or "-" when either is missing or b is not positive.
pub(crate) fn ratio_text(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::ratio_text;

    #[test]
    fn ratio_text_divides_and_shows_gaps() {
        assert_eq!(ratio_text(Some(0.3), Some(0.1)), "3.00x");
        assert_eq!(ratio_text(Some(0.1), Some(0.4)), "0.25x");
        assert_eq!(ratio_text(None, Some(0.1)), "-");
        assert_eq!(ratio_text(Some(0.1), Some(0.0)), "-");
        assert_eq!(ratio_text(Some(f64::NAN), Some(1.0)), "-");
    }
}
