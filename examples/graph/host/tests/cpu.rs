//! The example's per-vertex logic on the CPU model of the heap (CI has no GPU).

use graph_kernels::{checksum, edge_target, edges_in_round, free_slot, insert_round, slot_checksum};
use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::RawVec;

#[test]
fn graph_grows_and_frees_on_the_cpu_model() {
    let (n, rounds) = (2000u64, 12u64);
    let cpu = CpuHeap::new(24, 1);
    let h = cpu.heap();
    let mut adj: Vec<RawVec<u32>> = (0..n).map(|_| RawVec::EMPTY).collect();
    for round in 0..rounds {
        for v in 0..n {
            assert!(insert_round(h, &mut adj[v as usize], v, n, round));
        }
        h.validate().expect("heap consistent");
    }
    for v in 0..n {
        let total: u64 = (0..rounds).map(|r| edges_in_round(v, r)).sum();
        let want: Vec<u32> = (0..total).map(|k| edge_target(v, k, n)).collect();
        assert_eq!(adj[v as usize].len, total);
        assert_eq!(slot_checksum(h, &adj[v as usize]), checksum(&want));
    }
    for slot in &mut adj {
        free_slot(h, slot);
    }
    h.trim();
    let s = h.validate().unwrap();
    assert_eq!((s.bytes_in_use, s.free_segments), (0, 24), "{s:?}");
}

#[test]
fn graph_rounds_on_threads_sharing_current_blocks() {
    // 8 threads on 2 shards: their slots' blocks are exhausted, replaced and recycled under
    // each other, as on the GPU; the heap is validated after every round.
    let (n, rounds, threads) = (64_000u64, 10u64, 8u64);
    let cpu = CpuHeap::new(96, 2);
    let h = cpu.heap();
    let mut adj: Vec<RawVec<u32>> = (0..n).map(|_| RawVec::EMPTY).collect();
    for round in 0..rounds {
        let chunks: Vec<&mut [RawVec<u32>]> = adj.chunks_mut((n / threads) as usize).collect();
        std::thread::scope(|s| {
            for (t, chunk) in chunks.into_iter().enumerate() {
                s.spawn(move || {
                    veballoc::kernels::arch::set_host_thread_index(t as u64);
                    let base = t as u64 * (n / threads);
                    for (i, slot) in chunk.iter_mut().enumerate() {
                        assert!(insert_round(h, slot, base + i as u64, n, round));
                    }
                });
            }
        });
        if let Err(e) = h.validate() {
            panic!("round {round}: {e:?}");
        }
    }
    for slot in &mut adj {
        free_slot(h, slot);
    }
    h.trim();
    let s = h.validate().unwrap();
    assert_eq!((s.bytes_in_use, s.free_segments), (0, 96), "{s:?}");
}
