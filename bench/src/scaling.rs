//! Scaling with the thread count, and heap creation time.

use std::time::Instant;

use veballoc::Heap;

use crate::common::{Bench, Point, Res, Sizes};
use crate::single::ratio_text;

/// The scaling test's sizes and the largest log2 thread count at each (8192 B stops at 2^18:
/// 2^18 requests already fill 2 GiB).
const SCALING: [(u64, u32); 4] = [(16, 20), (64, 20), (512, 20), (8192, 18)];

impl Bench {
    /// Threads 2^0..2^20 (2^18 at 8192 B) at 16, 64, 512 and 8192 B: veballoc, the floors,
    /// then each peer over the same thread counts; medians and ratios printed.
    pub(crate) fn scaling(&mut self) -> Res<()> {
        let mut arena = self.floor_arena()?;
        println!(
            "\nscaling: {} iterations after a warm-up, medians (ms); nulls: requests the heap could not \
             serve; x floor = veballoc / floor",
            self.cli.iters
        );
        println!(
            "{:>6} {:>9} | {:>10} {:>10} {:>8} | {:>9} {:>9} | {:>8} {:>8}",
            "size", "threads", "vb alloc", "vb free", "nulls", "fl alloc", "fl free", "x fl a", "x fl f"
        );
        for (size, max_log) in SCALING {
            let mut vbs = Vec::new();
            for l in 0..=max_log {
                let n = 1u64 << l;
                eprint!("  [scaling {size} B, 2^{l}] ...\r");
                let vb = self.run_veballoc("scaling", Sizes::Fixed(size), n, self.cli.iters, false)?;
                let nulls = self.last_nulls;
                if nulls > 0 {
                    eprintln!("warning: scaling {size} B x {n}: veballoc returned {nulls} nulls (its times cover fewer allocations)");
                }
                let fl =
                    self.run_floor(&mut arena, "scaling", Sizes::Fixed(size), n, self.cli.iters, false)?;
                println!(
                    "{size:>6} {n:>9} | {:>10.4} {:>10.4} {nulls:>8} | {:>9.4} {:>9.4} | {:>8} {:>8}",
                    vb.0,
                    vb.1,
                    fl.0,
                    fl.1,
                    ratio_text(Some(vb.0), Some(fl.0)),
                    ratio_text(Some(vb.1), Some(fl.1))
                );
                vbs.push((n, vb));
            }
            let peers = self.peers_scaling("scaling", size, 0, max_log)?;
            for p in self.peers.clone() {
                let rows: Vec<_> = peers.iter().filter(|r| r.0 == p.label).collect();
                if rows.is_empty() {
                    continue;
                }
                println!(
                    "{:>6} {:>9} | {:>10} {:>10} | {:>9} {:>9}   (vs: {} / veballoc, above 1: veballoc faster)",
                    "size",
                    "threads",
                    format!("{} a", p.label),
                    format!("{} f", p.label),
                    "vs a",
                    "vs f",
                    p.label
                );
                for r in rows {
                    let vb = vbs.iter().find(|v| v.0 == r.1).map(|v| v.1);
                    println!(
                        "{size:>6} {:>9} | {:>10.4} {:>10.4} | {:>9} {:>9}",
                        r.1,
                        r.2,
                        r.3,
                        ratio_text(Some(r.2), vb.map(|v| v.0)),
                        ratio_text(Some(r.3), vb.map(|v| v.1))
                    );
                }
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
        println!("\ninit: {} GiB heap ready (cuMemAlloc + metadata memset + init kernel + sync, and the boot kernel + sync unless VEBALLOC_BOOT=0): mean {:.3} ms, median {:.3} ms, min {:.3} ms", self.cli.heap_gib, p.mean_ms, p.median_ms, p.min_ms);
        self.points.push(p);
        Ok(())
    }
}
