//! veballoc's benchmark harness: the field's protocol (shared/anchors.md) for veballoc, the
//! bump-allocator floor and CUDA's device malloc, in one run, with CSV and JSON results.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use veballoc::Gpu;

mod common;
mod host;
mod memory;
mod packed;
mod plot;
mod report;
mod scaling;
mod single;

use crate::common::{Bench, Res};

#[derive(Parser)]
#[command(
    about = "veballoc benchmark harness (single, mixed, scaling, init) against the bump floor and CUDA malloc"
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
    /// Sizes (bytes, comma-separated) for single; maxima for mixed.
    #[arg(long, value_delimiter = ',', global = true)]
    pub(crate) sizes: Option<Vec<u64>>,
    /// Allocators to run: veballoc, bump, cuda.
    #[arg(long, value_delimiter = ',', default_values_t = ["veballoc".to_string(), "bump".into(), "cuda".into()], global = true)]
    pub(crate) allocators: Vec<String>,
    /// Sizes at which CUDA malloc is run (it takes seconds at some sizes and over a minute at
    /// 512 and 1024 B in the published figures).
    #[arg(long, value_delimiter = ',', default_values_t = [16u64, 32, 64, 128, 2048], global = true)]
    pub(crate) cuda_sizes: Vec<u64>,
    /// Iterations for CUDA malloc points.
    #[arg(long, default_value_t = 1, global = true)]
    pub(crate) cuda_iters: u32,
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
    /// Output folder for CSV and JSON.
    #[arg(long, default_value = "bench/results/latest", global = true)]
    pub(crate) out: PathBuf,
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
    /// Bytes handed out before null, as a share of the heap.
    Oom,
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
    /// All of the above.
    All,
}

fn main() {
    let cli = Cli::parse();
    let gpu = match Gpu::with_max_registers(cli.maxreg) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("veballoc-bench: {e}.\nThere is nothing to measure on this machine: run it where an NVIDIA GPU and its driver are present.");
            std::process::exit(2);
        }
    };
    println!(
        "GPU: {} | driver {} | {} SMs | {} MiB | rev {} | JIT register cap {}",
        gpu.name(),
        gpu.driver_version(),
        gpu.multiprocessors(),
        gpu.total_memory() >> 20,
        env!("VEBALLOC_GIT_REV"),
        cli.maxreg
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
    let cmd = cli.cmd;
    let mut b = Bench { gpu, cli, points: Vec::new(), frag: Vec::new(), oom: Vec::new(), last_nulls: 0 };
    let pow2 =
        |lo: u64, hi: u64| (lo.trailing_zeros()..=hi.trailing_zeros()).map(|l| 1u64 << l).collect::<Vec<_>>();
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
            let list = b.cli.sizes.clone().unwrap_or_else(|| pow2(16, 4096));
            b.frag(list)?;
        }
        if matches!(cmd, Cmd::Oom | Cmd::All) {
            b.oom()?;
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
        Ok(())
    })();
    let name = match cmd {
        Cmd::Single => "single",
        Cmd::Mixed => "mixed",
        Cmd::Scaling => "scaling",
        Cmd::Init => "init",
        Cmd::Frag => "frag",
        Cmd::Oom => "oom",
        Cmd::Warm => "warm",
        Cmd::Packed => "packed",
        Cmd::Collective => "collective",
        Cmd::Host => "host",
        Cmd::All => "all",
    };
    if let Err(e) = b.save(name) {
        eprintln!("veballoc-bench: could not write results: {e}");
    }
    if let Err(e) = result {
        eprintln!("veballoc-bench: {e}");
        std::process::exit(1);
    }
}
