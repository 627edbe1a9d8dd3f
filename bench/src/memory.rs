//! How much of the heap is usable: fragmentation (range handed out / live bytes), out of
//! memory (bytes handed out before null), utilisation (fill until null, one size or a range)
//! and churn (rounds of mixed sizes with about half the heap live, no host trim).

use cust::memory::{CopyDestination, DeviceBuffer};
use serde::Serialize;
use veballoc::kernels::diag::SegmentUse;
use veballoc::kernels::harness::{
    churn_counter, churn_law, churn_size, util_counter, PROB_ONE, ROUND_SEED_SHIFT,
};
use veballoc::Heap;

use crate::common::{Bench, HostSizes, Res, Sizes, BLOCK, MIXED_MIN};
use crate::peers::PeerCmd;
use crate::report::{FragMap, FragPoint, OomPoint, SegRow};

/// Largest slice size: single sizes above it run `frag` at `FRAG_LARGE_THREADS` threads.
pub(crate) const SLICE_MAX: u64 = 4096;
/// Threads for `frag` at sizes above `SLICE_MAX` (the usable-memory issue's points).
pub(crate) const FRAG_LARGE_THREADS: u64 = 65536;
/// Mixed-size maxima `frag` measures after the single sizes.
pub(crate) const FRAG_MIXED_MAXIMA: [u64; 3] = [64, 512, 4096];

/// `util`: a batch asks for about 1/UTIL_BATCHES of the heap.
pub(crate) const UTIL_BATCHES: u64 = 100;
/// `util`: batches run after the first null before giving up on filling further.
pub(crate) const UTIL_BATCHES_AFTER_NULL: u32 = 20;
/// `util`: most batches of one fill (a bound, whatever the heap does).
pub(crate) const UTIL_MAX_BATCHES: u32 = 4 * UTIL_BATCHES as u32;
/// Seed of `util`'s random sizes (mixed with the batch and thread index on the device).
pub(crate) const UTIL_SEED: u64 = 0x7571_1f11;
/// Bits of the batch index in `util`'s per-batch seed.
pub(crate) const UTIL_SEED_SHIFT: u32 = ROUND_SEED_SHIFT;
/// `churn`: a holder frees its allocation in a round with this probability (mean lifetime
/// four rounds).
pub(crate) const CHURN_FREE_SHARE: f64 = 0.25;
/// Seed of the churn's random draws.
pub(crate) const CHURN_SEED: u64 = 0xc4u64 << 32 | 0x5eed;

/// Heap-size units.
pub(crate) const MIB: u64 = 1 << 20;

/// The churn's request sizes: with probability 1/run_odds a segment run uniform in
/// [run_lo, run_hi], else uniform in [2^e, 2^(e+1)) with e uniform in e0..e0+exponents
/// (16 B .. 1 MiB by default). Mirrors `churn_size` in kernels/src/entry.rs.
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct ChurnLaw {
    pub(crate) e0: u64,
    pub(crate) exponents: u64,
    pub(crate) run_odds: u64,
    pub(crate) run_lo: u64,
    pub(crate) run_hi: u64,
}

/// 16 B .. 1 MiB (log-uniform by octave), one request in 16384 a run of 20-40 MiB.
pub(crate) const CHURN_LAW: ChurnLaw =
    ChurnLaw { e0: 4, exponents: 16, run_odds: 1 << 14, run_lo: 20 * MIB, run_hi: 40 * MIB };

impl ChurnLaw {
    /// The five words `churn_round` reads.
    fn words(&self) -> [u64; churn_law::WORDS] {
        let mut w = [0; churn_law::WORDS];
        (w[churn_law::E0], w[churn_law::EXPONENTS], w[churn_law::RUN_ODDS]) =
            (self.e0, self.exponents, self.run_odds);
        (w[churn_law::RUN_LO], w[churn_law::RUN_HI]) = (self.run_lo, self.run_hi);
        w
    }

    /// The size drawn from random bits `r` (the device's `churn_size` itself: the tests and
    /// the CPU model draw with it).
    pub(crate) fn size(&self, r: u64) -> u64 {
        churn_size(r, &self.words())
    }

    /// Expected request size in bytes.
    pub(crate) fn mean(&self) -> f64 {
        let main = (self.e0..self.e0 + self.exponents)
            .map(|e| {
                let lo = (1u64 << e) as f64;
                lo + (lo - 1.0) / 2.0
            })
            .sum::<f64>()
            / self.exponents as f64;
        let run = (self.run_lo + self.run_hi) as f64 / 2.0;
        let q = 1.0 / self.run_odds as f64;
        (1.0 - q) * main + q * run
    }
}

/// Probability that a thread holding nothing allocates in the next churn round, so that the
/// expected live bytes after it are `target`: each of `holders` frees with probability
/// `free`, then every thread holding nothing allocates with the returned probability a
/// request of mean `mean` bytes. Clamped to [0, 1].
pub(crate) fn churn_alloc_share(target: f64, live: f64, holders: f64, n: f64, free: f64, mean: f64) -> f64 {
    let kept = live * (1.0 - free);
    let empty = n - holders * (1.0 - free);
    if empty <= 0.0 || mean <= 0.0 {
        return 0.0;
    }
    ((target - kept) / (empty * mean)).clamp(0.0, 1.0)
}

/// A probability as `churn_round`'s threshold on 32 random bits.
pub(crate) fn threshold(p: f64) -> u64 {
    ((p.clamp(0.0, 1.0) * PROB_ONE as f64) as u64).min(PROB_ONE)
}

/// Parses `lo-hi` (bytes; both inclusive, lo <= hi, lo > 0) as given to `--util-ranges`.
pub(crate) fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once('-').ok_or_else(|| format!("range {s:?}: want lo-hi"))?;
    let lo = a.trim().parse::<u64>().map_err(|e| format!("range {s:?}: {e}"))?;
    let hi = b.trim().parse::<u64>().map_err(|e| format!("range {s:?}: {e}"))?;
    if lo == 0 || lo > hi {
        return Err(format!("range {s:?}: want 0 < lo <= hi"));
    }
    Ok((lo, hi))
}

/// Threads `frag` uses at single size `s`: `threads`, or at most `FRAG_LARGE_THREADS` above
/// a slice.
pub(crate) fn frag_threads(threads: u64, s: u64, mixed: bool) -> u64 {
    if !mixed && s > SLICE_MAX {
        threads.min(FRAG_LARGE_THREADS)
    } else {
        threads
    }
}

/// Bytes of the units `segment_map` counts as touched.
const MAP_UNIT_SHIFT: u32 = 16;

/// Each segment up to the highest holding a pointer or formatted: its kind, blocks out, and
/// the requested bytes and 64 KiB units of `ptrs` (a round's pointers, 0 for a null) in it
/// (`--frag-map`). `mem`: the heap's segment 0; `uses`: its segments (`segment_uses`).
fn segment_rows(mem: u64, uses: &[SegmentUse], ptrs: &[u64], size_of: impl Fn(usize) -> u64) -> Vec<SegRow> {
    use std::collections::BTreeSet;
    use veballoc::kernels::segment::SegKind;
    let shift = veballoc::kernels::SEGMENT_SHIFT;
    let mut live = vec![0u64; uses.len()];
    let mut units = BTreeSet::new();
    for (i, &p) in ptrs.iter().enumerate().filter(|(_, &p)| p != 0) {
        let off = p - mem;
        live[(off >> shift) as usize] += size_of(i);
        units.insert(off >> MAP_UNIT_SHIFT);
    }
    let top = (0..uses.len()).rev().find(|&s| live[s] != 0 || uses[s].kind != SegKind::Free).unwrap_or(0);
    let per_seg = 1u64 << (shift - MAP_UNIT_SHIFT);
    uses.iter()
        .enumerate()
        .take(top + 1)
        .map(|(s, u)| {
            let (kind, block_bytes) = match u.kind {
                SegKind::Group(g) => (format!("g{g}"), veballoc::kernels::block::group_block_bytes(g)),
                SegKind::Free => ("free".into(), 0),
                other => (format!("{other:?}"), 0),
            };
            SegRow {
                segment: s as u32,
                kind,
                blocks_out: u.blocks_out,
                block_bytes,
                live_bytes: live[s],
                units: units.range(s as u64 * per_seg..(s as u64 + 1) * per_seg).count() as u64,
            }
        })
        .collect()
}

/// The map of a `frag` point of `sizes` at `threads` after its round 0 (`segment_rows`),
/// printed as one line (`map_line`), for the GPU harness and the CPU model alike.
pub(crate) fn frag_map(
    mem: u64,
    uses: &[SegmentUse],
    ptrs: &[u64],
    size_of: impl Fn(usize) -> u64,
    sizes: Sizes,
    threads: u64,
) -> FragMap {
    let segments = segment_rows(mem, uses, ptrs, size_of);
    println!("{}", map_line(&segments));
    FragMap { size: sizes.label(), mixed: matches!(sizes, Sizes::Mixed(_)), threads, segments }
}

/// `segment_rows` as one line: `seg:kind blocks-out live-MiB/units` per segment.
fn map_line(rows: &[SegRow]) -> String {
    let mut out = String::from("    map (seg:group blocks-out live-MiB/64KiB-units):");
    for r in rows {
        out += &format!(
            " | {}:{} {} {:.1}/{}",
            r.segment,
            r.kind,
            r.blocks_out,
            r.live_bytes as f64 / MIB as f64,
            r.units
        );
    }
    out
}

/// One `util` fill: requests of one size (lo == hi) or uniform in [lo, hi], in batches of
/// about 1% of the heap, until null.
#[derive(Serialize, Clone)]
pub(crate) struct UtilPoint {
    pub(crate) allocator: String,
    pub(crate) lo: u64,
    pub(crate) hi: u64,
    /// Bytes of segment memory the heap manages.
    pub(crate) capacity: u64,
    pub(crate) batch_threads: u64,
    pub(crate) batches: u32,
    /// Batch in which the first null came back (none: the fill stopped without one).
    pub(crate) first_null_batch: Option<u32>,
    /// Requested bytes live when the batch of the first null ended.
    pub(crate) bytes_at_first_null: u64,
    /// bytes_at_first_null / capacity.
    pub(crate) share_at_first_null: f64,
    /// Requested bytes live at the end (the fill stops when a batch gets nothing, or
    /// `UTIL_BATCHES_AFTER_NULL` batches after the first null).
    pub(crate) bytes_max: u64,
    pub(crate) share_max: f64,
    pub(crate) requests: u64,
    pub(crate) nulls: u64,
    /// Kernel time of all batches.
    pub(crate) ms: f64,
}

/// One churn round.
#[derive(Serialize, Clone)]
pub(crate) struct ChurnPoint {
    pub(crate) round: u32,
    pub(crate) threads: u64,
    pub(crate) capacity: u64,
    /// Requested bytes live after the round.
    pub(crate) live_bytes: u64,
    pub(crate) live_share: f64,
    pub(crate) live_allocations: u64,
    /// Probability of a new request per thread holding nothing, this round.
    pub(crate) alloc_share: f64,
    pub(crate) nulls: u64,
    pub(crate) nulls_total: u64,
    /// Segment runs (requests over 16 MiB) served so far.
    pub(crate) runs_total: u64,
    /// Live share when the first null came (from the first round that had one on).
    pub(crate) first_null_live_share: Option<f64>,
    pub(crate) ms: f64,
}

impl Bench {
    /// Range handed out / live bytes after each of `--rounds` alloc/free rounds on one heap,
    /// at every size of `singles` (above 4 KiB at 65536 threads) and at mixed sizes; CUDA
    /// malloc and the peers for the first round.
    pub(crate) fn frag(&mut self, singles: Vec<u64>) -> Res<()> {
        println!(
            "\nfrag: {} threads ({} above {SLICE_MAX} B), {} alloc/free rounds on one heap; range handed out / \
             live bytes",
            self.cli.threads,
            frag_threads(self.cli.threads, SLICE_MAX + 1, false),
            self.cli.rounds
        );
        let mut head = format!(
            "{:>10} {:>8} | {:>22} {:>7} | {:>22}",
            "size", "threads", "veballoc (round 0, max)", "nulls", "cuda malloc (round 0)"
        );
        for p in &self.peers {
            head += &format!(" | {:>16}", format!("{} (round 0)", p.label));
        }
        println!("{head}");
        let list: Vec<(bool, u64)> = singles
            .into_iter()
            .map(|s| (false, s))
            .chain(FRAG_MIXED_MAXIMA.into_iter().map(|s| (true, s)))
            .collect();
        for (mixed, s) in list {
            let n = frag_threads(self.cli.threads, s, mixed);
            eprint!("  [frag {s} x {n}] ...\r");
            let sizes = if mixed { Sizes::Mixed(s) } else { Sizes::Fixed(s) };
            let host = HostSizes::new(sizes, n);
            let size_of = |i: usize| host.of(i);
            let live = host.live();
            let (_sizes_buf, sizes_dev, ptrs) = Self::buffers(&host)?;
            let p = ptrs.as_device_ptr().as_raw();
            let (mut row, mut vb_nulls) = (Vec::new(), 0);
            let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
            let (arg, fixed) = (heap.arg(), sizes.fixed());
            for round in 0..self.cli.rounds.max(1) {
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
                let got = Self::host_u64s(&ptrs)?;
                let (range, nulls) = Self::range_of(&got, size_of);
                vb_nulls = vb_nulls.max(nulls);
                if self.cli.frag_map && round == 0 {
                    let uses = heap.segment_uses()?;
                    self.frag_maps.push(frag_map(heap.base(), &uses, &got, size_of, sizes, n));
                }
                // SAFETY: as above (vb_free skips nulls).
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
                    nulls,
                });
            }
            heap.destroy()?;
            if vb_nulls > 0 {
                eprintln!("warning: frag: veballoc returned up to {vb_nulls} nulls per round at {s} x {n}");
            }
            let mut cuda = "-".to_string();
            if self.wants("cuda") && !mixed && self.cli.cuda_sizes.contains(&s) {
                // SAFETY: matches cuda_malloc.
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
                // SAFETY: matches cuda_free (it skips nulls).
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
                    nulls,
                });
            }
            let mut line = format!(
                "{:>10} {n:>8} | {:>22} {vb_nulls:>7} | {:>22}",
                if mixed { format!("mixed≤{s}") } else { s.to_string() },
                format!("{:.3}x, {:.3}x", row[0], row.iter().copied().fold(0.0, f64::max)),
                cuda
            );
            for peer in self.peers.clone() {
                let mut cell = "-".to_string();
                if self.peer_runs_at(&peer, s) {
                    let cmd = if mixed {
                        PeerCmd::Mixed { threads: n, lo: MIXED_MIN, hi: s }
                    } else {
                        PeerCmd::Single { threads: n, size: s }
                    };
                    // One fresh-heap round, as veballoc's round 0.
                    if let Some(r) = self.run_peer(&peer, "frag", cmd, 1, 0)?.first() {
                        let ratio = r.range_bytes as f64 / r.live_bytes.max(1) as f64;
                        let nulls = self.peer_runs.last().map_or(0, |x| x.nulls);
                        cell = format!("{ratio:.3}x");
                        self.frag.push(FragPoint {
                            allocator: peer.label.clone(),
                            size: s,
                            mixed,
                            round: 0,
                            threads: n,
                            range_bytes: r.range_bytes,
                            live_bytes: r.live_bytes,
                            ratio,
                            nulls,
                        });
                    }
                }
                line += &format!(" | {cell:>16}");
            }
            println!("{line}");
        }
        Ok(())
    }

    /// Requests of each size in `list`, 1.1x more than fit in an `--oom-heap-mib` heap, in one
    /// launch: bytes handed out before null / heap.
    pub(crate) fn oom(&mut self, list: Vec<u64>) -> Res<()> {
        let heap_bytes = self.cli.oom_heap_mib << 20;
        println!(
            "\noom: {} MiB heap, 1.1x more requests than fit; bytes handed out before null / heap",
            self.cli.oom_heap_mib
        );
        println!("{:>10} | {:>10} | {:>10} | {:>8} | {:>9}", "size", "threads", "served", "share", "ms");
        for s in list {
            eprint!("  [oom {s}] ...\r");
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

    /// Utilisation: for each (lo, hi), a fresh heap filled with requests of that size (or
    /// uniform in the range) in batches of about 1% of the heap until null; requested bytes
    /// live at the first null (and at the end) / heap capacity.
    pub(crate) fn util(&mut self, list: Vec<(u64, u64)>) -> Res<()> {
        println!(
            "\nutil: {} GiB heap filled in batches of ~1/{UTIL_BATCHES} until null; requested bytes live / \
             capacity",
            self.cli.heap_gib
        );
        println!(
            "{:>19} | {:>9} {:>7} | {:>8} {:>9} | {:>8} | {:>10} {:>10} | {:>9}",
            "size", "batch", "batches", "1st null", "share", "max", "requests", "nulls", "ms"
        );
        for (lo, hi) in list {
            let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
            let capacity = heap.capacity();
            let batch_threads = (capacity / ((lo + hi) / 2) / UTIL_BATCHES).max(1);
            let mut counters = veballoc::zeroed_u64s(util_counter::COUNT)?;
            self.upload(&mut counters, &[0u64; util_counter::COUNT])?;
            let (arg, c) = (heap.arg(), counters.as_device_ptr().as_raw());
            let label = if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") };
            let (mut first_null, mut at_first, mut ms, mut batches) = (None, 0u64, 0.0, 0u32);
            let mut h = [0u64; util_counter::COUNT];
            while batches < UTIL_MAX_BATCHES {
                let seed = UTIL_SEED ^ ((batches as u64) << UTIL_SEED_SHIFT);
                let before = h[1];
                // SAFETY: matches util_fill (util_counter::COUNT words at c).
                ms += self.timed(|| unsafe {
                    self.gpu.launch(
                        "util_fill",
                        batch_threads,
                        BLOCK,
                        veballoc::kernel_args![arg, batch_threads, lo, hi, seed, c],
                    )
                })?;
                counters.copy_to(&mut h[..])?;
                batches += 1;
                eprint!(
                    "  [util {label}] batch {batches}: {:.1}% of the heap, {} nulls   \r",
                    100.0 * h[0] as f64 / capacity as f64,
                    h[2]
                );
                if h[2] > 0 && first_null.is_none() {
                    first_null = Some(batches - 1);
                    at_first = h[0];
                }
                let after_null = first_null.map_or(0, |f| batches - 1 - f);
                if h[1] == before || after_null >= UTIL_BATCHES_AFTER_NULL {
                    break;
                }
            }
            self.print_trace(&heap, &format!("util {label}"))?;
            heap.destroy()?;
            let pt = UtilPoint {
                allocator: "veballoc".into(),
                lo,
                hi,
                capacity,
                batch_threads,
                batches,
                first_null_batch: first_null,
                bytes_at_first_null: at_first,
                share_at_first_null: at_first as f64 / capacity as f64,
                bytes_max: h[0],
                share_max: h[0] as f64 / capacity as f64,
                requests: h[1],
                nulls: h[2],
                ms,
            };
            println!(
                "{label:>19} | {batch_threads:>9} {batches:>7} | {:>8} {:>8.2}% | {:>7.2}% | {:>10} {:>10} | {ms:>9.2}",
                first_null.map_or("none".to_string(), |b| b.to_string()),
                100.0 * pt.share_at_first_null,
                100.0 * pt.share_max,
                pt.requests,
                pt.nulls,
            );
            if first_null.is_none() {
                eprintln!("warning: util {label}: no null within {UTIL_MAX_BATCHES} batches");
            }
            self.util.push(pt);
        }
        Ok(())
    }

    /// Churn: `--churn-rounds` rounds over `--threads` threads on one heap, each holding at
    /// most one allocation of the churn law's sizes (16 B .. 1 MiB, rare 20-40 MiB runs);
    /// holders free with probability 1/4 and the rest allocate so that about `--churn-live`
    /// of the heap stays live; no host trim. Nulls per round and the live share at the first
    /// null; a last round frees everything and checks that nothing stays live.
    pub(crate) fn churn(&mut self) -> Res<()> {
        let n = self.cli.threads;
        let law = CHURN_LAW;
        let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
        let capacity = heap.capacity();
        let target = self.cli.churn_live * capacity as f64;
        println!(
            "\nchurn: {n} threads, {} rounds, {} GiB heap, sizes 16 B .. 1 MiB (mean {:.0} B), 1 in {} a \
             {}-{} MiB run; holders free with p = {CHURN_FREE_SHARE}; target live {:.0}% of the heap; no \
             host trim",
            self.cli.churn_rounds,
            self.cli.heap_gib,
            law.mean(),
            law.run_odds,
            law.run_lo / MIB,
            law.run_hi / MIB,
            100.0 * self.cli.churn_live
        );
        println!(
            "{:>6} | {:>8} {:>10} | {:>7} | {:>8} {:>9} | {:>5} | {:>9}",
            "round", "live", "allocs", "p new", "nulls", "total", "runs", "ms"
        );
        let ptrs = veballoc::zeroed_u64s(n as usize)?;
        let sizes = DeviceBuffer::<u32>::zeroed(n as usize)?;
        let dist = DeviceBuffer::from_slice(&law.words())?;
        let mut counters = veballoc::zeroed_u64s(churn_counter::COUNT)?;
        let mut init = [0u64; churn_counter::COUNT];
        init[churn_counter::FIRST_NULL_LIVE] = churn_counter::NO_NULL;
        // After every buffer above: upload waits for their zeroing and copies to land.
        self.upload(&mut counters, &init)?;
        let (arg, p, s, d, c) = (
            heap.arg(),
            ptrs.as_device_ptr().as_raw(),
            sizes.as_device_ptr().as_raw(),
            dist.as_device_ptr().as_raw(),
            counters.as_device_ptr().as_raw(),
        );
        let mut h = init;
        let mut first_null: Option<(u32, f64)> = None;
        let rounds = self.cli.churn_rounds;
        // The rounds, then one that frees everything.
        for round in 0..=rounds {
            let last = round == rounds;
            let (live, holders) = (h[churn_counter::LIVE_BYTES] as f64, h[churn_counter::LIVE_COUNT] as f64);
            let share = if last {
                0.0
            } else {
                churn_alloc_share(target, live, holders, n as f64, CHURN_FREE_SHARE, law.mean())
            };
            let (free_p, alloc_p) = (threshold(if last { 1.0 } else { CHURN_FREE_SHARE }), threshold(share));
            let (seed, r) = (CHURN_SEED, round as u64);
            let nulls_before = h[churn_counter::NULLS];
            // SAFETY: matches churn_round (n pointers and sizes, the law's five words,
            // churn_counter::COUNT counters).
            let ms = self.timed(|| unsafe {
                self.gpu.launch(
                    "churn_round",
                    n,
                    BLOCK,
                    veballoc::kernel_args![arg, p, s, n, seed, r, free_p, alloc_p, d, c],
                )
            })?;
            counters.copy_to(&mut h[..])?;
            let nulls = h[churn_counter::NULLS] - nulls_before;
            if first_null.is_none() && h[churn_counter::FIRST_NULL_LIVE] != churn_counter::NO_NULL {
                first_null = Some((round, h[churn_counter::FIRST_NULL_LIVE] as f64 / capacity as f64));
            }
            let live_share = h[churn_counter::LIVE_BYTES] as f64 / capacity as f64;
            println!(
                "{:>6} | {:>7.2}% {:>10} | {:>7.4} | {nulls:>8} {:>9} | {:>5} | {ms:>9.3}",
                if last { "free".to_string() } else { round.to_string() },
                100.0 * live_share,
                h[churn_counter::LIVE_COUNT],
                share,
                h[churn_counter::NULLS],
                h[churn_counter::RUNS]
            );
            self.print_trace(&heap, &format!("churn round {round}"))?;
            self.churn.push(ChurnPoint {
                round,
                threads: n,
                capacity,
                live_bytes: h[churn_counter::LIVE_BYTES],
                live_share,
                live_allocations: h[churn_counter::LIVE_COUNT],
                alloc_share: share,
                nulls,
                nulls_total: h[churn_counter::NULLS],
                runs_total: h[churn_counter::RUNS],
                first_null_live_share: first_null.map(|f| f.1),
                ms,
            });
        }
        heap.destroy()?;
        match first_null {
            Some((round, share)) => println!(
                "churn: first null in round {round} with {:.2}% of the heap live; {} nulls in all",
                100.0 * share,
                h[churn_counter::NULLS]
            ),
            None => println!("churn: no null in {rounds} rounds"),
        }
        if h[churn_counter::BAD_WORDS] != 0 {
            return Err(format!(
                "churn: {} wrong words (allocations overlapped)",
                h[churn_counter::BAD_WORDS]
            )
            .into());
        }
        if h[churn_counter::LIVE_BYTES] != 0 || h[churn_counter::LIVE_COUNT] != 0 {
            return Err(format!(
                "churn: after freeing everything {} bytes in {} allocations still count as live",
                h[churn_counter::LIVE_BYTES] as i64,
                h[churn_counter::LIVE_COUNT] as i64
            )
            .into());
        }
        Ok(())
    }
}

impl crate::report::Record<'_> {
    /// Writes `util` and `churn` results as CSV (`head`: the GPU/driver/date/revision line).
    pub(crate) fn save_memory_csv(&self, name: &str, head: &str) -> Res<()> {
        if !self.util.is_empty() {
            let mut t = head.to_string()
                + "allocator,lo,hi,capacity,batch_threads,batches,first_null_batch,bytes_at_first_null,\
                   share_at_first_null,bytes_max,share_max,requests,nulls,ms\n";
            for u in self.util.iter() {
                t += &format!(
                    "{},{},{},{},{},{},{},{},{:.4},{},{:.4},{},{},{:.3}\n",
                    u.allocator,
                    u.lo,
                    u.hi,
                    u.capacity,
                    u.batch_threads,
                    u.batches,
                    u.first_null_batch.map_or(String::new(), |b| b.to_string()),
                    u.bytes_at_first_null,
                    u.share_at_first_null,
                    u.bytes_max,
                    u.share_max,
                    u.requests,
                    u.nulls,
                    u.ms
                );
            }
            std::fs::write(self.cli.out.join(format!("{name}-util.csv")), t)?;
        }
        if !self.churn.is_empty() {
            let mut t = head.to_string()
                + "round,threads,capacity,live_bytes,live_share,live_allocations,alloc_share,nulls,nulls_total,\
                   runs_total,first_null_live_share,ms\n";
            for c in self.churn.iter() {
                t += &format!(
                    "{},{},{},{},{:.4},{},{:.6},{},{},{},{},{:.3}\n",
                    c.round,
                    c.threads,
                    c.capacity,
                    c.live_bytes,
                    c.live_share,
                    c.live_allocations,
                    c.alloc_share,
                    c.nulls,
                    c.nulls_total,
                    c.runs_total,
                    c.first_null_live_share.map_or(String::new(), |s| format!("{s:.4}")),
                    c.ms
                );
            }
            std::fs::write(self.cli.out.join(format!("{name}-churn.csv")), t)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use veballoc::kernels::segment::SegKind;

    #[test]
    fn segment_rows_count_live_bytes_and_units_per_segment_up_to_the_last_in_use() {
        let mem = 1u64 << 40;
        let seg = 1u64 << veballoc::kernels::SEGMENT_SHIFT;
        let use_of = |kind, blocks_out| SegmentUse { kind, blocks_out };
        let uses = [
            use_of(SegKind::Group(0), 2),
            use_of(SegKind::Free, 0),
            use_of(SegKind::Group(2), 1),
            use_of(SegKind::Free, 0),
        ];
        // Two pointers in segment 0's first 64 KiB unit, one past it; one in segment 2; a null.
        let ptrs = [mem, mem + 16, mem + (1 << 16), mem + 2 * seg + 4096, 0];
        let rows = segment_rows(mem, &uses, &ptrs, |_| 1 << 19);
        assert_eq!(rows.len(), 3, "up to the last segment in use: {rows:?}");
        assert_eq!(
            (rows[0].live_bytes, rows[0].units, rows[2].live_bytes, rows[2].units),
            (3 << 19, 2, 1 << 19, 1)
        );
        let map = map_line(&rows);
        assert!(map.ends_with(" | 0:g0 2 1.5/2 | 1:free 0 0.0/0 | 2:g2 1 0.5/1"), "{map}");
    }

    #[test]
    fn churn_law_mean_matches_its_draws() {
        // The closed form against the draws themselves (the host twin of the device's).
        let n = 2_000_000u64;
        let sum: f64 = (0..n).map(|i| CHURN_LAW.size(veballoc::kernels::mix(i)) as f64).sum();
        let (mean, exact) = (sum / n as f64, CHURN_LAW.mean());
        assert!((mean - exact).abs() / exact < 0.03, "sampled {mean}, closed form {exact}");
        // Without runs: the octave law alone, ~96 KiB.
        let no_runs = ChurnLaw { run_odds: u64::MAX, ..CHURN_LAW };
        assert!((no_runs.mean() - 98_302.0).abs() < 1.0, "{}", no_runs.mean());
    }

    #[test]
    fn churn_law_sizes_stay_in_bounds() {
        for i in 0..200_000u64 {
            let s = CHURN_LAW.size(veballoc::kernels::mix(i));
            let run = (CHURN_LAW.run_lo..=CHURN_LAW.run_hi).contains(&s);
            assert!(run || (16..1 << 20).contains(&s), "size {s}");
            assert!(s <= u32::MAX as u64, "sizes[] holds u32");
        }
        assert_eq!(CHURN_LAW.size(0), CHURN_LAW.run_lo, "r = 0 draws a run");
    }

    #[test]
    fn churn_controller_aims_at_the_target() {
        let (n, mean, free) = (1e6, 1000.0, 0.25);
        // Empty heap: the whole target from new requests.
        let a = churn_alloc_share(5e8, 0.0, 0.0, n, free, mean);
        assert!((a - 0.5).abs() < 1e-12);
        // At the target: replace what is freed.
        let live = 5e8;
        let holders = live / mean;
        let a = churn_alloc_share(5e8, live, holders, n, free, mean);
        let expect = live * free / ((n - holders * (1.0 - free)) * mean);
        assert!((a - expect).abs() < 1e-12);
        // Over the target, or nobody free to allocate: nothing new.
        assert_eq!(churn_alloc_share(1e8, 5e8, 5e5, n, free, mean), 0.0);
        assert_eq!(churn_alloc_share(1e8, 0.0, n, n, 0.0, mean), 0.0);
        // Clamped to 1.
        assert_eq!(churn_alloc_share(1e12, 0.0, 0.0, n, free, mean), 1.0);
    }

    #[test]
    fn thresholds_cover_zero_and_one() {
        assert_eq!(threshold(0.0), 0);
        assert_eq!(threshold(1.0), PROB_ONE);
        assert_eq!(threshold(2.0), PROB_ONE);
        assert_eq!(threshold(0.25), PROB_ONE / 4);
    }

    #[test]
    fn parses_ranges() {
        assert_eq!(parse_range("16-4096"), Ok((16, 4096)));
        assert_eq!(parse_range(" 4096 - 1048576 "), Ok((4096, 1 << 20)));
        assert!(parse_range("4096").is_err());
        assert!(parse_range("10-5").is_err());
        assert!(parse_range("0-5").is_err());
        assert!(parse_range("a-5").is_err());
    }

    #[test]
    fn frag_runs_large_sizes_at_65536_threads() {
        assert_eq!(frag_threads(1 << 20, 4096, false), 1 << 20);
        assert_eq!(frag_threads(1 << 20, 4097, false), FRAG_LARGE_THREADS);
        assert_eq!(frag_threads(1000, 70000, false), 1000);
        assert_eq!(frag_threads(1 << 20, 4096, true), 1 << 20);
    }
}
