//! The CPU model of the heap: where no CUDA GPU is usable, `frag`, `oom`, `util` and `churn`
//! (and those four of `all`) run the same allocator source on CPU threads. `CpuHeap` is the
//! kernels crate compiled for the host, over host memory. Each OS thread plays one
//! multiprocessor (its own current-block slot per class, as an SM has on the GPU) and runs
//! many simulated warps of 32 requests, coalesced the way the device's `malloc` coalesces a
//! warp (`CpuHeap::warp_malloc`). The metrics, tables and files are the GPU run's, labelled
//! as the CPU model; the heap and the request counts are smaller by default (this machine's
//! memory and cores), and every time is a CPU wall time, not a GPU time.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use serde::Serialize;
use veballoc::kernels::arch::set_host_thread_index;
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::harness::{churn_counter::NO_NULL, pattern, round_draw, PROB_MASK};
use veballoc::kernels::mix;
use veballoc::SEGMENT_BYTES;

use crate::common::{Bench, HostSizes, Res, Sizes};
use crate::memory::{
    churn_alloc_share, frag_map, frag_threads, threshold, ChurnLaw, ChurnPoint, UtilPoint, CHURN_FREE_SHARE,
    CHURN_LAW, CHURN_SEED, FRAG_LARGE_THREADS, FRAG_MIXED_MAXIMA, MIB, SLICE_MAX, UTIL_BATCHES,
    UTIL_BATCHES_AFTER_NULL, UTIL_MAX_BATCHES, UTIL_SEED, UTIL_SEED_SHIFT,
};
use crate::report::{FragMap, FragPoint, OomPoint, Record};
use crate::{Cli, Cmd};

/// The CPU model's heap unless --heap-gib says otherwise: 1/8 of the GPU protocol's 8 GiB.
pub(crate) const CPU_HEAP_BYTES: u64 = 1 << 30;
/// Largest heap the CPU model takes (a larger --heap-gib is capped, with a message): `util`
/// and `oom` fill the heap, and this machine's memory backs it.
pub(crate) const CPU_HEAP_MAX_BYTES: u64 = 4 << 30;
/// Requests per simulated launch unless --threads says otherwise: 1/8 of the GPU protocol's
/// 2^20, in proportion to the heap.
pub(crate) const CPU_THREADS: u64 = 1 << 17;
/// `oom`'s heap unless --oom-heap-mib says otherwise (1/4 of the GPU's 1 GiB: 18.5 million
/// requests at 16 B).
pub(crate) const CPU_OOM_HEAP_BYTES: u64 = 256 << 20;
/// The GPU protocol's heap: `frag`'s thread count above a slice (65536 there) scales by the
/// CPU model's heap over this, so that those points fill the same share of the heap.
const PROTOCOL_HEAP_BYTES: u64 = 8 << 30;
/// Most OS threads (--cpu-threads is capped here).
const MAX_OS_THREADS: u32 = 64;
/// Results folder of the CPU model unless --out says otherwise (kept apart from GPU results).
pub(crate) const CPU_OUT: &str = "bench/results/cpu-model";
/// Lanes of a simulated warp.
const WARP: u64 = veballoc::kernels::arch::WARP_SIZE as u64;
/// Warps an OS thread takes from a launch at a time.
const CHUNK_WARPS: u64 = 64;

/// The subcommands the CPU model runs.
pub(crate) const CPU_TESTS: [&str; 4] = ["frag", "oom", "util", "churn"];
/// The subcommands of `all` that need a GPU (skipped in the CPU model).
pub(crate) const GPU_ONLY_TESTS: [&str; 9] =
    ["single", "mixed", "scaling", "init", "warm", "packed", "host", "collective", "collections"];

/// Whether the CPU model runs `cmd` (`all` runs its four tests).
pub(crate) fn runs(cmd: Cmd) -> bool {
    matches!(cmd, Cmd::Frag | Cmd::Oom | Cmd::Util | Cmd::Churn | Cmd::All)
}

/// The CPU model's settings, recorded in the JSON (`cpu_model`).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub(crate) struct CpuModelInfo {
    /// What these numbers are.
    pub(crate) note: String,
    /// The CPU (from /proc/cpuinfo).
    pub(crate) cpu: String,
    /// OS threads, each one simulated multiprocessor.
    pub(crate) os_threads: u32,
    /// Current-block slots per class (the OS threads rounded up to a power of two).
    pub(crate) shards: u32,
    /// Heap of `frag`, `util` and `churn`.
    pub(crate) heap_bytes: u64,
    /// Requests per simulated launch.
    pub(crate) threads: u64,
    /// Heap of `oom`.
    pub(crate) oom_heap_bytes: u64,
    /// `frag`'s requests at sizes above a slice.
    pub(crate) frag_large_threads: u64,
    /// Settings that differ from what was asked (caps), and options the model ignores.
    pub(crate) adjustments: Vec<String>,
}

/// What the numbers of a CPU-model run are.
const NOTE: &str = "CPU model of the heap: the same allocator source on CPU threads over host memory; \
                    times are CPU wall times, not GPU times";

/// The CPU's name from /proc/cpuinfo's text (`model name`, else `Model`/`cpu model`).
pub(crate) fn cpu_name_from(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let k = k.trim();
        let v = v.trim();
        (matches!(k, "model name" | "Model" | "cpu model") && !v.is_empty()).then(|| v.to_string())
    })
}

/// This machine's CPU, as a label.
fn cpu_name() -> String {
    let name = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| cpu_name_from(&s));
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{} ({cores} cores)", name.unwrap_or_else(|| "unknown CPU".into()))
}

/// The device label of a CPU-model run (the `gpu` field of the files).
pub(crate) fn device_label(cpu: &str) -> String {
    format!("CPU model (no GPU): {cpu}")
}

/// Segments of a heap of `bytes` (at least one).
fn segments(bytes: u64) -> u32 {
    (bytes / SEGMENT_BYTES).clamp(1, u32::MAX as u64) as u32
}

/// Resolves the CPU model's settings: an option the user gave (`given`) is honoured (heaps
/// capped at `CPU_HEAP_MAX_BYTES`), the others take the CPU model's defaults.
pub(crate) fn settings(cli: &Cli, given: &dyn Fn(&str) -> bool, cpu: String) -> CpuModelInfo {
    let mut adjustments = Vec::new();
    let mut heap = |id: &str, flag: &str, asked: u64, default: u64| {
        if !given(id) {
            return default;
        }
        let clamped = asked.clamp(SEGMENT_BYTES, CPU_HEAP_MAX_BYTES);
        if clamped != asked {
            adjustments.push(format!(
                "{flag} {} MiB: the CPU model uses {} MiB (one segment .. {} MiB)",
                asked / MIB,
                clamped / MIB,
                CPU_HEAP_MAX_BYTES / MIB
            ));
        }
        clamped
    };
    let heap_bytes = heap("heap_gib", "--heap-gib", cli.heap_gib << 30, CPU_HEAP_BYTES);
    let oom_heap_bytes = heap("oom_heap_mib", "--oom-heap-mib", cli.oom_heap_mib * MIB, CPU_OOM_HEAP_BYTES);
    let heap_bytes = segments(heap_bytes) as u64 * SEGMENT_BYTES;
    let oom_heap_bytes = segments(oom_heap_bytes) as u64 * SEGMENT_BYTES;
    let threads = if given("threads") { cli.threads.max(1) } else { CPU_THREADS };
    let os_threads = cli.cpu_threads.clamp(1, MAX_OS_THREADS);
    if os_threads != cli.cpu_threads {
        adjustments.push(format!("--cpu-threads {}: {os_threads} OS threads", cli.cpu_threads));
    }
    if cli.peers.is_some() {
        adjustments.push("--peers: the peers are GPU binaries; not run in the CPU model".into());
    }
    let frag_large_threads =
        ((FRAG_LARGE_THREADS as u128 * heap_bytes as u128 / PROTOCOL_HEAP_BYTES as u128) as u64).max(1);
    CpuModelInfo {
        note: NOTE.into(),
        cpu,
        os_threads,
        shards: os_threads.next_power_of_two(),
        heap_bytes,
        threads,
        oom_heap_bytes,
        frag_large_threads,
        adjustments,
    }
}

/// How launches are simulated: `os_threads` OS threads, `shards` slots per class.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sim {
    pub(crate) os_threads: u32,
    pub(crate) shards: u32,
}

impl Sim {
    /// A fresh heap of `bytes` (whole segments, no checks: as the benchmarks on the GPU).
    pub(crate) fn heap(&self, bytes: u64) -> CpuHeap {
        CpuHeap::with_checks(segments(bytes), self.shards, false)
    }

    /// Simulates a launch of `n` threads: `warp(lo, hi)` runs once for every warp (threads
    /// lo..hi, 32 but the last), on the OS threads. OS thread t is multiprocessor t: the
    /// index the allocator sees is `warp * shards + t` (distinct per warp, as a global
    /// thread index, and `t` modulo the shards, as the SM). Returns the wall time in ms.
    pub(crate) fn launch(&self, n: u64, warp: impl Fn(u64, u64) + Sync) -> f64 {
        let warps = n.div_ceil(WARP);
        let next = AtomicU64::new(0);
        let start = Instant::now();
        std::thread::scope(|s| {
            for t in 0..self.os_threads.min(warps.max(1) as u32) {
                let (next, warp, shards) = (&next, &warp, self.shards as u64);
                s.spawn(move || loop {
                    // Relaxed: a work counter; what the warps wrote is read after the join.
                    let first = next.fetch_add(CHUNK_WARPS, Relaxed);
                    if first >= warps {
                        break;
                    }
                    for w in first..(first + CHUNK_WARPS).min(warps) {
                        set_host_thread_index(w * shards + t as u64);
                        warp(w * WARP, ((w + 1) * WARP).min(n));
                    }
                });
            }
        });
        start.elapsed().as_secs_f64() * 1e3
    }
}

/// Pointers of a launch: one word per thread.
fn words(n: u64) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

/// The heap handed back what was handed out: after a trim, nothing is in use.
fn check_empty(heap: &CpuHeap, what: &str) -> Res<()> {
    let h = heap.heap();
    h.trim();
    let s = h.validate().map_err(|e| format!("{what}: heap inconsistent after freeing everything: {e:?}"))?;
    if s.bytes_in_use != 0 {
        return Err(format!("{what}: {} bytes still in use after freeing everything", s.bytes_in_use).into());
    }
    Ok(())
}

/// `frag` at one point: `rounds` rounds of n requests (`sizes`) then n frees, on one heap;
/// the range handed out / requested bytes of each round.
pub(crate) fn frag_point(
    sim: Sim,
    heap_bytes: u64,
    sizes: Sizes,
    n: u64,
    rounds: u32,
    map: bool,
) -> Res<(Vec<FragPoint>, Option<FragMap>)> {
    let host = HostSizes::new(sizes, n);
    let size_of = |i: usize| host.of(i);
    let live = host.live();
    let heap = sim.heap(heap_bytes);
    let mut seg_map = None;
    let ptrs = words(n);
    let mut out = Vec::new();
    for round in 0..rounds.max(1) {
        sim.launch(n, |lo, hi| {
            let want: Vec<u64> = (lo..hi).map(|i| size_of(i as usize)).collect();
            for (i, p) in (lo..).zip(heap.warp_malloc(&want)) {
                // Relaxed: read after the launch's join.
                ptrs[i as usize].store(p as u64, Relaxed);
            }
        });
        // Relaxed: the launch's threads were joined.
        let got: Vec<u64> = ptrs.iter().map(|p| p.load(Relaxed)).collect();
        let (range, nulls) = Bench::range_of(&got, size_of);
        if map && round == 0 {
            let h = heap.heap();
            seg_map = Some(frag_map(h.mem(), &h.segment_uses(), &got, size_of, sizes, n));
        }
        sim.launch(n, |lo, hi| {
            for p in &ptrs[lo as usize..hi as usize] {
                // Relaxed: this warp's own words, stored before the previous join.
                let q = p.swap(0, Relaxed);
                if q != 0 {
                    // SAFETY: q is this warp's block from the heap's malloc (stored by the launch above,
                    // joined), taken out of its slot by the swap: freed once, unused after.
                    unsafe { heap.heap().free(q as *mut u8) };
                }
            }
        });
        out.push(FragPoint {
            allocator: "veballoc".into(),
            size: sizes.label(),
            mixed: matches!(sizes, Sizes::Mixed(_)),
            round,
            threads: n,
            range_bytes: range,
            live_bytes: live,
            ratio: range as f64 / live as f64,
            nulls,
        });
    }
    check_empty(&heap, &format!("frag {}", sizes.label()))?;
    Ok((out, seg_map))
}

/// `oom` at one size: 1.1x more requests of `size` than fit in a heap of `heap_bytes`, in
/// one launch; bytes handed out / heap.
pub(crate) fn oom_point(sim: Sim, heap_bytes: u64, size: u64) -> OomPoint {
    let threads = (heap_bytes / size) * 11 / 10 + 64;
    let heap = sim.heap(heap_bytes);
    let served = AtomicU64::new(0);
    let ms = sim.launch(threads, |lo, hi| {
        let want = vec![size; (hi - lo) as usize];
        let got = heap.warp_malloc(&want).iter().filter(|p| !p.is_null()).count() as u64;
        // Relaxed: a count read after the join.
        served.fetch_add(got, Relaxed);
    });
    // Relaxed: the launch was joined.
    let served = served.load(Relaxed);
    OomPoint {
        allocator: "veballoc".into(),
        size,
        threads,
        served,
        heap_bytes,
        share: (served * size) as f64 / heap_bytes as f64,
        ms,
    }
}

/// `util` at one size or range: a fresh heap filled in batches of about 1/`UTIL_BATCHES` of
/// it with sizes uniform in [lo, hi] (drawn as `util_fill` draws them) until null; `progress`
/// sees the batch, the requested bytes so far and the nulls.
pub(crate) fn util_point(
    sim: Sim,
    heap_bytes: u64,
    lo: u64,
    hi: u64,
    progress: &dyn Fn(u32, u64, u64),
) -> UtilPoint {
    let heap = sim.heap(heap_bytes);
    let capacity = heap.heap().capacity();
    let batch_threads = (capacity / ((lo + hi) / 2) / UTIL_BATCHES).max(1);
    // Requested bytes served, requests served, nulls (as `util_fill`'s counters).
    let (bytes, served, nulls) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let (mut first_null, mut at_first, mut ms, mut batches) = (None, 0u64, 0.0, 0u32);
    while batches < UTIL_MAX_BATCHES {
        let seed = UTIL_SEED ^ ((batches as u64) << UTIL_SEED_SHIFT);
        // Relaxed: counters read between launches (after their joins).
        let before = served.load(Relaxed);
        ms += sim.launch(batch_threads, |a, b| {
            let want: Vec<u64> = (a..b).map(|i| lo + mix(seed ^ i) % (hi - lo + 1)).collect();
            let got = heap.warp_malloc(&want);
            let ok: u64 = want.iter().zip(&got).filter(|(_, p)| !p.is_null()).map(|(s, _)| s).sum();
            let n_ok = got.iter().filter(|p| !p.is_null()).count() as u64;
            // Relaxed: counts read after the join.
            bytes.fetch_add(ok, Relaxed);
            served.fetch_add(n_ok, Relaxed);
            nulls.fetch_add(got.len() as u64 - n_ok, Relaxed);
        });
        batches += 1;
        // Relaxed: the launch was joined.
        let (b, s, z) = (bytes.load(Relaxed), served.load(Relaxed), nulls.load(Relaxed));
        progress(batches, b, z);
        if z > 0 && first_null.is_none() {
            first_null = Some(batches - 1);
            at_first = b;
        }
        let after_null = first_null.map_or(0, |f| batches - 1 - f);
        if s == before || after_null >= UTIL_BATCHES_AFTER_NULL {
            break;
        }
    }
    // Relaxed: every launch was joined.
    let (b, s, z) = (bytes.load(Relaxed), served.load(Relaxed), nulls.load(Relaxed));
    UtilPoint {
        allocator: "veballoc".into(),
        lo,
        hi,
        capacity,
        batch_threads,
        batches,
        first_null_batch: first_null,
        bytes_at_first_null: at_first,
        share_at_first_null: at_first as f64 / capacity as f64,
        bytes_max: b,
        share_max: b as f64 / capacity as f64,
        requests: s,
        nulls: z,
        ms,
    }
}

/// `churn`'s counters (as `churn_round`'s): live requested bytes and allocations (wrapping
/// sums), nulls, wrong check words, segment runs served, live bytes at the first null.
#[derive(Default)]
struct ChurnCounters {
    live_bytes: AtomicU64,
    live_count: AtomicU64,
    nulls: AtomicU64,
    bad_words: AtomicU64,
    runs: AtomicU64,
    first_null_live: AtomicU64,
}

/// One churn round over the n simulated threads (`churn_round` on the device): a holder frees
/// with probability `free_p` / 2^32 (checking the first and last word it wrote), then each
/// thread holding nothing asks with probability `alloc_p` / 2^32 for a size of `law`; a
/// warp's requests go together (`warp_malloc`).
#[allow(clippy::too_many_arguments)]
fn churn_round(
    sim: Sim,
    heap: &CpuHeap,
    ptrs: &[AtomicU64],
    sizes: &[AtomicU32],
    round: u64,
    free_p: u64,
    alloc_p: u64,
    law: &ChurnLaw,
    c: &ChurnCounters,
) -> f64 {
    let h = heap.heap();
    sim.launch(ptrs.len() as u64, |lo, hi| {
        let mut want: Vec<(u64, u64)> = Vec::new();
        for i in lo..hi {
            let r = round_draw(CHURN_SEED, i, round);
            // Relaxed: thread i's own slot, written by its warp in an earlier (joined) launch.
            let held = ptrs[i as usize].load(Relaxed) as *mut u32;
            let mut holds = !held.is_null();
            if holds && (r & PROB_MASK) < free_p {
                // Relaxed: as above.
                let size = sizes[i as usize].load(Relaxed) as u64;
                let want_word = pattern(i, size);
                // SAFETY: `held` came from this heap's malloc for `size` (>= 16) bytes, is held
                // by thread i alone, and its first and last words were written when it came.
                let bad = unsafe {
                    (held.read() != want_word) as u64
                        + (held.add((size / 4 - 1) as usize).read() != want_word) as u64
                };
                if bad != 0 {
                    // Relaxed: counts read after the join.
                    c.bad_words.fetch_add(bad, Relaxed);
                }
                // SAFETY: `held` came from this heap's malloc, is thread i's alone (as above), freed once
                // here and forgotten (its slot is cleared next).
                unsafe { h.free(held as *mut u8) };
                // Relaxed: as above (this thread's slot; running sums read after the join).
                ptrs[i as usize].store(0, Relaxed);
                c.live_bytes.fetch_sub(size, Relaxed);
                c.live_count.fetch_sub(1, Relaxed);
                holds = false;
            }
            let r2 = mix(r);
            if !holds && (r2 & PROB_MASK) < alloc_p {
                want.push((i, law.size(mix(r2 ^ round))));
            }
        }
        if want.is_empty() {
            return;
        }
        let got = heap.warp_malloc(&want.iter().map(|w| w.1).collect::<Vec<_>>());
        for (&(i, size), q) in want.iter().zip(got) {
            let q = q as *mut u32;
            if q.is_null() {
                // Relaxed: counts read after the join. The CAS lets only the first null's
                // value land (the host set the word to NO_NULL), as on the device.
                c.nulls.fetch_add(1, Relaxed);
                let now = c.live_bytes.load(Relaxed);
                let _ = c.first_null_live.compare_exchange(NO_NULL, now, Relaxed, Relaxed);
                continue;
            }
            let w = pattern(i, size);
            // SAFETY: q was handed out by this heap for `size` (>= 16) bytes to thread i alone.
            unsafe {
                q.write(w);
                q.add((size / 4 - 1) as usize).write(w);
            }
            // Relaxed: thread i's slot (read in a later launch, after a join); running sums
            // read after the join.
            ptrs[i as usize].store(q as u64, Relaxed);
            sizes[i as usize].store(size as u32, Relaxed);
            c.live_bytes.fetch_add(size, Relaxed);
            c.live_count.fetch_add(1, Relaxed);
            if size > SEGMENT_BYTES {
                c.runs.fetch_add(1, Relaxed);
            }
        }
    })
}

/// `churn`: `rounds` rounds over n simulated threads on one heap of `heap_bytes`, each
/// holding at most one allocation of the churn law's sizes, keeping about `live` of the heap
/// live, no trim; then a round that frees everything. One point per round (the last: the
/// freeing round); `progress` sees each. Fails on a wrong check word or if anything stays
/// live or in use at the end.
pub(crate) fn churn_points(
    sim: Sim,
    heap_bytes: u64,
    n: u64,
    rounds: u32,
    live: f64,
    progress: &mut dyn FnMut(&ChurnPoint),
) -> Res<Vec<ChurnPoint>> {
    let law = CHURN_LAW;
    let heap = sim.heap(heap_bytes);
    let capacity = heap.heap().capacity();
    let target = live * capacity as f64;
    let ptrs = words(n);
    let sizes: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let c = ChurnCounters { first_null_live: AtomicU64::new(NO_NULL), ..Default::default() };
    let mut first_null: Option<f64> = None;
    let mut out = Vec::new();
    let mut nulls_before = 0;
    for round in 0..=rounds {
        let last = round == rounds;
        // Relaxed: counters read between launches (after their joins).
        let (live_b, holders) = (c.live_bytes.load(Relaxed) as f64, c.live_count.load(Relaxed) as f64);
        let share = if last {
            0.0
        } else {
            churn_alloc_share(target, live_b, holders, n as f64, CHURN_FREE_SHARE, law.mean())
        };
        let free_p = threshold(if last { 1.0 } else { CHURN_FREE_SHARE });
        let ms = churn_round(sim, &heap, &ptrs, &sizes, round as u64, free_p, threshold(share), &law, &c);
        // Relaxed: the launch was joined.
        let (lb, lc, nulls, fnl) = (
            c.live_bytes.load(Relaxed),
            c.live_count.load(Relaxed),
            c.nulls.load(Relaxed),
            c.first_null_live.load(Relaxed),
        );
        if first_null.is_none() && fnl != NO_NULL {
            first_null = Some(fnl as f64 / capacity as f64);
        }
        let p = ChurnPoint {
            round,
            threads: n,
            capacity,
            live_bytes: lb,
            live_share: lb as f64 / capacity as f64,
            live_allocations: lc,
            alloc_share: share,
            nulls: nulls - nulls_before,
            nulls_total: nulls,
            // Relaxed: as above.
            runs_total: c.runs.load(Relaxed),
            first_null_live_share: first_null,
            ms,
        };
        nulls_before = nulls;
        progress(&p);
        out.push(p);
    }
    // Relaxed: every launch was joined.
    let bad = c.bad_words.load(Relaxed);
    if bad != 0 {
        return Err(format!("churn: {bad} wrong words (allocations overlapped)").into());
    }
    let (lb, lc) = (c.live_bytes.load(Relaxed), c.live_count.load(Relaxed));
    if lb != 0 || lc != 0 {
        return Err(format!(
            "churn: after freeing everything {} bytes in {} allocations still count as live",
            lb as i64, lc as i64
        )
        .into());
    }
    check_empty(&heap, "churn")?;
    Ok(out)
}

/// A CPU-model run: its settings and what it recorded.
pub(crate) struct CpuModel {
    pub(crate) cli: Cli,
    pub(crate) info: CpuModelInfo,
    pub(crate) frag: Vec<FragPoint>,
    pub(crate) frag_maps: Vec<FragMap>,
    pub(crate) oom: Vec<OomPoint>,
    pub(crate) util: Vec<UtilPoint>,
    pub(crate) churn: Vec<ChurnPoint>,
}

impl CpuModel {
    pub(crate) fn new(cli: Cli, info: CpuModelInfo) -> CpuModel {
        CpuModel {
            cli,
            info,
            frag: Vec::new(),
            frag_maps: Vec::new(),
            oom: Vec::new(),
            util: Vec::new(),
            churn: Vec::new(),
        }
    }

    fn sim(&self) -> Sim {
        Sim { os_threads: self.info.os_threads, shards: self.info.shards }
    }

    fn gib(bytes: u64) -> String {
        format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
    }

    /// `frag` in the CPU model (the GPU's sizes; CUDA malloc and the peers do not run).
    pub(crate) fn frag(&mut self, singles: Vec<u64>) -> Res<()> {
        let (n, heap) = (self.info.threads, self.info.heap_bytes);
        let large = frag_threads(n, SLICE_MAX + 1, false).min(self.info.frag_large_threads);
        println!(
            "\nfrag [CPU model]: {n} threads ({large} above {SLICE_MAX} B), {} alloc/free rounds on one {} heap; \
             range handed out / live bytes",
            self.cli.rounds,
            Self::gib(heap)
        );
        println!(
            "{:>10} {:>8} | {:>22} {:>7} | {:>9}",
            "size", "threads", "veballoc (round 0, max)", "nulls", "cpu ms"
        );
        let list =
            singles.into_iter().map(|s| (false, s)).chain(FRAG_MIXED_MAXIMA.into_iter().map(|s| (true, s)));
        for (mixed, s) in list {
            let n = if !mixed && s > SLICE_MAX { large } else { n };
            eprint!("  [frag {s} x {n}] ...\r");
            let sizes = if mixed { Sizes::Mixed(s) } else { Sizes::Fixed(s) };
            let t = Instant::now();
            let (pts, seg_map) = frag_point(self.sim(), heap, sizes, n, self.cli.rounds, self.cli.frag_map)?;
            self.frag_maps.extend(seg_map);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let max = pts.iter().map(|p| p.ratio).fold(0.0, f64::max);
            let nulls = pts.iter().map(|p| p.nulls).max().unwrap_or(0);
            if nulls > 0 {
                eprintln!("warning: frag [CPU model]: up to {nulls} nulls per round at {s} x {n}");
            }
            println!(
                "{:>10} {n:>8} | {:>22} {nulls:>7} | {ms:>9.1}",
                if mixed { format!("mixed≤{s}") } else { s.to_string() },
                format!("{:.3}x, {:.3}x", pts[0].ratio, max),
            );
            self.frag.extend(pts);
        }
        Ok(())
    }

    /// `oom` in the CPU model.
    pub(crate) fn oom(&mut self, list: Vec<u64>) -> Res<()> {
        let heap = self.info.oom_heap_bytes;
        println!(
            "\noom [CPU model]: {} MiB heap, 1.1x more requests than fit; bytes handed out before null / heap",
            heap / MIB
        );
        println!("{:>10} | {:>10} | {:>10} | {:>8} | {:>9}", "size", "threads", "served", "share", "cpu ms");
        for s in list {
            eprint!("  [oom {s}] ...\r");
            let p = oom_point(self.sim(), heap, s);
            println!(
                "{s:>10} | {:>10} | {:>10} | {:>7.2}% | {:>9.1}",
                p.threads,
                p.served,
                100.0 * p.share,
                p.ms
            );
            self.oom.push(p);
        }
        Ok(())
    }

    /// `util` in the CPU model.
    pub(crate) fn util(&mut self, list: Vec<(u64, u64)>) -> Res<()> {
        println!(
            "\nutil [CPU model]: {} heap filled in batches of ~1/{UTIL_BATCHES} until null; requested bytes live / \
             capacity",
            Self::gib(self.info.heap_bytes)
        );
        println!(
            "{:>19} | {:>9} {:>7} | {:>8} {:>9} | {:>8} | {:>10} {:>10} | {:>9}",
            "size", "batch", "batches", "1st null", "share", "max", "requests", "nulls", "cpu ms"
        );
        for (lo, hi) in list {
            let label = if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") };
            let heap = self.info.heap_bytes;
            let progress = |b: u32, bytes: u64, nulls: u64| {
                eprint!(
                    "  [util {label}] batch {b}: {:.1}% of the heap, {nulls} nulls   \r",
                    100.0 * bytes as f64 / heap as f64
                )
            };
            let pt = util_point(self.sim(), heap, lo, hi, &progress);
            println!(
                "{label:>19} | {:>9} {:>7} | {:>8} {:>8.2}% | {:>7.2}% | {:>10} {:>10} | {:>9.1}",
                pt.batch_threads,
                pt.batches,
                pt.first_null_batch.map_or("none".to_string(), |b| b.to_string()),
                100.0 * pt.share_at_first_null,
                100.0 * pt.share_max,
                pt.requests,
                pt.nulls,
                pt.ms
            );
            if pt.first_null_batch.is_none() {
                eprintln!("warning: util [CPU model] {label}: no null within {UTIL_MAX_BATCHES} batches");
            }
            self.util.push(pt);
        }
        Ok(())
    }

    /// `churn` in the CPU model.
    pub(crate) fn churn(&mut self) -> Res<()> {
        let (n, law, rounds) = (self.info.threads, CHURN_LAW, self.cli.churn_rounds);
        println!(
            "\nchurn [CPU model]: {n} threads, {rounds} rounds, {} heap, sizes 16 B .. 1 MiB (mean {:.0} B), 1 in {} \
             a {}-{} MiB run; holders free with p = {CHURN_FREE_SHARE}; target live {:.0}% of the heap; no trim",
            Self::gib(self.info.heap_bytes),
            law.mean(),
            law.run_odds,
            law.run_lo / MIB,
            law.run_hi / MIB,
            100.0 * self.cli.churn_live
        );
        println!(
            "{:>6} | {:>8} {:>10} | {:>7} | {:>8} {:>9} | {:>5} | {:>9}",
            "round", "live", "allocs", "p new", "nulls", "total", "runs", "cpu ms"
        );
        let mut show = |p: &ChurnPoint| {
            println!(
                "{:>6} | {:>7.2}% {:>10} | {:>7.4} | {:>8} {:>9} | {:>5} | {:>9.1}",
                if p.round == rounds { "free".to_string() } else { p.round.to_string() },
                100.0 * p.live_share,
                p.live_allocations,
                p.alloc_share,
                p.nulls,
                p.nulls_total,
                p.runs_total,
                p.ms
            )
        };
        let pts = churn_points(self.sim(), self.info.heap_bytes, n, rounds, self.cli.churn_live, &mut show)?;
        let first = pts.iter().find(|p| p.nulls > 0);
        match (first, pts.last().and_then(|p| p.first_null_live_share)) {
            (Some(p), Some(share)) => println!(
                "churn [CPU model]: first null in round {} with {:.2}% of the heap live; {} nulls in all",
                p.round,
                100.0 * share,
                pts.last().map_or(0, |p| p.nulls_total)
            ),
            _ => println!("churn [CPU model]: no null in {rounds} rounds"),
        }
        self.churn = pts;
        Ok(())
    }

    /// What `save` writes.
    pub(crate) fn results(&self) -> Record<'_> {
        Record {
            device: device_label(&self.info.cpu),
            driver: 0,
            cli: &self.cli,
            threads: self.info.threads,
            heap_bytes: self.info.heap_bytes,
            points: &[],
            frag: &self.frag,
            frag_maps: &self.frag_maps,
            oom: &self.oom,
            util: &self.util,
            churn: &self.churn,
            peer_labels: Vec::new(),
            peer_runs: &[],
            cpu_model: Some(self.info.clone()),
        }
    }
}

/// Runs `cmd` (one of `CPU_TESTS`, or `all`) in the CPU model after `Gpu::new` found no GPU
/// (`why`); `given` says which options were on the command line. Returns the exit status.
pub(crate) fn main(mut cli: Cli, given: &dyn Fn(&str) -> bool, why: &str, lists: &crate::SizeLists) -> i32 {
    let info = settings(&cli, given, cpu_name());
    if !given("out") {
        cli.out = PathBuf::from(CPU_OUT);
    }
    println!(
        "no usable CUDA GPU ({why}): running the CPU model of the heap — the same allocator source on CPU \
         threads; times are CPU times, not GPU times"
    );
    println!(
        "{} | {} OS threads as {} multiprocessors ({} slots per class) | heap {} MiB, oom heap {} MiB, {} threads \
         per launch | rev {}",
        device_label(&info.cpu),
        info.os_threads,
        info.os_threads,
        info.shards,
        info.heap_bytes / MIB,
        info.oom_heap_bytes / MIB,
        info.threads,
        env!("VEBALLOC_GIT_REV")
    );
    for a in &info.adjustments {
        println!("note: {a}");
    }
    let cmd = cli.cmd;
    if cmd == Cmd::All {
        println!(
            "all [CPU model]: runs {}; skipped (they need a GPU): {}",
            CPU_TESTS.join(", "),
            GPU_ONLY_TESTS.join(", ")
        );
    }
    let mut m = CpuModel::new(cli, info);
    let result = (|| -> Res<()> {
        if matches!(cmd, Cmd::Frag | Cmd::All) {
            m.frag(lists.frag.clone())?;
        }
        if matches!(cmd, Cmd::Oom | Cmd::All) {
            m.oom(lists.oom.clone())?;
        }
        if matches!(cmd, Cmd::Util | Cmd::All) {
            m.util(lists.util.clone())?;
        }
        if matches!(cmd, Cmd::Churn | Cmd::All) {
            m.churn()?;
        }
        Ok(())
    })();
    let name = match cmd {
        Cmd::Frag => "frag",
        Cmd::Oom => "oom",
        Cmd::Util => "util",
        Cmd::Churn => "churn",
        _ => "all",
    };
    let saved = m.results().save(name);
    if let Err(e) = &saved {
        eprintln!("veballoc-bench: could not write results: {e}");
    }
    if cmd == Cmd::All {
        println!(
            "all [CPU model]: ran {}; skipped (they need a GPU): {}",
            CPU_TESTS.join(", "),
            GPU_ONLY_TESTS.join(", ")
        );
    }
    match result {
        Ok(()) if saved.is_ok() => 0,
        Ok(()) => 1,
        Err(e) => {
            eprintln!("veballoc-bench [CPU model]: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Two OS threads on two slots: what the tests run.
    const SIM: Sim = Sim { os_threads: 2, shards: 2 };
    /// A two-segment heap (32 MiB).
    const SMALL_HEAP: u64 = 2 * SEGMENT_BYTES;

    #[test]
    fn launch_runs_every_thread_once_in_warps() {
        let n = 1000u64;
        let seen: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        let warps = AtomicU64::new(0);
        SIM.launch(n, |lo, hi| {
            assert!(hi > lo && hi - lo <= WARP && lo % WARP == 0, "warp {lo}..{hi}");
            warps.fetch_add(1, Relaxed);
            for i in lo..hi {
                seen[i as usize].fetch_add(1, Relaxed);
            }
        });
        assert!(seen.iter().all(|s| s.load(Relaxed) == 1));
        assert_eq!(warps.load(Relaxed), n.div_ceil(WARP));
        SIM.launch(0, |_, _| panic!("no warps in an empty launch"));
    }

    #[test]
    fn util_of_16_byte_requests_fills_the_heap() {
        let batches = AtomicU32::new(0);
        let p = util_point(SIM, SMALL_HEAP, 16, 16, &|b, _, _| batches.store(b, Relaxed));
        assert_eq!(p.capacity, SMALL_HEAP);
        assert!(p.first_null_batch.is_some(), "filled until null");
        assert!(p.share_at_first_null > 0.9 && p.share_at_first_null <= 1.0, "{}", p.share_at_first_null);
        assert!(p.share_max >= p.share_at_first_null && p.share_max <= 1.0);
        assert_eq!(p.bytes_max, 16 * p.requests);
        assert!(p.nulls > 0);
        assert_eq!(batches.load(Relaxed), p.batches, "progress saw every batch");
    }

    #[test]
    fn util_of_a_range_stays_a_share() {
        let p = util_point(SIM, SMALL_HEAP, 16, 4096, &|_, _, _| {});
        assert!(p.share_max > 0.0 && p.share_max <= 1.0, "{}", p.share_max);
        assert!(p.requests > 0 && p.nulls > 0);
    }

    #[test]
    fn frag_rounds_measure_the_range() {
        let n = 4096;
        let pts = frag_point(SIM, SMALL_HEAP, Sizes::Fixed(64), n, 3, false).unwrap().0;
        assert_eq!(pts.len(), 3);
        // The range covers the live bytes and lies in the heap. (Where in a segment the
        // blocks of a few thousand requests land depends on which warp claims first: racing
        // claimers spread over the free blocks, so the ratio of a small run varies.)
        let most = SMALL_HEAP as f64 / (64 * n) as f64;
        for (r, p) in pts.iter().enumerate() {
            assert_eq!((p.round, p.threads, p.live_bytes, p.nulls), (r as u32, n, 64 * n, 0));
            assert!(p.ratio >= 1.0 && p.ratio <= most, "round {r}: {}", p.ratio);
        }
        // Mixed sizes 16..512 B span six slice classes, each formatting its own segment.
        let heap = 8 * SEGMENT_BYTES;
        let (pts, map) = frag_point(SIM, heap, Sizes::Mixed(512), n, 1, true).unwrap();
        let m = &pts[0];
        // The map holds every live byte, in the segments the range spans.
        let map = map.expect("a map with --frag-map");
        assert_eq!(map.segments.iter().map(|r| r.live_bytes).sum::<u64>(), m.live_bytes);
        assert!(map.segments.iter().filter(|r| r.live_bytes > 0).all(|r| r.kind.starts_with('g')));
        let most = heap as f64 / m.live_bytes as f64;
        assert!(
            m.mixed && m.ratio >= 1.0 && m.ratio <= most && m.nulls == 0,
            "ratio {}, {} nulls",
            m.ratio,
            m.nulls
        );
    }

    #[test]
    fn oom_hands_out_most_of_the_heap() {
        let p = oom_point(SIM, SMALL_HEAP, 4096);
        assert_eq!(p.threads, SMALL_HEAP / 4096 * 11 / 10 + 64);
        assert!(p.served < p.threads, "some requests got null");
        assert!(p.share > 0.9 && p.share <= 1.0, "{}", p.share);
    }

    #[test]
    fn churn_reports_every_round_and_ends_empty() {
        let mut seen = 0;
        let pts = churn_points(SIM, 4 * SEGMENT_BYTES, 2048, 5, 0.5, &mut |_| seen += 1).unwrap();
        assert_eq!(pts.len(), 6, "five rounds and the freeing round");
        assert_eq!(seen, 6);
        assert!(pts[0].live_bytes > 0 && pts[0].alloc_share > 0.0);
        assert!(pts[..5].iter().all(|p| p.live_share <= 1.0));
        let last = pts.last().unwrap();
        assert_eq!((last.live_bytes, last.live_allocations, last.alloc_share), (0, 0, 0.0));
    }

    #[test]
    fn churn_on_a_tight_heap_counts_nulls() {
        // One segment, target 100% live: requests run out, and the first null is recorded.
        let pts = churn_points(SIM, SEGMENT_BYTES, 4096, 4, 1.0, &mut |_| {}).unwrap();
        let last = pts.last().unwrap();
        assert!(last.nulls_total > 0, "a full one-segment heap returns nulls");
        assert!(last.first_null_live_share.is_some_and(|s| (0.0..=1.0).contains(&s)));
    }

    #[test]
    fn frag_map_is_saved_as_csv_and_one_plot_a_point() {
        let out = std::env::temp_dir().join(format!("vb-frag-map-{}", std::process::id()));
        let arg = |s: &str| s.to_string();
        let cli = Cli::try_parse_from([
            arg("veballoc-bench"),
            arg("frag"),
            arg("--frag-map"),
            arg("--rounds"),
            arg("1"),
            arg("--out"),
            out.display().to_string(),
        ])
        .unwrap();
        let info = CpuModelInfo {
            heap_bytes: 8 * SEGMENT_BYTES,
            threads: 4096,
            os_threads: SIM.os_threads,
            shards: SIM.shards,
            ..settings(&cli, &|_| false, "cpu".into())
        };
        let mut m = CpuModel::new(cli, info);
        m.frag(vec![64]).unwrap();
        assert_eq!(m.frag_maps.len(), 1 + FRAG_MIXED_MAXIMA.len(), "a map a point");
        m.results().save("frag").unwrap();
        let csv = std::fs::read_to_string(out.join("frag-frag-map.csv")).unwrap();
        assert!(csv.lines().nth(2).is_some_and(|l| l.starts_with("64,false,4096,")), "{csv}");
        assert!(
            out.join("frag-frag-map-64.svg").exists() && out.join("frag-frag-map-mixed-512.svg").exists()
        );
        std::fs::remove_dir_all(&out).ok();
    }

    #[test]
    fn a_run_whose_results_cannot_be_written_fails() {
        // --out under a regular file: create_dir_all fails, nothing is written.
        let file = std::env::temp_dir().join(format!("vb-not-a-dir-{}", std::process::id()));
        std::fs::write(&file, "").unwrap();
        let out = file.join("out");
        let cli = Cli::try_parse_from(["veballoc-bench", "oom", "--out", out.to_str().unwrap()]).unwrap();
        let lists = crate::SizeLists { frag: vec![], oom: vec![16 << 20], util: vec![] };
        let rc = main(cli, &|id| id == "out", "test", &lists);
        std::fs::remove_file(&file).ok();
        assert!(!out.exists());
        assert_ne!(rc, 0, "no result file was written, yet the run reports success");
    }

    #[test]
    fn reads_the_cpu_name() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n";
        assert_eq!(cpu_name_from(x86).as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(cpu_name_from("processor : 0\nmodel name :\n"), None);
        assert_eq!(device_label("X"), "CPU model (no GPU): X");
    }

    #[test]
    fn settings_default_small_and_honour_caps() {
        let cli = Cli::try_parse_from(["veballoc-bench", "all"]).unwrap();
        let s = settings(&cli, &|_| false, "cpu".into());
        assert_eq!(
            (s.heap_bytes, s.threads, s.oom_heap_bytes),
            (CPU_HEAP_BYTES, CPU_THREADS, CPU_OOM_HEAP_BYTES)
        );
        assert_eq!((s.os_threads, s.shards), (4, 4));
        assert_eq!(s.frag_large_threads, FRAG_LARGE_THREADS / 8, "scaled with the heap");
        assert!(s.adjustments.is_empty());
        let cli = Cli::try_parse_from([
            "veballoc-bench",
            "util",
            "--heap-gib",
            "64",
            "--threads",
            "1000",
            "--cpu-threads",
            "3",
        ])
        .unwrap();
        let s = settings(&cli, &|id| id == "heap_gib" || id == "threads", "cpu".into());
        assert_eq!(s.heap_bytes, CPU_HEAP_MAX_BYTES, "capped");
        assert_eq!(s.threads, 1000);
        assert_eq!((s.os_threads, s.shards), (3, 4), "shards: a power of two");
        assert_eq!(s.adjustments.len(), 1, "{:?}", s.adjustments);
    }

    #[test]
    fn files_say_cpu_model() {
        let out = std::env::temp_dir().join(format!("veballoc-cpu-model-test-{}", std::process::id()));
        let out_s = out.to_str().unwrap();
        let cli = Cli::try_parse_from(["veballoc-bench", "all", "--out", out_s]).unwrap();
        let info = CpuModelInfo {
            heap_bytes: SMALL_HEAP,
            threads: 512,
            ..settings(&cli, &|_| false, "Test CPU".into())
        };
        let mut m = CpuModel::new(cli, info);
        m.util.push(util_point(SIM, SMALL_HEAP, 4096, 4096, &|_, _, _| {}));
        m.oom.push(oom_point(SIM, SEGMENT_BYTES, 65536));
        m.results().save("all").unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("all.json")).unwrap()).unwrap();
        assert_eq!(json["gpu"], "CPU model (no GPU): Test CPU");
        assert_eq!(json["cpu_model"]["note"], NOTE);
        assert_eq!(json["cpu_model"]["shards"], 4);
        assert_eq!(json["heap_bytes"], SMALL_HEAP);
        assert_eq!(json["util"].as_array().unwrap().len(), 1);
        for f in ["all-util.csv", "all-oom.csv"] {
            let t = std::fs::read_to_string(out.join(f)).unwrap();
            assert!(t.starts_with("# gpu=CPU model (no GPU): Test CPU driver=0 "), "{f}: {t}");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn runs_the_memory_tests_only() {
        for c in [Cmd::Frag, Cmd::Oom, Cmd::Util, Cmd::Churn, Cmd::All] {
            assert!(runs(c));
        }
        for c in [
            Cmd::Single,
            Cmd::Mixed,
            Cmd::Scaling,
            Cmd::Init,
            Cmd::Warm,
            Cmd::Packed,
            Cmd::Collective,
            Cmd::Host,
            Cmd::Collections,
        ] {
            assert!(!runs(c));
        }
    }
}
