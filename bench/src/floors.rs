//! The floors, measured in the same run as everything else: what no device allocator can
//! beat on this GPU. Allocation: a sharded bump allocator (`floor_malloc`: one counter per
//! multiprocessor on its own line, one atomic add per warp, lanes' offsets by a prefix sum,
//! no reuse). Free: each thread reads its pointer, one atomic add per warp on its
//! multiprocessor's counter (`floor_free`).

use cust::memory::DeviceBuffer;

use crate::common::{Bench, HostSizes, Res, Sizes, BLOCK};

use veballoc::kernels::harness::FLOOR_COUNTER_STRIDE;

/// The floors' memory: an arena split into one region per multiprocessor, and the counters.
pub(crate) struct FloorArena {
    _arena: DeviceBuffer<u8>,
    base: u64,
    region: u64,
    shards: u64,
    counters: DeviceBuffer<u64>,
}

impl Bench {
    /// An arena of the heap's size, one region and one counter per multiprocessor.
    pub(crate) fn floor_arena(&self) -> Res<FloorArena> {
        let bytes = self.cli.heap_gib << 30;
        let arena = DeviceBuffer::<u8>::zeroed(bytes as usize)?;
        let shards = self.gpu.multiprocessors().max(1) as u64;
        Ok(FloorArena {
            base: arena.as_device_ptr().as_raw(),
            _arena: arena,
            // Regions keep 16-byte alignment.
            region: bytes / shards / 16 * 16,
            shards,
            counters: veballoc::zeroed_u64s((shards * FLOOR_COUNTER_STRIDE) as usize)?,
        })
    }

    /// Times `floor_malloc` and `floor_free` over n threads (one warm-up iteration, then
    /// `iters`), records them as allocator "floor" and returns the median times. With
    /// `verify` the pointers are written and checked when none is null (a request past its
    /// multiprocessor's region gets null: the scheduler can load one SM more than the rest).
    pub(crate) fn run_floor(
        &mut self,
        arena: &mut FloorArena,
        test: &str,
        sizes: Sizes,
        n: u64,
        iters: u32,
        verify: bool,
    ) -> Res<(f64, f64)> {
        let (_sizes_buf, sizes_dev, ptrs) = Self::buffers(&HostSizes::new(sizes, n))?;
        let p = ptrs.as_device_ptr().as_raw();
        let (base, region, shards) = (arena.base, arena.region, arena.shards);
        let c = arena.counters.as_device_ptr().as_raw();
        let zeros = vec![0u64; arena.counters.len()];
        let size = sizes.fixed();
        let (mut ta, mut tf, mut nulls) = (Vec::new(), Vec::new(), 0);
        // One more iteration than asked: the first is a warm-up and is dropped.
        for _ in 0..=iters {
            self.upload(&mut arena.counters, &zeros)?;
            // SAFETY: matches floor_malloc (counters hold shards * FLOOR_COUNTER_STRIDE words).
            ta.push(self.timed(|| unsafe {
                self.gpu.launch(
                    "floor_malloc",
                    n,
                    BLOCK,
                    veballoc::kernel_args![c, shards, base, region, p, n, size, sizes_dev],
                )
            })?);
            if verify {
                nulls = Self::host_u64s(&ptrs)?.iter().filter(|&&x| x == 0).count();
                if nulls == 0 {
                    self.write_verify(p, n, sizes, sizes_dev, "floor")?;
                }
            }
            // SAFETY: matches floor_free.
            tf.push(self.timed(|| unsafe {
                self.gpu.launch("floor_free", n, BLOCK, veballoc::kernel_args![c, shards, p, n])
            })?);
        }
        if !verify {
            nulls = Self::host_u64s(&ptrs)?.iter().filter(|&&x| x == 0).count();
        }
        if nulls > 0 {
            eprintln!("warning: floor at {test} {} x {n}: {nulls} requests past their region", sizes.label());
        }
        self.record(test, "floor", sizes.label(), n, ta[1..].to_vec(), tf[1..].to_vec())
    }
}
