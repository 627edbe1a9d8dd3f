//! `collections`: Rust's own collections in kernels (issue 12.2). Every thread grows an
//! `alloc::vec::Vec<u32>` by push (up to 4 KiB), boxes an array, formats a `String` and fills a
//! `BTreeMap`; then lane 0 of every warp builds a `BTreeMap` of its warp's items. The same
//! kernel crate (`examples/collections/kernels`) is built twice: with veballoc as its global
//! allocator, and with CUDA's device malloc (what `cuda_std` does). Results are checked against
//! the same logic on the CPU; a fresh heap per iteration.

use std::ffi::c_void;

use collections_kernels::{warp_map, work, WARP};
use veballoc::Heap;

use crate::common::{Bench, Res, BLOCK};

/// The kernels with veballoc as their global allocator.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/collections.ptx"));
/// The same kernels over CUDA's device malloc.
const PTX_CUDA: &str = include_str!(concat!(env!("OUT_DIR"), "/collections-cuda-malloc.ptx"));
/// The seed of the item counts.
const SEED: u64 = 0x5eed_c011;
/// The size label of the per-thread point (the largest Vec: 1024 u32s).
const VEC_POINT: u64 = collections_kernels::MAX_ITEMS * 4;
/// The size label of the per-warp map point.
const MAP_POINT: u64 = WARP;

impl Bench {
    pub(crate) fn collections(&mut self) -> Res<()> {
        let n = self.cli.threads;
        let warps = n.div_ceil(WARP);
        eprint!("  [collections: the expected results on the CPU] ...\r");
        let want: Vec<u64> = (0..n).map(|i| work(i, SEED)).collect();
        let want_maps: Vec<u64> = (0..warps).map(|w| warp_map(w, SEED)).collect();
        // Both allocators' kernels run the same collections, which need this stack.
        self.gpu.ensure_stack_size(veballoc::GLOBAL_ALLOC_STACK_BYTES)?;
        println!(
            "\ncollections: {n} threads, Vec<u32> by push (up to 4 KiB) + Box + format! + BTreeMap per \
             thread, then a BTreeMap per warp; medians (ms), results checked"
        );
        let mut medians = Vec::new();
        for (alloc, ptx) in [("veballoc", PTX), ("cuda", PTX_CUDA)] {
            if !self.wants(alloc) {
                continue;
            }
            let veballoc = alloc == "veballoc";
            let (iters, warmup) = if veballoc { (self.cli.iters, 1) } else { (self.cli.cuda_iters, 0) };
            let module = self.gpu.load_module(ptx, self.cli.maxreg)?;
            let (mut t_vec, mut t_map) = (Vec::new(), Vec::new());
            for it in 0..warmup + iters {
                eprint!("  [collections {alloc} {}/{}] ...\r", it + 1, warmup + iters);
                let heap = Heap::new(&self.gpu, self.cli.heap_gib << 30)?;
                let global = if veballoc { Some(heap.bind_global(&module)?) } else { None };
                let out = self.gpu.zeroed::<u64>(n as usize)?;
                let maps = self.gpu.zeroed::<u64>(warps as usize)?;
                let (o, m) = (out.as_device_ptr().as_raw(), maps.as_device_ptr().as_raw());
                let explain =
                    |e: veballoc::Error| global.as_ref().map_or(e.to_string(), |g| g.explain(e).to_string());
                let launch = |kernel: &str, args: &[*mut c_void]| {
                    self.timed_in(|| {
                        // SAFETY: collections_run / collections_warp_maps (out, n, seed), with n
                        // and n / 32 output words.
                        unsafe { self.gpu.launch_in(&module, kernel, n, BLOCK, args) }
                    })
                    .map_err(|e| format!("{alloc} {kernel}: {e}"))
                };
                let tv = launch("collections_run", veballoc::kernel_args![o, n, SEED]);
                let tm = launch("collections_warp_maps", veballoc::kernel_args![m, n, SEED]);
                if let Err(e) = self.gpu.sync() {
                    return Err(format!("collections {alloc}: {}", explain(e)).into());
                }
                let (tv, tm) = (tv?, tm?);
                if it == 0 {
                    let (mut got, mut got_maps) = (vec![0u64; n as usize], vec![0u64; warps as usize]);
                    self.gpu.copy_out(&out, &mut got)?;
                    self.gpu.copy_out(&maps, &mut got_maps)?;
                    let wrong = got.iter().zip(&want).filter(|(a, b)| a != b).count()
                        + got_maps.iter().zip(&want_maps).filter(|(a, b)| a != b).count();
                    if wrong > 0 {
                        return Err(format!(
                            "collections {alloc}: {wrong} threads or warps differ from the CPU"
                        )
                        .into());
                    }
                }
                if veballoc {
                    heap.trim()?;
                    let s = heap.stats()?;
                    if s.bytes_in_use != 0 {
                        return Err(format!(
                            "collections: {} bytes still in use after the kernels",
                            s.bytes_in_use
                        )
                        .into());
                    }
                }
                if it >= warmup {
                    t_vec.push(tv);
                    t_map.push(tm);
                }
            }
            let (v, _) = self.record("collections", alloc, VEC_POINT, n, t_vec, vec![])?;
            let (w, _) = self.record("collections-warp-maps", alloc, MAP_POINT, n, t_map, vec![])?;
            medians.push((alloc, v, w));
        }
        println!("  allocator | per-thread Vec/Box/String/BTreeMap | per-warp BTreeMap");
        for (alloc, v, w) in &medians {
            println!("  {alloc:>9} | {v:>34.3} | {w:>17.3}");
        }
        if let [(_, v0, w0), (_, v1, w1)] = medians[..] {
            println!("  CUDA malloc / veballoc: {:.1}x, {:.1}x", v1 / v0, w1 / w0);
        }
        Ok(())
    }
}
