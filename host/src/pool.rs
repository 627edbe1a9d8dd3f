//! Host-side allocation from the heap (the role a memory-allocation manager plays for
//! `cudaMalloc`): the host takes whole 16 MiB segments from the device's segment tree (one
//! small kernel) and carves them best-fit, with split and merge; requests above
//! `SUB_MAX_BYTES` take their own run of segments. Every call is O(log n) in the host's
//! bookkeeping (two B-tree maps of free ranges and a hash map of live ones); only growth and
//! release launch a kernel. Device `free` refuses pointers in host segments (they are
//! marked `HOST` in the segment table).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cust::event::{Event, EventFlags, EventStatus};
use cust::stream::Stream;

use veballoc_kernels::SEGMENT_BYTES;

use crate::error::{Context, Error, Result};

/// Granularity and alignment of host allocations (as `cudaMalloc`'s 256 bytes).
pub const HOST_ALIGN: u64 = 256;
/// Largest request carved from shared segments; larger ones get their own segment run.
pub const SUB_MAX_BYTES: u64 = 4 << 20;
/// Wholly free pool segments a heap keeps by default (`Heap::set_release_threshold`):
/// without any, an alloc/free pair of one small buffer would claim and release a segment
/// (two kernel launches, about 100 us) every time.
pub const DEFAULT_RELEASE_THRESHOLD: u64 = 4 * SEGMENT_BYTES;

/// Where a live host allocation came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Carved from a pool segment; `bytes` rounded to HOST_ALIGN.
    Sub { bytes: u64 },
    /// A run of `k` segments starting at `seg`.
    Run { seg: u32, k: u32 },
}

/// A range freed on a stream: reusable by that stream at once, by others once `event` (recorded
/// on the stream at the free) has completed.
struct Pending {
    addr: u64,
    bytes: u64,
    stream: usize,
    event: Event,
}

/// What the pool asks its owner (the heap) to do on the device.
pub(crate) trait SegmentSource {
    /// Claims `k` contiguous segments; `None` when the heap has no such run.
    fn claim(&self, k: u64) -> Result<Option<u32>>;
    /// Returns `k` segments from `seg` to the device heap.
    fn release(&self, seg: u32, k: u32) -> Result<()>;
    /// Address of segment `seg`.
    fn segment_addr(&self, seg: u32) -> u64;
}

/// The host pool's state; the heap keeps it behind a mutex.
#[derive(Default)]
pub(crate) struct Pool {
    free_by_size: BTreeSet<(u64, u64)>,
    free_by_addr: BTreeMap<u64, u64>,
    live: HashMap<u64, Origin>,
    /// Pool segments (carved ones), by first address.
    segments: BTreeMap<u64, u32>,
    /// Freed segment runs kept for reuse (under the release threshold), by length.
    idle_runs: BTreeMap<u32, Vec<u32>>,
    pending: Vec<Pending>,
    /// Bytes of wholly free pool segments kept instead of returned to the device heap.
    pub release_threshold: u64,
    /// Bytes handed out (rounded), for statistics.
    pub bytes_live: u64,
}

/// Host pool statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Live host allocations.
    pub allocations: u64,
    /// Their bytes (rounded to 256 bytes, or whole segments for runs).
    pub bytes_live: u64,
    /// Segments the pool carves from.
    pub pool_segments: u64,
    /// Free bytes in those segments.
    pub bytes_free: u64,
    /// Ranges freed on a stream and not yet reusable by every stream.
    pub pending: u64,
    /// Segments in freed runs kept for reuse.
    pub idle_run_segments: u64,
}

fn round_up(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(HOST_ALIGN) * HOST_ALIGN
}

fn segment_of(addr: u64) -> u64 {
    addr & !(SEGMENT_BYTES - 1)
}

impl Pool {
    /// An empty pool that keeps up to `release_threshold` bytes of idle segments.
    pub fn with_threshold(release_threshold: u64) -> Self {
        Pool { release_threshold, ..Pool::default() }
    }

    fn insert_free(&mut self, addr: u64, bytes: u64) {
        self.free_by_size.insert((bytes, addr));
        self.free_by_addr.insert(addr, bytes);
    }

    fn remove_free(&mut self, addr: u64, bytes: u64) {
        self.free_by_size.remove(&(bytes, addr));
        self.free_by_addr.remove(&addr);
    }

    /// Best fit: the smallest free range that holds `bytes` (lowest address among equals).
    fn take_fit(&mut self, bytes: u64) -> Option<u64> {
        let &(size, addr) = self.free_by_size.range((bytes, 0)..).next()?;
        self.remove_free(addr, size);
        if size > bytes {
            self.insert_free(addr + bytes, size - bytes);
        }
        Some(addr)
    }

    /// Puts a range back, merged with free neighbours in the same segment; returns the
    /// merged range.
    fn merge_free(&mut self, mut addr: u64, mut bytes: u64) -> (u64, u64) {
        if let Some((&pa, &pb)) = self.free_by_addr.range(..addr).next_back() {
            if pa + pb == addr && segment_of(pa) == segment_of(addr) {
                self.remove_free(pa, pb);
                addr = pa;
                bytes += pb;
            }
        }
        if let Some(&nb) = self.free_by_addr.get(&(addr + bytes)) {
            if segment_of(addr + bytes) == segment_of(addr) {
                self.remove_free(addr + bytes, nb);
                bytes += nb;
            }
        }
        self.insert_free(addr, bytes);
        (addr, bytes)
    }

    /// Bytes of wholly free pool segments and of kept runs.
    fn idle_bytes(&self) -> u64 {
        let segs = self.segments.keys().filter(|a| self.free_by_addr.get(a) == Some(&SEGMENT_BYTES)).count();
        let runs: u64 = self.idle_runs.iter().map(|(&k, v)| k as u64 * v.len() as u64).sum();
        (segs as u64 + runs) * SEGMENT_BYTES
    }

    /// Returns wholly free pool segments to the device heap while more than `keep` bytes of
    /// them remain.
    fn release_idle(&mut self, src: &dyn SegmentSource, keep: u64) -> Result<()> {
        // Kept runs go first (largest first): they are the least likely to be asked for again.
        while self.idle_bytes() > keep {
            let Some(mut e) = self.idle_runs.last_entry() else { break };
            let (k, seg) = (*e.key(), e.get_mut().pop().expect("no empty lists are kept"));
            if e.get().is_empty() {
                e.remove();
            }
            src.release(seg, k)?;
        }
        let idle: Vec<(u64, u32)> = self
            .segments
            .iter()
            .filter(|(a, _)| self.free_by_addr.get(a) == Some(&SEGMENT_BYTES))
            .map(|(&a, &s)| (a, s))
            .collect();
        let mut kept = idle.len() as u64 * SEGMENT_BYTES;
        for (addr, seg) in idle.into_iter().rev() {
            if kept <= keep {
                break;
            }
            src.release(seg, 1)?;
            self.remove_free(addr, SEGMENT_BYTES);
            self.segments.remove(&addr);
            kept -= SEGMENT_BYTES;
        }
        Ok(())
    }

    /// Moves pending ranges whose stream has passed the free into the free lists.
    fn settle_pending(&mut self) {
        let mut i = 0;
        while i < self.pending.len() {
            if matches!(self.pending[i].event.query(), Ok(EventStatus::Ready)) {
                let p = self.pending.swap_remove(i);
                self.merge_free(p.addr, p.bytes);
            } else {
                i += 1;
            }
        }
    }

    /// Takes a range of `bytes` freed on `stream` (usable in that stream's order).
    fn take_pending_on(&mut self, stream: usize, bytes: u64) -> Option<u64> {
        let i = self
            .pending
            .iter()
            .enumerate()
            .filter(|(_, p)| p.stream == stream && p.bytes >= bytes)
            .min_by_key(|(_, p)| p.bytes)?
            .0;
        let p = &mut self.pending[i];
        let addr = p.addr;
        if p.bytes == bytes {
            self.pending.swap_remove(i);
        } else {
            p.addr += bytes;
            p.bytes -= bytes;
        }
        Some(addr)
    }

    /// Claims `k` segments from the device heap; when it has no such run, gives back what
    /// the pool keeps idle and tries once more.
    fn claim(&mut self, src: &dyn SegmentSource, k: u64) -> Result<Option<u32>> {
        match src.claim(k)? {
            Some(s) => Ok(Some(s)),
            None if self.idle_bytes() > 0 => {
                self.release_idle(src, 0)?;
                src.claim(k)
            }
            None => Ok(None),
        }
    }

    /// Allocates `bytes`; on `stream` (its address as an id) ranges freed on that stream
    /// are reusable at once.
    pub fn alloc(&mut self, src: &dyn SegmentSource, bytes: u64, stream: Option<usize>) -> Result<u64> {
        if bytes == 0 {
            return Err(Error::ZeroSizedAlloc);
        }
        if bytes > SUB_MAX_BYTES {
            let k = bytes.div_ceil(SEGMENT_BYTES);
            let kept = self.idle_runs.get_mut(&(k as u32)).and_then(|v| v.pop());
            if self.idle_runs.get(&(k as u32)).is_some_and(|v| v.is_empty()) {
                self.idle_runs.remove(&(k as u32));
            }
            let seg = match kept {
                Some(s) => s,
                None => self.claim(src, k)?.ok_or(Error::OutOfMemory { requested: bytes })?,
            };
            let addr = src.segment_addr(seg);
            self.live.insert(addr, Origin::Run { seg, k: k as u32 });
            self.bytes_live += k * SEGMENT_BYTES;
            return Ok(addr);
        }
        let bytes = round_up(bytes);
        self.settle_pending();
        let addr = match self.take_fit(bytes).or_else(|| stream.and_then(|s| self.take_pending_on(s, bytes)))
        {
            Some(a) => a,
            None => {
                let seg = self.claim(src, 1)?.ok_or(Error::OutOfMemory { requested: bytes })?;
                let base = src.segment_addr(seg);
                self.segments.insert(base, seg);
                self.insert_free(base, SEGMENT_BYTES);
                self.take_fit(bytes).expect("a fresh segment holds any sub-allocation")
            }
        };
        self.live.insert(addr, Origin::Sub { bytes });
        self.bytes_live += bytes;
        Ok(addr)
    }

    /// Frees `addr` now (no kernel may still use it), or in `stream`'s order when given.
    pub fn free(&mut self, src: &dyn SegmentSource, addr: u64, stream: Option<&Stream>) -> Result<()> {
        let origin = self.live.remove(&addr).ok_or(Error::UnknownPointer(addr))?;
        match origin {
            Origin::Run { seg, k } => {
                self.bytes_live -= k as u64 * SEGMENT_BYTES;
                if let Some(s) = stream {
                    // The run goes back to the device heap, which kernels on any stream may
                    // allocate from: wait for the stream first.
                    s.synchronize().during("cuStreamSynchronize (free_async of a segment run)")?;
                }
                if self.idle_bytes() + k as u64 * SEGMENT_BYTES <= self.release_threshold {
                    self.idle_runs.entry(k).or_default().push(seg);
                    Ok(())
                } else {
                    src.release(seg, k)
                }
            }
            Origin::Sub { bytes } => {
                self.bytes_live -= bytes;
                match stream {
                    Some(s) => {
                        let event = Event::new(EventFlags::DISABLE_TIMING).during("cuEventCreate")?;
                        event.record(s).during("cuEventRecord")?;
                        let id = s.as_inner() as usize;
                        self.pending.push(Pending { addr, bytes, stream: id, event });
                        Ok(())
                    }
                    None => {
                        let (a, b) = self.merge_free(addr, bytes);
                        if b == SEGMENT_BYTES
                            && segment_of(a) == a
                            && self.idle_bytes() > self.release_threshold
                        {
                            self.release_idle(src, self.release_threshold)?;
                        }
                        Ok(())
                    }
                }
            }
        }
    }

    /// Returns every wholly free pool segment to the device heap (after settling what the
    /// streams have passed).
    pub fn trim(&mut self, src: &dyn SegmentSource) -> Result<()> {
        self.settle_pending();
        self.release_idle(src, 0)
    }

    /// Bytes usable at a live host allocation.
    pub fn size_of(&self, addr: u64) -> Option<u64> {
        self.live.get(&addr).map(|o| match *o {
            Origin::Sub { bytes } => bytes,
            Origin::Run { k, .. } => k as u64 * SEGMENT_BYTES,
        })
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            allocations: self.live.len() as u64,
            bytes_live: self.bytes_live,
            pool_segments: self.segments.len() as u64,
            bytes_free: self.free_by_addr.values().sum(),
            pending: self.pending.len() as u64,
            idle_run_segments: self.idle_runs.iter().map(|(&k, v)| k as u64 * v.len() as u64).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A fake device heap: a vector of free flags, first fit.
    struct Fake {
        free: RefCell<Vec<bool>>,
    }

    impl SegmentSource for Fake {
        fn claim(&self, k: u64) -> Result<Option<u32>> {
            let mut f = self.free.borrow_mut();
            let k = k as usize;
            if k > f.len() {
                return Ok(None);
            }
            let Some(s) = (0..=f.len().saturating_sub(k)).find(|&s| f[s..s + k].iter().all(|&x| x)) else {
                return Ok(None);
            };
            f[s..s + k].iter_mut().for_each(|x| *x = false);
            Ok(Some(s as u32))
        }
        fn release(&self, seg: u32, k: u32) -> Result<()> {
            let mut f = self.free.borrow_mut();
            for x in &mut f[seg as usize..(seg + k) as usize] {
                assert!(!*x, "released a free segment");
                *x = true;
            }
            Ok(())
        }
        fn segment_addr(&self, seg: u32) -> u64 {
            (1 << 40) + seg as u64 * SEGMENT_BYTES
        }
    }

    #[test]
    fn best_fit_split_merge_and_release() {
        let src = Fake { free: RefCell::new(vec![true; 8]) };
        let mut pool = Pool::default();
        let a = pool.alloc(&src, 1000, None).unwrap();
        let b = pool.alloc(&src, 3000, None).unwrap();
        let c = pool.alloc(&src, 1, None).unwrap();
        assert_eq!((b - a, c - b), (1024, 3072), "rounded to 256 and packed");
        pool.free(&src, b, None).unwrap();
        // Best fit: a 2 KiB request takes the 3 KiB hole, not the segment's tail.
        let d = pool.alloc(&src, 2048, None).unwrap();
        assert_eq!(d, b);
        let big = pool.alloc(&src, 40 << 20, None).unwrap();
        assert_eq!(pool.size_of(big), Some(3 * SEGMENT_BYTES));
        assert_eq!(src.free.borrow().iter().filter(|&&x| !x).count(), 4);
        for p in [a, c, d, big] {
            pool.free(&src, p, None).unwrap();
        }
        assert!(matches!(pool.free(&src, a, None), Err(Error::UnknownPointer(_))));
        // Everything merged back into one whole segment; threshold 0 returned it.
        assert_eq!(pool.stats(), PoolStats::default());
        assert!(src.free.borrow().iter().all(|&x| x));
    }

    #[test]
    fn threshold_keeps_idle_segments_and_trim_returns_them() {
        let src = Fake { free: RefCell::new(vec![true; 8]) };
        let mut pool = Pool { release_threshold: 2 * SEGMENT_BYTES, ..Pool::default() };
        let ps: Vec<u64> = (0..3).map(|_| pool.alloc(&src, SUB_MAX_BYTES, None).unwrap()).collect();
        let more: Vec<u64> = (0..6).map(|_| pool.alloc(&src, SUB_MAX_BYTES, None).unwrap()).collect();
        assert_eq!(pool.stats().pool_segments, 3, "4 MiB requests, 4 per segment");
        for p in ps.into_iter().chain(more) {
            pool.free(&src, p, None).unwrap();
        }
        assert_eq!(pool.stats().pool_segments, 2, "two idle segments kept under the threshold");
        pool.trim(&src).unwrap();
        assert_eq!(pool.stats().pool_segments, 0);
        assert!(src.free.borrow().iter().all(|&x| x));
    }

    #[test]
    fn freed_runs_under_the_threshold_are_reused() {
        let src = Fake { free: RefCell::new(vec![true; 8]) };
        let mut pool = Pool::with_threshold(4 * SEGMENT_BYTES);
        let a = pool.alloc(&src, 40 << 20, None).unwrap();
        pool.free(&src, a, None).unwrap();
        assert_eq!(pool.stats().idle_run_segments, 3, "kept, not released");
        assert_eq!(pool.alloc(&src, 33 << 20, None).unwrap(), a, "the kept run comes back");
        pool.free(&src, a, None).unwrap();
        let big = pool.alloc(&src, 5 * SEGMENT_BYTES, None).unwrap();
        pool.free(&src, big, None).unwrap();
        assert_eq!(pool.stats().idle_run_segments, 3, "over the threshold: released");
        pool.trim(&src).unwrap();
        assert_eq!(pool.stats(), PoolStats::default());
        assert!(src.free.borrow().iter().all(|&x| x));
    }

    #[test]
    fn out_of_memory_and_zero_are_errors() {
        let src = Fake { free: RefCell::new(vec![true; 2]) };
        let mut pool = Pool::default();
        assert!(matches!(pool.alloc(&src, 0, None), Err(Error::ZeroSizedAlloc)));
        assert!(matches!(pool.alloc(&src, 3 * SEGMENT_BYTES, None), Err(Error::OutOfMemory { .. })));
        let a = pool.alloc(&src, 2 * SEGMENT_BYTES, None).unwrap();
        assert!(matches!(pool.alloc(&src, 1, None), Err(Error::OutOfMemory { .. })));
        pool.free(&src, a, None).unwrap();
        assert!(pool.alloc(&src, 1, None).is_ok());
        // Idle memory the pool keeps is given back when the heap runs out.
        let mut keeper = Pool::with_threshold(2 * SEGMENT_BYTES);
        let src2 = Fake { free: RefCell::new(vec![true; 2]) };
        let r = keeper.alloc(&src2, 2 * SEGMENT_BYTES, None).unwrap();
        keeper.free(&src2, r, None).unwrap();
        assert_eq!(keeper.stats().idle_run_segments, 2);
        let one = keeper.alloc(&src2, SUB_MAX_BYTES + 1, None).unwrap();
        assert_eq!(keeper.stats().idle_run_segments, 0, "released to make room");
        keeper.free(&src2, one, None).unwrap();
    }

    #[test]
    fn many_random_allocations_never_overlap() {
        use rand::{Rng, SeedableRng};
        let src = Fake { free: RefCell::new(vec![true; 64]) };
        let mut pool = Pool::default();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut live: Vec<(u64, u64)> = Vec::new();
        for step in 0..20_000 {
            if live.is_empty() || rng.gen_bool(0.55) {
                let bytes =
                    if rng.gen_bool(0.01) { rng.gen_range(1..40 << 20) } else { rng.gen_range(1..70_000) };
                if let Ok(p) = pool.alloc(&src, bytes, None) {
                    live.push((p, pool.size_of(p).unwrap()));
                }
            } else {
                let (p, _) = live.swap_remove(rng.gen_range(0..live.len()));
                pool.free(&src, p, None).unwrap();
            }
            if step % 1000 == 0 {
                let mut v = live.clone();
                v.sort();
                assert!(v.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "overlap at step {step}");
            }
        }
        for (p, _) in live {
            pool.free(&src, p, None).unwrap();
        }
        pool.trim(&src).unwrap();
        assert!(src.free.borrow().iter().all(|&x| x));
    }
}
