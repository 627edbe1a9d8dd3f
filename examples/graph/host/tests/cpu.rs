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
