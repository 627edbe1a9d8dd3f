//! veballoc's benchmark harness: the field's protocol (shared/anchors.md) for veballoc, the
//! allocation and free floors, CUDA's device malloc and the peer allocators' binaries
//! (`--peers`), in one run, with CSV, JSON and SVG results. One module per test family;
//! `common` and `report` are the shared timing and recording core.

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use veballoc::Gpu;

mod collections;
mod common;
mod cpu_model;
mod floors;
mod host;
mod memory;
mod packed;
mod peers;
mod plot;
mod report;
mod scaling;
mod single;

use crate::common::{Bench, Res};

#[derive(Parser)]
#[command(
    about = "veballoc benchmark harness: veballoc against the allocation/free floors, CUDA malloc and peer allocators"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
    /// Threads (allocations) per kernel.
    #[arg(long, default_value_t = 1 << 20, global = true)]
    pub(crate) threads: u64,
    /// Iterations per point (fresh heap each).
    #[arg(long, default_value_t = 5, global = true)]
    pub(crate) iters: u32,
    /// Heap size in GiB.
    #[arg(long, default_value_t = 8, global = true)]
    pub(crate) heap_gib: u64,
    /// Sizes (bytes, comma-separated) for single, warm, frag, oom, util, collective; maxima
    /// for mixed and packed.
    #[arg(long, value_delimiter = ',', global = true)]
    pub(crate) sizes: Option<Vec<u64>>,
    /// Allocators to run: veballoc, floor (the sharded floors; "bump" names it too), cuda.
    #[arg(long, value_delimiter = ',', default_values_t = ["veballoc".to_string(), "floor".into(), "cuda".into()], global = true)]
    pub(crate) allocators: Vec<String>,
    /// Sizes at which CUDA malloc is run (it takes seconds at some sizes and over a minute at
    /// 512 and 1024 B in the published figures).
    #[arg(long, value_delimiter = ',', default_values_t = [16u64, 32, 64, 128, 2048], global = true)]
    pub(crate) cuda_sizes: Vec<u64>,
    /// Iterations for CUDA malloc points.
    #[arg(long, default_value_t = 1, global = true)]
    pub(crate) cuda_iters: u32,
    /// The GPU to run on (its ordinal; `veballoc::devices()` lists them). Peers run there too.
    #[arg(long, default_value_t = 0, global = true)]
    pub(crate) device: u32,
    /// JIT register cap for veballoc's kernels (0: none).
    #[arg(long, default_value_t = veballoc::DEFAULT_MAX_REGISTERS, global = true)]
    pub(crate) maxreg: u32,
    /// Alloc/free rounds per point of `frag`.
    #[arg(long, default_value_t = 5, global = true)]
    pub(crate) rounds: u32,
    /// Heap size for `oom`, in MiB.
    #[arg(long, default_value_t = 1024, global = true)]
    pub(crate) oom_heap_mib: u64,
    /// Most live allocations in `host` (powers of ten up to this).
    #[arg(long, default_value_t = 1_000_000, global = true)]
    pub(crate) host_max_live: u64,
    /// Folder holding the peer binaries' `bin/` (e.g. ../shared/peers): runs them at the
    /// same points (single, mixed, scaling, frag) with the same threads, heap, iterations
    /// and warm-up, and records their rows and veballoc's ratios to them.
    #[arg(long, global = true)]
    pub(crate) peers: Option<PathBuf>,
    /// Peers to run with --peers: gallatin, cuda (CUDA malloc, only at --cuda-sizes with
    /// --cuda-iters), ouro_p_s, ouro_c_s.
    #[arg(long, value_delimiter = ',', default_values_t = ["gallatin".to_string()], global = true)]
    pub(crate) peers_list: Vec<String>,
    /// Seconds a peer invocation may run before it is killed (and reported).
    #[arg(long, default_value_t = 300, global = true)]
    pub(crate) peer_timeout_s: u64,
    /// Size ranges (lo-hi, bytes, comma-separated) `util` fills with uniform random sizes,
    /// after the single sizes.
    #[arg(long, value_delimiter = ',', default_values_t = ["16-4096".to_string(), "4096-1048576".into()], global = true)]
    pub(crate) util_ranges: Vec<String>,
    /// Rounds of `churn`.
    #[arg(long, default_value_t = 40, global = true)]
    pub(crate) churn_rounds: u32,
    /// Share of the heap `churn` keeps live (requested bytes).
    #[arg(long, default_value_t = 0.5, global = true)]
    pub(crate) churn_live: f64,
    /// Output folder for CSV and JSON (the CPU model's default: bench/results/cpu-model).
    #[arg(long, default_value = "bench/results/latest", global = true)]
    pub(crate) out: PathBuf,
    /// OS threads of the CPU model (each one simulated multiprocessor), which runs frag, oom,
    /// util and churn where no GPU is usable.
    #[arg(long, default_value_t = 4, global = true)]
    pub(crate) cpu_threads: u32,
    /// After round 0 of each veballoc `frag` point, print the segments up to the highest one
    /// in use: its group, blocks out, and the live bytes and 64 KiB units that the round's
    /// pointers hold in it (where the range went).
    #[arg(long, global = true)]
    pub(crate) frag_map: bool,
    /// Print the install-path profile after each veballoc alloc kernel of `single`/`mixed`,
    /// each `util` point and each `churn` round
    /// (needs a PTX built with the kernels' `trace` feature: `scripts/ptx-variant.sh trace`,
    /// loaded through VEBALLOC_PTX_FILE; all zeros otherwise).
    #[arg(long, global = true)]
    pub(crate) trace: bool,
}

#[derive(Subcommand, Clone, Copy, PartialEq)]
pub(crate) enum Cmd {
    /// One size per run, 16..4096 B.
    Single,
    /// Sizes drawn in [16, max], max 64..4096 B.
    Mixed,
    /// Threads 2^0..2^20 at 16, 64, 512 and 8192 B.
    Scaling,
    /// Time until an 8 GiB heap is ready.
    Init,
    /// Address range handed out vs live bytes, over repeated alloc/free rounds.
    Frag,
    /// Bytes handed out before null, as a share of the heap (one launch, 1.1x what fits).
    Oom,
    /// Utilisation: fill a fresh heap until null with one size (each of --sizes) or with
    /// sizes uniform in a range (--util-ranges); requested bytes / capacity.
    Util,
    /// Rounds of mixed sizes 16 B .. 1 MiB (rare 20-40 MiB runs) with --churn-live of the heap
    /// live and no host trim: nulls per round, live share at the first null.
    Churn,
    /// The single-size test on one reused heap (warm) next to fresh heaps (cold).
    Warm,
    /// Mixed sizes per warp: per-class malloc vs malloc_packed vs CUDA malloc, with the
    /// time of a linear write and read pass over every thread's buffer.
    Packed,
    /// One size per launch: malloc vs the collective malloc_warp and malloc_block.
    Collective,
    /// Host-side allocation: Heap::alloc/free vs cuMemAlloc/cuMemFree vs
    /// cuMemAllocAsync/cuMemFreeAsync, sizes 1 B..1 GiB and 1..10^6 live allocations.
    Host,
    /// Rust's Vec, Box, String and BTreeMap in kernels: veballoc vs CUDA's device malloc as
    /// the kernels' global allocator.
    Collections,
    /// All of the above.
    All,
}

/// `oom`'s sizes unless --sizes says otherwise.
const OOM_SIZES: [u64; 6] = [16, 256, 4096, 65536, 1 << 20, 32 << 20];
/// `util`'s single sizes unless --sizes says otherwise (the survey's utilisation points).
const UTIL_SIZES: [u64; 15] =
    [16, 24, 48, 100, 200, 3000, 4097, 6000, 10000, 40000, 70000, 300000, 3 << 19, 5 << 20, 20 << 20];
/// Sizes `frag` adds to the powers of two 16..4096: non-powers of two among the slices, and
/// mid sizes (run at 65536 threads).
const FRAG_EXTRA_SIZES: [u64; 9] = [24, 48, 100, 3000, 4097, 6000, 10000, 40000, 70000];

/// Powers of two from lo to hi.
fn pow2(lo: u64, hi: u64) -> Vec<u64> {
    (lo.trailing_zeros()..=hi.trailing_zeros()).map(|l| 1u64 << l).collect()
}

/// `frag`'s sizes unless --sizes says otherwise, ascending.
fn frag_sizes() -> Vec<u64> {
    let mut v = pow2(16, 4096);
    v.extend(FRAG_EXTRA_SIZES);
    v.sort_unstable();
    v
}

/// The size lists of the tests the CPU model runs, as `--sizes` and `--util-ranges` give
/// them or by default.
pub(crate) struct SizeLists {
    pub(crate) frag: Vec<u64>,
    pub(crate) oom: Vec<u64>,
    /// (lo, hi): single sizes (lo == hi), then the ranges.
    pub(crate) util: Vec<(u64, u64)>,
}

/// Whether option `id` was given (on the command line or by its environment variable), at
/// the top level or after the subcommand.
fn given(m: &ArgMatches, id: &str) -> bool {
    let on = |m: &ArgMatches| {
        matches!(m.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable))
    };
    on(m) || m.subcommand().is_some_and(|(_, sub)| on(sub))
}

fn main() {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // The memory tests' size lists, the same on the GPU and in the CPU model.
    let util_ranges =
        match cli.util_ranges.iter().map(|r| memory::parse_range(r)).collect::<Result<Vec<_>, _>>() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("veballoc-bench: --util-ranges: {e}");
                std::process::exit(1);
            }
        };
    let singles = cli.sizes.clone().unwrap_or_else(|| UTIL_SIZES.to_vec());
    let lists = SizeLists {
        frag: cli.sizes.clone().unwrap_or_else(frag_sizes),
        oom: cli.sizes.clone().unwrap_or_else(|| OOM_SIZES.to_vec()),
        util: singles.into_iter().map(|s| (s, s)).chain(util_ranges).collect(),
    };
    let gpu = match Gpu::open(cli.device, cli.maxreg) {
        Ok(g) => g,
        // No GPU: the CPU model runs what can run without one (frag, oom, util, churn).
        Err(veballoc::Error::NoGpu(why)) if cpu_model::runs(cli.cmd) => {
            std::process::exit(cpu_model::main(cli, &|id| given(&matches, id), &why, &lists));
        }
        Err(e @ veballoc::Error::NoGpu(_)) => {
            eprintln!(
                "veballoc-bench: {e}.\nThis test needs a GPU: run it where an NVIDIA GPU and its driver are present. \
                 Without one, {} and all run the CPU model of the heap.",
                cpu_model::CPU_TESTS.join(", ")
            );
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("veballoc-bench: {e}.\nThere is nothing to measure on this machine: run it where an NVIDIA GPU and its driver are present.");
            std::process::exit(2);
        }
    };
    println!(
        "GPU: {} | driver {} | {} SMs | {} MiB | rev {} | JIT register cap {} | boot {}",
        gpu.name(),
        gpu.driver_version(),
        gpu.multiprocessors(),
        gpu.total_memory() >> 20,
        env!("VEBALLOC_GIT_REV"),
        cli.maxreg,
        if veballoc::boot_requested() { "on" } else { "off (VEBALLOC_BOOT=0)" }
    );
    if cli.allocators.iter().any(|a| a == "cuda") {
        // CUDA's device heap limit, as in the protocol (8 GiB by default).
        // SAFETY: plain driver call on the current context.
        let r = unsafe {
            cust::sys::cuCtxSetLimit(
                cust::sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE,
                (cli.heap_gib << 30) as usize,
            )
        };
        if r != cust::sys::cudaError_enum::CUDA_SUCCESS {
            eprintln!("warning: cuCtxSetLimit(MALLOC_HEAP_SIZE) failed: {r:?}");
        }
    }
    let peers = match &cli.peers {
        Some(dir) => match peers::resolve(dir, &cli.peers_list) {
            Ok(p) => {
                let names: Vec<String> = p.iter().map(|p| p.bin.display().to_string()).collect();
                println!("peers: {}", names.join(", "));
                p
            }
            Err(e) => {
                eprintln!("veballoc-bench: --peers {}: {e}", dir.display());
                std::process::exit(1);
            }
        },
        None => Vec::new(),
    };
    let cmd = cli.cmd;
    let mut b = Bench {
        gpu,
        cli,
        points: Vec::new(),
        frag: Vec::new(),
        frag_maps: Vec::new(),
        oom: Vec::new(),
        util: Vec::new(),
        churn: Vec::new(),
        peers,
        peer_runs: Vec::new(),
        last_nulls: 0,
    };
    let result = (|| -> Res<()> {
        if matches!(cmd, Cmd::Single | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| pow2(16, 4096));
            b.sizes_test("single", list, false)?;
        }
        if matches!(cmd, Cmd::Mixed | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| pow2(64, 4096));
            b.sizes_test("mixed", list, true)?;
        }
        if matches!(cmd, Cmd::Scaling | Cmd::All) {
            b.scaling()?;
        }
        if matches!(cmd, Cmd::Init | Cmd::All) {
            b.init()?;
        }
        if matches!(cmd, Cmd::Frag | Cmd::All) {
            b.frag(lists.frag.clone())?;
        }
        if matches!(cmd, Cmd::Oom | Cmd::All) {
            b.oom(lists.oom.clone())?;
        }
        if matches!(cmd, Cmd::Util | Cmd::All) {
            b.util(lists.util.clone())?;
        }
        if matches!(cmd, Cmd::Churn | Cmd::All) {
            b.churn()?;
        }
        if matches!(cmd, Cmd::Warm | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| pow2(16, 4096));
            b.warm(list)?;
        }
        if matches!(cmd, Cmd::Packed | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| vec![64, 256, 1024, 4096]);
            b.packed(list)?;
        }
        if matches!(cmd, Cmd::Host | Cmd::All) {
            b.host()?;
        }
        if matches!(cmd, Cmd::Collective | Cmd::All) {
            let list = b.cli.sizes.clone().unwrap_or_else(|| vec![16, 64, 256, 1024, 4096]);
            b.collective(list)?;
        }
        if matches!(cmd, Cmd::Collections | Cmd::All) {
            b.collections()?;
        }
        Ok(())
    })();
    let name = match cmd {
        Cmd::Single => "single",
        Cmd::Mixed => "mixed",
        Cmd::Scaling => "scaling",
        Cmd::Init => "init",
        Cmd::Frag => "frag",
        Cmd::Oom => "oom",
        Cmd::Util => "util",
        Cmd::Churn => "churn",
        Cmd::Warm => "warm",
        Cmd::Packed => "packed",
        Cmd::Collective => "collective",
        Cmd::Host => "host",
        Cmd::Collections => "collections",
        Cmd::All => "all",
    };
    let saved = b.save(name);
    if let Err(e) = &saved {
        eprintln!("veballoc-bench: could not write results: {e}");
    }
    if let Err(e) = result {
        eprintln!("veballoc-bench: {e}");
        std::process::exit(1);
    }
    if saved.is_err() {
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn default_size_lists() {
        assert_eq!(pow2(16, 4096), [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]);
        let f = frag_sizes();
        assert_eq!(f.len(), 18);
        assert!(f.windows(2).all(|w| w[0] < w[1]), "ascending, no repeats: {f:?}");
        assert_eq!(UTIL_SIZES[12], 1_572_864, "1.5 MiB");
    }

    #[test]
    fn parses_the_new_options() {
        let c = Cli::try_parse_from([
            "veballoc-bench",
            "util",
            "--peers",
            "../shared/peers",
            "--peers-list",
            "gallatin,cuda",
            "--util-ranges",
            "16-4096",
            "--churn-rounds",
            "3",
        ])
        .unwrap();
        assert!(c.cmd == Cmd::Util);
        assert_eq!(c.peers.as_deref(), Some(std::path::Path::new("../shared/peers")));
        assert_eq!(c.peers_list, ["gallatin", "cuda"]);
        assert_eq!(c.util_ranges, ["16-4096"]);
        assert_eq!(c.churn_rounds, 3);
        let d = Cli::try_parse_from(["veballoc-bench", "churn"]).unwrap();
        assert_eq!(d.peers_list, ["gallatin"]);
        assert_eq!(d.allocators, ["veballoc", "floor", "cuda"]);
        assert_eq!(d.churn_live, 0.5);
        assert!(d.peers.is_none());
    }

    #[test]
    fn tells_given_options_from_defaults() {
        let m = Cli::command().try_get_matches_from(["veballoc-bench", "util", "--heap-gib", "2"]).unwrap();
        assert!(given(&m, "heap_gib"));
        assert!(!given(&m, "threads") && !given(&m, "out") && !given(&m, "oom_heap_mib"));
        let m = Cli::command().try_get_matches_from(["veballoc-bench", "--threads", "5", "frag"]).unwrap();
        assert!(given(&m, "threads") && !given(&m, "heap_gib"));
    }

    #[test]
    fn ptx_has_the_harness_kernels() {
        // In the module with the tests' and benchmarks' kernels, which `Gpu::launch` loads.
        for k in ["floor_malloc", "floor_free", "util_fill", "churn_round"] {
            assert!(
                veballoc::ptx_defines_kernel(veballoc::BENCH_PTX, k),
                "kernel {k} missing from BENCH_PTX"
            );
        }
    }
}
