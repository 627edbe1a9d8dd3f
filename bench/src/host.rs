//! Host-side allocation: Heap::alloc/free against cuMemAlloc and cuMemAllocAsync.

use std::time::Instant;

use veballoc::Heap;

use crate::common::{Bench, Point, Res};

impl Bench {
    /// Host-side allocation against the driver's allocators.
    pub(crate) fn host(&mut self) -> Res<()> {
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
            check(
                cust::sys::cuDeviceGetDefaultMemPool(&mut pool, self.gpu.ordinal() as cust::sys::CUdevice),
                "cuDeviceGetDefaultMemPool",
            )?;
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
                        let r = unsafe { cust::sys::cuMemAllocAsync(&mut p, b as usize, raw) };
                        check(r, "cuMemAllocAsync")?;
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
                row.push(pt.median_ms * 1e3);
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
                row.extend([pa.median_ms * 1e3, pf.median_ms * 1e3]);
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
}
