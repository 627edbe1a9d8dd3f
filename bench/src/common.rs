//! The shared core: the harness state, timing with CUDA events, write+verify, per-point
//! statistics.

use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer};
use serde::Serialize;
use veballoc::Gpu;

use crate::memory::{ChurnPoint, UtilPoint};
use crate::peers::{Peer, PeerRun};
use crate::report::{FragMap, FragPoint, OomPoint};
use crate::Cli;

/// Threads per block, as in the protocol.
pub(crate) const BLOCK: u32 = 256;
/// Smallest size of the mixed-size tests: sizes are uniform in [MIXED_MIN, max].
pub(crate) const MIXED_MIN: u64 = 16;

pub(crate) type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// One measured point.
#[derive(Serialize, Clone)]
pub(crate) struct Point {
    pub(crate) test: String,
    pub(crate) allocator: String,
    pub(crate) phase: String,
    pub(crate) size: u64,
    pub(crate) threads: u64,
    pub(crate) samples_ms: Vec<f64>,
    pub(crate) mean_ms: f64,
    pub(crate) std_ms: f64,
    pub(crate) min_ms: f64,
    pub(crate) max_ms: f64,
    pub(crate) median_ms: f64,
}

impl Point {
    pub(crate) fn new(
        test: &str,
        allocator: &str,
        phase: &str,
        size: u64,
        threads: u64,
        samples: Vec<f64>,
    ) -> Point {
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

pub(crate) struct Bench {
    pub(crate) gpu: Gpu,
    pub(crate) cli: Cli,
    pub(crate) points: Vec<Point>,
    pub(crate) frag: Vec<FragPoint>,
    pub(crate) frag_maps: Vec<FragMap>,
    pub(crate) oom: Vec<OomPoint>,
    pub(crate) util: Vec<UtilPoint>,
    pub(crate) churn: Vec<ChurnPoint>,
    /// Peer binaries to run next to veballoc (`--peers`), and what they did.
    pub(crate) peers: Vec<Peer>,
    pub(crate) peer_runs: Vec<PeerRun>,
    /// Null pointers in the last veballoc alloc round.
    pub(crate) last_nulls: u64,
}

/// How thread i's size is chosen.
#[derive(Clone, Copy)]
pub(crate) enum Sizes {
    Fixed(u64),
    /// Uniform in [16, max].
    Mixed(u64),
}

impl Sizes {
    pub(crate) fn per_thread(self, n: u64) -> Option<Vec<u32>> {
        match self {
            Sizes::Fixed(_) => None,
            Sizes::Mixed(max) => Some(
                (0..n)
                    .map(|i| (MIXED_MIN + veballoc::kernels::mix(0xbe9c ^ i) % (max - MIXED_MIN + 1)) as u32)
                    .collect(),
            ),
        }
    }
    pub(crate) fn fixed(self) -> u64 {
        match self {
            Sizes::Fixed(s) => s,
            Sizes::Mixed(_) => 0,
        }
    }
    pub(crate) fn label(self) -> u64 {
        match self {
            Sizes::Fixed(s) | Sizes::Mixed(s) => s,
        }
    }
}

/// The `n` threads' requests of a `Sizes`, drawn once on the host: what the device's sizes
/// buffer is uploaded from and what range / live is measured against.
pub(crate) struct HostSizes {
    /// Each thread's size (`Sizes::per_thread`); none for one fixed size.
    per: Option<Vec<u32>>,
    fixed: u64,
    n: u64,
}

impl HostSizes {
    pub(crate) fn new(sizes: Sizes, n: u64) -> Self {
        Self { per: sizes.per_thread(n), fixed: sizes.label(), n }
    }
    /// Thread `i`'s request in bytes.
    pub(crate) fn of(&self, i: usize) -> u64 {
        self.per.as_ref().map_or(self.fixed, |v| v[i] as u64)
    }
    /// Bytes all the threads ask for.
    pub(crate) fn live(&self) -> u64 {
        (0..self.n as usize).map(|i| self.of(i)).sum()
    }
}

impl Bench {
    /// Event time (ms) around the launches `f` enqueues.
    pub(crate) fn timed(&self, f: impl FnOnce() -> veballoc::Result<()>) -> Res<f64> {
        // The benchmark module is loaded (and JIT-compiled) on its first launch: do that
        // before the first event, not between the events.
        self.gpu.bench_module()?;
        self.timed_in(f)
    }

    /// `timed` for launches of a module that is already loaded (the collections kernels'):
    /// it does not load the benchmark module, which such a run may not have.
    pub(crate) fn timed_in(&self, f: impl FnOnce() -> veballoc::Result<()>) -> Res<f64> {
        let (a, b) = (Event::new(EventFlags::DEFAULT)?, Event::new(EventFlags::DEFAULT)?);
        a.record(self.gpu.stream())?;
        f()?;
        b.record(self.gpu.stream())?;
        b.synchronize()?;
        Ok(b.elapsed_time_f32(&a)? as f64)
    }

    /// Copies `vals` into `buf` ordered before the next launch. Launches go to veballoc's
    /// stream, which does not wait for the legacy stream's copies and memsets (those of
    /// `from_slice`, `zeroed`, `copy_from`): the context is synchronized first, so that
    /// everything written so far has landed, then the copy runs on the launches' stream.
    pub(crate) fn upload(&self, buf: &mut DeviceBuffer<u64>, vals: &[u64]) -> Res<()> {
        cust::context::CurrentContext::synchronize()?;
        // SAFETY: `vals` outlives the copy: the stream is synchronized before returning.
        unsafe { buf.async_copy_from(vals, self.gpu.stream())? };
        self.gpu.sync()?;
        Ok(())
    }

    /// Writes the pattern and checks it; fails the run on any error.
    pub(crate) fn write_verify(
        &self,
        ptrs: u64,
        n: u64,
        sizes: Sizes,
        sizes_dev: u64,
        what: &str,
    ) -> Res<()> {
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
    /// alive) and a zeroed pointer array, for `host`'s threads.
    pub(crate) fn buffers(host: &HostSizes) -> Res<(Option<DeviceBuffer<u32>>, u64, DeviceBuffer<u64>)> {
        let buf = host.per.as_deref().map(DeviceBuffer::from_slice).transpose()?;
        let dev = buf.as_ref().map_or(0, |b| b.as_device_ptr().as_raw());
        Ok((buf, dev, veballoc::zeroed_u64s(host.n as usize)?))
    }

    /// Records the alloc and free samples of one point (free only when there are any);
    /// returns their medians.
    pub(crate) fn record(
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
        let r = (a.median_ms, f.median_ms);
        self.points.push(a);
        if !f.samples_ms.is_empty() {
            self.points.push(f);
        }
        Ok(r)
    }

    pub(crate) fn wants(&self, a: &str) -> bool {
        // "bump" names the floor, as before the floors were sharded.
        self.cli.allocators.iter().any(|x| x == a || (a == "floor" && x == "bump"))
    }

    /// With `--trace`, prints `heap`'s install-path profile (its nonzero events, summed since
    /// the heap was made) after `what`.
    pub(crate) fn print_trace(&self, heap: &veballoc::Heap, what: &str) -> Res<()> {
        if self.cli.trace {
            let t: Vec<String> =
                heap.trace()?.iter().filter(|(_, v)| *v != 0).map(|(k, v)| format!("{k}={v}")).collect();
            println!("trace {what}: {}", t.join(" "));
        }
        Ok(())
    }

    /// The pointers a kernel wrote.
    pub(crate) fn host_u64s(b: &DeviceBuffer<u64>) -> Res<Vec<u64>> {
        let mut v = vec![0u64; b.len()];
        b.copy_to(&mut v[..])?;
        Ok(v)
    }

    /// Range handed out (highest end - lowest start) and the number of nulls.
    pub(crate) fn range_of(ptrs: &[u64], size: impl Fn(usize) -> u64) -> (u64, u64) {
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
}
