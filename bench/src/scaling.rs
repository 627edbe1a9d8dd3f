//! Scaling with the thread count, and heap creation time.

use std::time::Instant;

use cust::memory::DeviceBuffer;
use veballoc::Heap;

use crate::common::{Bench, Point, Res, Sizes};

impl Bench {
    pub(crate) fn scaling(&mut self) -> Res<()> {
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

    pub(crate) fn init(&mut self) -> Res<()> {
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
}
