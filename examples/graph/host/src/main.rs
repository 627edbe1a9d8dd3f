//! Runs the dynamic-graph example on the GPU: `cargo run --release -p graph-example
//! [vertices] [rounds]`. Each round inserts 1..16 edges per vertex into growing adjacency
//! lists (device-side `DVec`s); the result is checked against the same logic on the CPU.

use std::time::Instant;

use graph_kernels::{checksum, edge_target, edges_in_round};
use veballoc::{Gpu, Heap};

/// The example's kernels, built from `examples/graph/kernels` by build.rs.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/graph.ptx"));
/// Threads per block.
const BLOCK: u32 = 256;

/// Vertex `v`'s list after `rounds` rounds, computed on the host.
fn expected(v: u64, n: u64, rounds: u64) -> Vec<u32> {
    let total: u64 = (0..rounds).map(|r| edges_in_round(v, r)).sum();
    (0..total).map(|k| edge_target(v, k, n)).collect()
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("numbers: vertices rounds"));
    let n = args.next().unwrap_or(1 << 20);
    let rounds = args.next().unwrap_or(16);
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("graph example: {e}.\nIt needs a CUDA GPU; the same logic runs on the CPU in `cargo test -p graph-example`.");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&gpu, n, rounds) {
        eprintln!("graph example failed: {e}");
        std::process::exit(1);
    }
}

fn run(gpu: &Gpu, n: u64, rounds: u64) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "GPU: {} (driver {}); graph of {n} vertices, {rounds} insertion rounds",
        gpu.name(),
        gpu.driver_version()
    );
    let heap = Heap::new(gpu, 8 << 30)?;
    let module = gpu.load_module(PTX, veballoc::DEFAULT_MAX_REGISTERS)?;
    // n zeroed RawVec<u32> slots (pointer, length, capacity): n empty lists.
    let adj = veballoc::zeroed_u64s(3 * n as usize)?;
    let failed = veballoc::zeroed_u64s(1)?;
    let (arg, a, f) = (heap.arg(), adj.as_device_ptr().as_raw(), failed.as_device_ptr().as_raw());
    let t0 = Instant::now();
    for round in 0..rounds {
        let t = Instant::now();
        // SAFETY: graph_insert(heap, adj, n, round, failed).
        unsafe {
            gpu.launch_in(&module, "graph_insert", n, BLOCK, veballoc::kernel_args![arg, a, n, round, f])?
        };
        gpu.sync()?;
        let s = heap.stats()?;
        println!(
            "round {round:>2}: {:>8.3} ms, {:>5} MiB in use, {:>4} segments",
            t.elapsed().as_secs_f64() * 1e3,
            s.bytes_in_use >> 20,
            s.segments_in_use()
        );
    }
    let insert_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut h = [0u64; 1];
    veballoc::cust::memory::CopyDestination::copy_to(&*failed, &mut h[..])?;
    assert_eq!(h[0], 0, "insertions that did not fit");
    // Check: the GPU's checksum of every list against the CPU's, and some lists in full.
    let sum = veballoc::zeroed_u64s(1)?;
    let sp = sum.as_device_ptr().as_raw();
    // SAFETY: graph_checksum(heap, adj, n, out).
    unsafe { gpu.launch_in(&module, "graph_checksum", n, BLOCK, veballoc::kernel_args![arg, a, n, sp])? };
    gpu.sync()?;
    let mut got = [0u64; 1];
    veballoc::cust::memory::CopyDestination::copy_to(&*sum, &mut got[..])?;
    let want = (0..n).fold(0u64, |acc, v| acc.wrapping_add(checksum(&expected(v, n, rounds))));
    assert_eq!(got[0], want, "GPU and CPU graphs differ");
    for v in [0, 1, n / 2, n - 1] {
        let list: Vec<u32> = heap.read_vec(a + 24 * v)?;
        assert_eq!(list, expected(v, n, rounds), "vertex {v}");
    }
    let s = heap.stats()?;
    let edges: u64 = s.live_slices.iter().sum();
    println!(
        "checked: {n} lists match the CPU (checksum {:#x}); {} MiB in {} live allocations; inserts took {insert_ms:.1} ms",
        got[0],
        s.bytes_in_use >> 20,
        edges + s.whole_blocks.iter().sum::<u64>()
    );
    // SAFETY: graph_free(heap, adj, n).
    unsafe { gpu.launch_in(&module, "graph_free", n, BLOCK, veballoc::kernel_args![arg, a, n])? };
    heap.trim()?;
    let s = heap.stats()?;
    assert_eq!((s.bytes_in_use, s.free_segments), (0, heap.layout().num_segments as u64), "{s:?}");
    println!("freed: every segment back in the heap");
    heap.destroy()?;
    Ok(())
}
