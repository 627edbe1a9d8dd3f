//! Host-side allocation from the heap (the role a memory-allocation manager plays for
//! `cudaMalloc`): the host takes whole 16 MiB segments from the device's segment tree (one
//! small kernel) and carves them best-fit, with split and merge; requests above
//! `SUB_MAX_BYTES` take their own run of segments. Every call is O(log n) in the host's
//! bookkeeping (two B-tree maps of free ranges and a hash map of live ones); only growth and
//! release launch a kernel. Device `free` refuses pointers in host segments (they are
//! marked `HOST` in the segment table).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use veballoc_kernels::SEGMENT_BYTES;

use crate::error::{Error, Result};

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

/// A stream, named by its raw handle. The pool keeps it only as a key; the source turns it
/// back into a stream only during the call that passed it (while the caller holds it live).
/// A destroyed stream's handle may come back for a new stream: nothing here relies on the
/// two being one (a reuse waits on the free's mark, see `Pool::take_pending_on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamId(pub usize);

/// A range freed on a stream: reusable by other work once `mark` (recorded on the stream at
/// the free) has passed, or earlier by work that waits for `mark` on the device.
struct Pending<M> {
    addr: u64,
    bytes: u64,
    stream: StreamId,
    mark: M,
}

/// What the pool asks its owner (the heap) to do on the device.
pub(crate) trait SegmentSource {
    /// A point in a stream's work (a CUDA event).
    type Mark;
    /// Claims `k` contiguous segments; `None` when the heap has no such run.
    fn claim(&self, k: u64) -> Result<Option<u32>>;
    /// Returns `k` segments from `seg` to the device heap.
    fn release(&self, seg: u32, k: u32) -> Result<()>;
    /// Address of segment `seg`.
    fn segment_addr(&self, seg: u32) -> u64;
    /// Marks the point `stream` has reached with the work queued on it so far.
    fn record(&self, stream: StreamId) -> Result<Self::Mark>;
    /// Whether the work before `mark` has run.
    fn passed(&self, mark: &Self::Mark) -> bool;
    /// Makes the work queued on `stream` from now on wait for `mark`.
    fn wait(&self, stream: StreamId, mark: &Self::Mark) -> Result<()>;
    /// Waits on the host for the work queued on `stream`.
    fn sync(&self, stream: StreamId) -> Result<()>;
}

/// The host pool's state; the heap keeps it behind a mutex. `M` is the source's mark type.
pub(crate) struct Pool<M> {
    free_by_size: BTreeSet<(u64, u64)>,
    free_by_addr: BTreeMap<u64, u64>,
    live: HashMap<u64, Origin>,
    /// Pool segments (carved ones), by first address. Free ranges never span two of them.
    segments: BTreeMap<u64, u32>,
    /// Freed segment runs kept for reuse (under the release threshold), by length.
    idle_runs: BTreeMap<u32, Vec<u32>>,
    pending: Vec<Pending<M>>,
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

impl<M> Pool<M> {
    /// An empty pool that keeps up to `release_threshold` bytes of idle segments.
    pub fn with_threshold(release_threshold: u64) -> Self {
        Pool {
            free_by_size: BTreeSet::new(),
            free_by_addr: BTreeMap::new(),
            live: HashMap::new(),
            segments: BTreeMap::new(),
            idle_runs: BTreeMap::new(),
            pending: Vec::new(),
            release_threshold,
            bytes_live: 0,
        }
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

    /// Puts a range back, merged with free neighbours in the same segment (two ranges that
    /// touch at a segment's first address belong to different segments: the pool knows its
    /// segments' addresses and assumes nothing about their alignment); returns the merged
    /// range.
    fn merge_free(&mut self, mut addr: u64, mut bytes: u64) -> (u64, u64) {
        if let Some((&pa, &pb)) = self.free_by_addr.range(..addr).next_back() {
            if pa + pb == addr && !self.segments.contains_key(&addr) {
                self.remove_free(pa, pb);
                addr = pa;
                bytes += pb;
            }
        }
        let end = addr + bytes;
        if let Some(&nb) = self.free_by_addr.get(&end) {
            if !self.segments.contains_key(&end) {
                self.remove_free(end, nb);
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

    /// Keeps a freed run of `k` segments from `seg` for reuse.
    fn keep_run(&mut self, seg: u32, k: u32) {
        self.idle_runs.entry(k).or_default().push(seg);
    }

    /// Returns wholly free pool segments to the device heap while more than `keep` bytes of
    /// them remain. A failed release leaves the pool as it was for that segment (a later
    /// trim tries again).
    fn release_idle<S: SegmentSource<Mark = M>>(&mut self, src: &S, keep: u64) -> Result<()> {
        // Kept runs go first (largest first): they are the least likely to be asked for again.
        while self.idle_bytes() > keep {
            let Some((&k, runs)) = self.idle_runs.last_key_value() else { break };
            let seg = *runs.last().expect("no empty lists are kept");
            src.release(seg, k)?;
            let mut e = self.idle_runs.last_entry().expect("the run released above");
            e.get_mut().pop();
            if e.get().is_empty() {
                e.remove();
            }
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

    /// Moves pending ranges whose stream has passed the free into the free lists, and
    /// returns wholly free segments over the release threshold (as a synchronous free does).
    fn settle_pending<S: SegmentSource<Mark = M>>(&mut self, src: &S) -> Result<()> {
        let before = self.pending.len();
        let mut i = 0;
        while i < self.pending.len() {
            if src.passed(&self.pending[i].mark) {
                let p = self.pending.swap_remove(i);
                self.merge_free(p.addr, p.bytes);
            } else {
                i += 1;
            }
        }
        if self.pending.len() < before && self.idle_bytes() > self.release_threshold {
            self.release_idle(src, self.release_threshold)?;
        }
        Ok(())
    }

    /// Takes `bytes` of a range freed on `stream` whose free may not have run yet, after
    /// making `stream`'s later work wait for that free's mark: the order does not rest on
    /// the stream being the one that freed it (a new stream may reuse a destroyed one's
    /// handle). Only ranges freed on the same stream are taken, so that streams do not
    /// start waiting for each other. `Ok(None)` when there is none.
    fn take_pending_on<S: SegmentSource<Mark = M>>(
        &mut self,
        src: &S,
        stream: StreamId,
        bytes: u64,
    ) -> Result<Option<u64>> {
        let Some(i) = self
            .pending
            .iter()
            .enumerate()
            .filter(|(_, p)| p.stream == stream && p.bytes >= bytes)
            .min_by_key(|(_, p)| p.bytes)
            .map(|(i, _)| i)
        else {
            return Ok(None);
        };
        src.wait(stream, &self.pending[i].mark)?;
        let p = &mut self.pending[i];
        let addr = p.addr;
        if p.bytes == bytes {
            self.pending.swap_remove(i);
        } else {
            p.addr += bytes;
            p.bytes -= bytes;
        }
        Ok(Some(addr))
    }

    /// Claims `k` segments from the device heap; when it has no such run, gives back what
    /// the pool keeps idle and tries once more.
    fn claim<S: SegmentSource<Mark = M>>(&mut self, src: &S, k: u64) -> Result<Option<u32>> {
        match src.claim(k)? {
            Some(s) => Ok(Some(s)),
            None if self.idle_bytes() > 0 => {
                self.release_idle(src, 0)?;
                src.claim(k)
            }
            None => Ok(None),
        }
    }

    /// Allocates `bytes`. With `stream`, ranges freed on that stream whose free has not run
    /// yet are reusable too: the stream's later work waits for the free (see
    /// `take_pending_on`), but the host must wait for the stream before touching them.
    pub fn alloc<S: SegmentSource<Mark = M>>(
        &mut self,
        src: &S,
        bytes: u64,
        stream: Option<StreamId>,
    ) -> Result<u64> {
        if bytes == 0 {
            return Err(Error::ZeroSizedAlloc);
        }
        self.settle_pending(src)?;
        if bytes > SUB_MAX_BYTES {
            // More segments than a u32 counts is more than any heap has.
            let k = u32::try_from(bytes.div_ceil(SEGMENT_BYTES))
                .map_err(|_| Error::OutOfMemory { requested: bytes })?;
            let kept = self.idle_runs.get_mut(&k).and_then(|v| v.pop());
            if self.idle_runs.get(&k).is_some_and(|v| v.is_empty()) {
                self.idle_runs.remove(&k);
            }
            let seg = match kept {
                Some(s) => s,
                None => self.claim(src, k as u64)?.ok_or(Error::OutOfMemory { requested: bytes })?,
            };
            let addr = src.segment_addr(seg);
            self.live.insert(addr, Origin::Run { seg, k });
            self.bytes_live += k as u64 * SEGMENT_BYTES;
            return Ok(addr);
        }
        let bytes = round_up(bytes);
        let fit = match self.take_fit(bytes) {
            Some(a) => Some(a),
            None => match stream {
                Some(s) => self.take_pending_on(src, s, bytes)?,
                None => None,
            },
        };
        let addr = match fit {
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
    /// When a step that must come first fails (the stream sync before a run goes back, the
    /// mark of a stream-ordered free), the allocation stays live and the error comes back;
    /// when giving memory back to the device heap fails, the allocation is freed into the
    /// pool (which keeps the memory; a later trim tries again) and the error comes back.
    pub fn free<S: SegmentSource<Mark = M>>(
        &mut self,
        src: &S,
        addr: u64,
        stream: Option<StreamId>,
    ) -> Result<()> {
        let origin = *self.live.get(&addr).ok_or(Error::UnknownPointer(addr))?;
        match origin {
            Origin::Run { seg, k } => {
                if let Some(s) = stream {
                    // The run goes back to the device heap, which kernels on any stream may
                    // allocate from: wait for the stream first.
                    src.sync(s)?;
                }
                self.live.remove(&addr);
                self.bytes_live -= k as u64 * SEGMENT_BYTES;
                if self.idle_bytes() + k as u64 * SEGMENT_BYTES <= self.release_threshold {
                    self.keep_run(seg, k);
                    Ok(())
                } else {
                    src.release(seg, k).inspect_err(|_| self.keep_run(seg, k))
                }
            }
            Origin::Sub { bytes } => match stream {
                Some(s) => {
                    let mark = src.record(s)?;
                    self.live.remove(&addr);
                    self.bytes_live -= bytes;
                    self.pending.push(Pending { addr, bytes, stream: s, mark });
                    Ok(())
                }
                None => {
                    self.live.remove(&addr);
                    self.bytes_live -= bytes;
                    let (a, b) = self.merge_free(addr, bytes);
                    if b == SEGMENT_BYTES
                        && self.segments.contains_key(&a)
                        && self.idle_bytes() > self.release_threshold
                    {
                        self.release_idle(src, self.release_threshold)?;
                    }
                    Ok(())
                }
            },
        }
    }

    /// Returns every wholly free pool segment to the device heap (after settling what the
    /// streams have passed).
    pub fn trim<S: SegmentSource<Mark = M>>(&mut self, src: &S) -> Result<()> {
        self.settle_pending(src)?;
        self.release_idle(src, 0)
    }

    /// Drops the marks of pending frees (the heap, going away, drops them with its context
    /// current).
    pub fn drop_pending(&mut self) {
        self.pending.clear();
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
    use std::cell::{Cell, RefCell};

    /// Where a fake heap's segment 0 lies: 16 MiB-aligned, or 2 MiB past a 16 MiB boundary
    /// (as `cuMemAlloc` may place it).
    const ALIGNED_BASE: u64 = 1 << 40;
    const UNALIGNED_BASE: u64 = (1 << 40) + (2 << 20);

    /// Which of the fake's calls fail (with a driver error) while set.
    #[derive(Clone, Copy, Debug, Default)]
    struct Failing {
        release: bool,
        record: bool,
        wait: bool,
        sync: bool,
    }

    fn injected(call: &'static str) -> Error {
        Error::Driver { call, code: 999 }
    }

    /// A fake device heap: a vector of free flags, first fit; marks are numbers that pass
    /// when the test says so; waits are logged.
    struct Fake {
        free: RefCell<Vec<bool>>,
        base: u64,
        fail: Cell<Failing>,
        next_mark: Cell<u64>,
        passed: RefCell<Vec<u64>>,
        waits: RefCell<Vec<(StreamId, u64)>>,
    }

    impl Fake {
        fn new(segments: usize) -> Self {
            Self::at(segments, ALIGNED_BASE)
        }

        fn at(segments: usize, base: u64) -> Self {
            Fake {
                free: RefCell::new(vec![true; segments]),
                base,
                fail: Cell::new(Failing::default()),
                next_mark: Cell::new(0),
                passed: RefCell::new(Vec::new()),
                waits: RefCell::new(Vec::new()),
            }
        }

        fn all_free(&self) -> bool {
            self.free.borrow().iter().all(|&x| x)
        }

        fn claimed(&self) -> usize {
            self.free.borrow().iter().filter(|&&x| !x).count()
        }
    }

    impl SegmentSource for Fake {
        type Mark = u64;

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
            if self.fail.get().release {
                return Err(injected("release"));
            }
            let mut f = self.free.borrow_mut();
            for x in &mut f[seg as usize..(seg + k) as usize] {
                assert!(!*x, "released a free segment");
                *x = true;
            }
            Ok(())
        }
        fn segment_addr(&self, seg: u32) -> u64 {
            self.base + seg as u64 * SEGMENT_BYTES
        }
        fn record(&self, _stream: StreamId) -> Result<u64> {
            if self.fail.get().record {
                return Err(injected("record"));
            }
            self.next_mark.set(self.next_mark.get() + 1);
            Ok(self.next_mark.get())
        }
        fn passed(&self, mark: &u64) -> bool {
            self.passed.borrow().contains(mark)
        }
        fn wait(&self, stream: StreamId, mark: &u64) -> Result<()> {
            if self.fail.get().wait {
                return Err(injected("wait"));
            }
            self.waits.borrow_mut().push((stream, *mark));
            Ok(())
        }
        fn sync(&self, _stream: StreamId) -> Result<()> {
            if self.fail.get().sync {
                return Err(injected("sync"));
            }
            Ok(())
        }
    }

    #[test]
    fn best_fit_split_merge_and_release() {
        let src = Fake::new(8);
        let mut pool = Pool::with_threshold(0);
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
        assert_eq!(src.claimed(), 4);
        for p in [a, c, d, big] {
            pool.free(&src, p, None).unwrap();
        }
        assert!(matches!(pool.free(&src, a, None), Err(Error::UnknownPointer(_))));
        // Everything merged back into one whole segment; threshold 0 returned it.
        assert_eq!(pool.stats(), PoolStats::default());
        assert!(src.all_free());
    }

    #[test]
    fn threshold_keeps_idle_segments_and_trim_returns_them() {
        let src = Fake::new(8);
        let mut pool = Pool::with_threshold(2 * SEGMENT_BYTES);
        let ps: Vec<u64> = (0..3).map(|_| pool.alloc(&src, SUB_MAX_BYTES, None).unwrap()).collect();
        let more: Vec<u64> = (0..6).map(|_| pool.alloc(&src, SUB_MAX_BYTES, None).unwrap()).collect();
        assert_eq!(pool.stats().pool_segments, 3, "4 MiB requests, 4 per segment");
        for p in ps.into_iter().chain(more) {
            pool.free(&src, p, None).unwrap();
        }
        assert_eq!(pool.stats().pool_segments, 2, "two idle segments kept under the threshold");
        pool.trim(&src).unwrap();
        assert_eq!(pool.stats().pool_segments, 0);
        assert!(src.all_free());
    }

    #[test]
    fn freed_runs_under_the_threshold_are_reused() {
        let src = Fake::new(8);
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
        assert!(src.all_free());
    }

    #[test]
    fn out_of_memory_and_zero_are_errors() {
        let src = Fake::new(2);
        let mut pool = Pool::with_threshold(0);
        assert!(matches!(pool.alloc(&src, 0, None), Err(Error::ZeroSizedAlloc)));
        assert!(matches!(pool.alloc(&src, 3 * SEGMENT_BYTES, None), Err(Error::OutOfMemory { .. })));
        let a = pool.alloc(&src, 2 * SEGMENT_BYTES, None).unwrap();
        assert!(matches!(pool.alloc(&src, 1, None), Err(Error::OutOfMemory { .. })));
        pool.free(&src, a, None).unwrap();
        assert!(pool.alloc(&src, 1, None).is_ok());
        // Idle memory the pool keeps is given back when the heap runs out.
        let mut keeper = Pool::with_threshold(2 * SEGMENT_BYTES);
        let src2 = Fake::new(2);
        let r = keeper.alloc(&src2, 2 * SEGMENT_BYTES, None).unwrap();
        keeper.free(&src2, r, None).unwrap();
        assert_eq!(keeper.stats().idle_run_segments, 2);
        let one = keeper.alloc(&src2, SUB_MAX_BYTES + 1, None).unwrap();
        assert_eq!(keeper.stats().idle_run_segments, 0, "released to make room");
        keeper.free(&src2, one, None).unwrap();
    }

    #[test]
    fn many_random_allocations_never_overlap() {
        for base in [ALIGNED_BASE, UNALIGNED_BASE] {
            random_allocations(base);
        }
    }

    /// Random allocations and frees: no two overlap, no carved one spans two segments, and
    /// everything goes back in the end.
    fn random_allocations(base: u64) {
        use rand::{Rng, SeedableRng};
        let src = Fake::at(64, base);
        let mut pool = Pool::with_threshold(0);
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
                let seg = |a: u64| (a - base) / SEGMENT_BYTES;
                assert!(
                    v.iter().all(|&(p, n)| n > SUB_MAX_BYTES || seg(p) == seg(p + n - 1)),
                    "a carved allocation spans two segments at step {step}"
                );
            }
        }
        for (p, _) in live {
            pool.free(&src, p, None).unwrap();
        }
        pool.trim(&src).unwrap();
        assert!(src.all_free());
    }

    /// Issue 10 item 9: segment 0 2 MiB past a 16 MiB boundary. Filling two segments with
    /// 1 MiB allocations and freeing them all must merge each segment back into one range
    /// and return both (the pool used to cut ranges at 16 MiB boundaries of the address
    /// space, leaving each segment in two pieces that were never released).
    #[test]
    fn an_unaligned_heap_base_merges_and_releases_whole_segments() {
        let src = Fake::at(2, UNALIGNED_BASE);
        let mut pool = Pool::with_threshold(0);
        let mib = 1 << 20;
        let per_segment = (SEGMENT_BYTES / mib) as usize;
        let ps: Vec<u64> = (0..2 * per_segment).map(|_| pool.alloc(&src, mib, None).unwrap()).collect();
        assert_eq!(src.claimed(), 2);
        for (i, &p) in ps.iter().enumerate() {
            assert_eq!(p, UNALIGNED_BASE + i as u64 * mib, "packed from segment 0");
        }
        // Free in an order that makes every merge happen in both directions.
        for &p in ps.iter().step_by(2).chain(ps.iter().skip(1).step_by(2)) {
            pool.free(&src, p, None).unwrap();
        }
        assert_eq!(pool.stats(), PoolStats::default(), "both segments merged and returned");
        assert!(src.all_free());
    }

    /// Issue 10 item 8: a run of more segments than a u32 counts is out of memory (it used
    /// to be truncated: `k as u32` turned 2^32 + 1 segments into 1 and handed out a kept run).
    #[test]
    fn runs_beyond_u32_segments_are_out_of_memory() {
        let src = Fake::new(4);
        let mut pool = Pool::with_threshold(4 * SEGMENT_BYTES);
        let a = pool.alloc(&src, 8 << 20, None).unwrap();
        pool.free(&src, a, None).unwrap();
        assert_eq!(pool.stats().idle_run_segments, 1, "the run is kept");
        for huge in [(1u64 << 56) + (1 << 24), (1 << 56) + 1, u64::MAX] {
            assert!(
                matches!(pool.alloc(&src, huge, None), Err(Error::OutOfMemory { requested }) if requested == huge),
                "{huge} bytes"
            );
        }
        assert_eq!(pool.stats().idle_run_segments, 1, "the kept run is still kept");
        pool.trim(&src).unwrap();
        assert!(src.all_free());
    }

    /// Issue 10 item 12: a stream-ordered free whose first step fails (the stream sync
    /// before a run goes back, the mark of a carved range) leaves the allocation live, so
    /// that it can be freed again (it used to leave `live` first: a leak, and
    /// `UnknownPointer` on the retry).
    #[test]
    fn a_failed_stream_free_leaves_the_allocation_live() {
        let src = Fake::new(4);
        let mut pool = Pool::with_threshold(0);
        let s = StreamId(0x10);
        let run = pool.alloc(&src, 40 << 20, Some(s)).unwrap();
        let sub = pool.alloc(&src, 1000, Some(s)).unwrap();
        src.fail.set(Failing { sync: true, record: true, ..Failing::default() });
        assert!(matches!(pool.free(&src, run, Some(s)), Err(Error::Driver { call: "sync", .. })));
        assert!(matches!(pool.free(&src, sub, Some(s)), Err(Error::Driver { call: "record", .. })));
        assert_eq!((pool.size_of(run), pool.size_of(sub)), (Some(3 * SEGMENT_BYTES), Some(1024)));
        assert_eq!(pool.stats().allocations, 2);
        src.fail.set(Failing::default());
        pool.free(&src, run, Some(s)).unwrap();
        pool.free(&src, sub, Some(s)).unwrap();
        src.passed.borrow_mut().push(src.next_mark.get());
        pool.trim(&src).unwrap();
        assert_eq!(pool.stats(), PoolStats::default());
        assert!(src.all_free());
    }

    /// Issue 10 item 12: a failed release loses nothing: kept runs and idle segments stay in
    /// the pool (a run used to be taken off the kept list before its release, and was lost
    /// when the release failed), and a freed run over the threshold is kept; a later trim
    /// returns everything.
    #[test]
    fn failed_releases_lose_nothing() {
        let src = Fake::new(8);
        let mut pool = Pool::with_threshold(3 * SEGMENT_BYTES);
        let run = pool.alloc(&src, 2 * SEGMENT_BYTES, None).unwrap();
        let sub = pool.alloc(&src, 1 << 20, None).unwrap();
        let big = pool.alloc(&src, 4 * SEGMENT_BYTES, None).unwrap();
        pool.free(&src, run, None).unwrap();
        pool.free(&src, sub, None).unwrap();
        assert_eq!((pool.stats().idle_run_segments, pool.stats().pool_segments), (2, 1), "kept");
        src.fail.set(Failing { release: true, ..Failing::default() });
        assert!(pool.trim(&src).is_err());
        assert_eq!((pool.stats().idle_run_segments, pool.stats().pool_segments), (2, 1), "still kept");
        // Over the threshold: the release fails, the run is freed into the pool.
        assert!(pool.free(&src, big, None).is_err());
        assert_eq!(pool.size_of(big), None, "freed");
        assert_eq!(pool.stats().idle_run_segments, 6, "kept after the failed release");
        src.fail.set(Failing::default());
        pool.trim(&src).unwrap();
        assert_eq!(pool.stats(), PoolStats::default());
        assert!(src.all_free(), "nothing stranded");
    }

    /// Issue 10 item 11: an allocation on a stream may reuse a range freed on that stream
    /// before the free has run, and then makes the stream wait for the free's mark, so the
    /// order does not rest on the stream id (a new stream may get a destroyed one's handle).
    /// A failed wait loses nothing. Other streams wait for the mark to pass.
    #[test]
    fn reusing_a_pending_free_waits_for_it() {
        let src = Fake::new(1);
        let mut pool = Pool::with_threshold(SEGMENT_BYTES);
        let (s1, s2) = (StreamId(0x10), StreamId(0x20));
        let quarter = SEGMENT_BYTES / 4;
        let ps: Vec<u64> = (0..4).map(|_| pool.alloc(&src, quarter, Some(s1)).unwrap()).collect();
        pool.free(&src, ps[0], Some(s1)).unwrap();
        let m1 = src.next_mark.get();
        assert!(
            matches!(pool.alloc(&src, quarter, Some(s2)), Err(Error::OutOfMemory { .. })),
            "another stream does not take a range whose free has not run"
        );
        assert!(src.waits.borrow().is_empty());
        assert_eq!(pool.alloc(&src, quarter, Some(s1)).unwrap(), ps[0], "the same stream reuses it");
        assert_eq!(*src.waits.borrow(), vec![(s1, m1)], "after waiting for the free's mark");
        // A failed wait: an error, and the pending range stays pending.
        pool.free(&src, ps[1], Some(s1)).unwrap();
        src.fail.set(Failing { wait: true, ..Failing::default() });
        assert!(matches!(pool.alloc(&src, quarter, Some(s1)), Err(Error::Driver { call: "wait", .. })));
        assert_eq!(pool.stats().pending, 1);
        src.fail.set(Failing::default());
        // Once the mark has passed, the range is free for anyone.
        src.passed.borrow_mut().push(src.next_mark.get());
        assert_eq!(pool.alloc(&src, quarter, Some(s2)).unwrap(), ps[1]);
        assert_eq!(pool.stats().pending, 0);
        for &p in &ps {
            pool.free(&src, p, None).unwrap();
        }
        pool.trim(&src).unwrap();
        assert!(src.all_free());
    }

    /// A run of segments asked for after a stream-ordered free has run uses the pool segment
    /// that free emptied (the run path did not settle pending frees, so the claim's fallback
    /// saw no idle memory and reported OutOfMemory).
    #[test]
    fn a_run_after_a_stream_free_has_run_uses_its_segment() {
        let src = Fake::new(2);
        let mut pool = Pool::with_threshold(DEFAULT_RELEASE_THRESHOLD);
        let s = StreamId(0x10);
        let p = pool.alloc(&src, 1 << 20, Some(s)).unwrap();
        pool.free(&src, p, Some(s)).unwrap();
        src.passed.borrow_mut().push(src.next_mark.get()); // the stream ran past the free
        let r = pool.alloc(&src, 2 * SEGMENT_BYTES, None);
        assert!(r.is_ok(), "nothing is live, the heap has 2 segments, got {r:?}");
    }

    /// Segments emptied by stream-ordered frees go back to the device heap over the release
    /// threshold once the frees have run, as after synchronous frees (they stayed in the pool
    /// until a `trim`, whatever the threshold).
    #[test]
    fn stream_frees_respect_the_release_threshold() {
        let src = Fake::new(8);
        let mut pool = Pool::with_threshold(0);
        let s = StreamId(0x10);
        let ps: Vec<u64> = (0..8).map(|_| pool.alloc(&src, SUB_MAX_BYTES, Some(s)).unwrap()).collect();
        assert_eq!(src.claimed(), 2);
        for p in ps {
            pool.free(&src, p, Some(s)).unwrap();
        }
        src.passed.borrow_mut().extend(1..=src.next_mark.get());
        let one = pool.alloc(&src, 1, Some(s)).unwrap(); // settles the frees
        assert_eq!(src.claimed(), 1, "one segment in use; threshold 0 keeps no idle one");
        pool.free(&src, one, None).unwrap();
        assert_eq!(src.claimed(), 0);
    }
}
