//! criterion benches of the host-side paths: the CPU model of the allocator, the metadata
//! walk behind `Heap::stats`, and (where a GPU exists) heap create/destroy and stats.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use veballoc::kernels::cpu::CpuHeap;

/// Segments of the 8 GiB heap of the benchmark protocol.
const SEGMENTS_8G: u32 = 512;

fn cpu_model(c: &mut Criterion) {
    let cpu = CpuHeap::new(64, 16);
    let h = cpu.heap();
    let mut g = c.benchmark_group("cpu_model");
    for size in [16u64, 512, 4096, 100_000] {
        g.bench_function(format!("malloc_free_{size}B"), |b| {
            b.iter(|| {
                let p = h.malloc(black_box(size));
                // SAFETY: p came from the malloc just above (null is ignored) and is freed once, unused
                // after.
                unsafe { h.free(p) };
            })
        });
    }
    g.bench_function("warp_malloc_32x64B_then_free", |b| {
        b.iter(|| {
            for p in cpu.warp_malloc(&[64; 32]) {
                // SAFETY: each p came from the warp_malloc just above, is freed once and not used after.
                unsafe { h.free(p) };
            }
        })
    });
    g.finish();
}

fn stats_walk(c: &mut Criterion) {
    // The same walk Heap::stats runs over a copy of the device metadata.
    let cpu = CpuHeap::new(SEGMENTS_8G, 256);
    let h = cpu.heap();
    let live: Vec<_> = (0..100_000).map(|i| h.malloc(16 << (i % 9))).collect();
    c.bench_function("validate_8GiB_heap_100k_live", |b| b.iter(|| black_box(h.validate().unwrap())));
    for p in live {
        // SAFETY: each p came from this heap's malloc above, is freed once and not used after.
        unsafe { h.free(p) };
    }
}

fn gpu_paths(c: &mut Criterion) {
    let gpu = match veballoc::Gpu::new() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("skipping the GPU benches: {e}");
            return;
        }
    };
    c.bench_function("gpu_heap_create_destroy_8GiB", |b| {
        b.iter(|| veballoc::Heap::new(&gpu, 8 << 30).unwrap().destroy().unwrap())
    });
    let heap = veballoc::Heap::new(&gpu, 8 << 30).unwrap();
    c.bench_function("gpu_heap_stats_8GiB", |b| b.iter(|| black_box(heap.stats().unwrap())));
}

criterion_group!(benches, cpu_model, stats_walk, gpu_paths);
criterion_main!(benches);
