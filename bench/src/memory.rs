//! How much of the heap is usable: fragmentation (range handed out / live bytes) and out of memory.

use cust::memory::DeviceBuffer;
use veballoc::Heap;

use crate::common::{Bench, Res, Sizes, BLOCK};
use crate::report::{FragPoint, OomPoint};

impl Bench {
    pub(crate) fn frag(&mut self, singles: Vec<u64>) -> Res<()> {
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

    pub(crate) fn oom(&mut self) -> Res<()> {
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
}
