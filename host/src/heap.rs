//! Creating, inspecting and destroying a heap on the GPU.

use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};
use veballoc_kernels::heap::{DeviceHeap, HeapLayout, DEFAULT_SHARDS};
use veballoc_kernels::{Stats, SEGMENT_BYTES};

use crate::error::{Context, Error, Result};
use crate::gpu::Gpu;

/// Threads per block for veballoc's own maintenance kernels.
const MAINT_BLOCK: u32 = 256;

/// The device handle as a kernel argument: pass `heap.arg()` where the kernel takes a
/// `veballoc_kernels::DeviceHeap` by value.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct HeapArg(pub DeviceHeap);

// SAFETY: DeviceHeap is plain old data (addresses, counts and offsets), valid to copy to the GPU.
unsafe impl DeviceCopy for HeapArg {}

/// A heap in GPU memory that kernels allocate from with `DeviceHeap::malloc`/`free`.
///
/// ```no_run
/// use veballoc::{Gpu, Heap};
/// let gpu = Gpu::new()?;
/// let heap = Heap::new(&gpu, 8 << 30)?;        // 8 GiB, ready to allocate
/// let arg = heap.arg();                         // pass to your kernel by value
/// // ... launch kernels that call arg.0.malloc(n) / free(p) ...
/// let stats = heap.stats()?;                    // walks and validates the metadata
/// println!("{} bytes in use", stats.bytes_in_use);
/// # Ok::<(), veballoc::Error>(())
/// ```
pub struct Heap {
    gpu: Gpu,
    // Dropped (freed) before `gpu`, whose context they belong to.
    mem: Option<DeviceBuffer<u8>>,
    meta: Option<DeviceBuffer<u64>>,
    handle: DeviceHeap,
    layout: HeapLayout,
}

impl Heap {
    /// Creates a heap of `bytes` (rounded down to whole 16 MiB segments) and initializes it.
    pub fn new(gpu: &Gpu, bytes: u64) -> Result<Heap> {
        Self::with_shards(gpu, bytes, DEFAULT_SHARDS)
    }

    /// As [`Heap::new`], with `shards` current-block slots per size class.
    pub fn with_shards(gpu: &Gpu, bytes: u64, shards: u32) -> Result<Heap> {
        if bytes < SEGMENT_BYTES {
            return Err(Error::HeapTooSmall { requested: bytes, minimum: SEGMENT_BYTES });
        }
        let segments = HeapLayout::segments_for_bytes(bytes);
        let layout = HeapLayout::new(segments, shards.max(1), gpu.checks());
        let capacity = (segments as u64) * SEGMENT_BYTES;
        let available = gpu.free_memory()?;
        if capacity + layout.meta_bytes > available {
            return Err(Error::HeapTooLarge { requested: capacity + layout.meta_bytes, available });
        }
        // SAFETY: the segment memory needs no initial contents.
        let mem =
            unsafe { DeviceBuffer::<u8>::uninitialized(capacity as usize) }.during("cuMemAlloc (heap)")?;
        let meta =
            DeviceBuffer::<u64>::zeroed((layout.meta_bytes / 8) as usize).during("cuMemAlloc (metadata)")?;
        let handle = DeviceHeap { mem: mem.as_device_ptr().as_raw(), meta: meta.as_device_ptr().as_raw() };
        let header = layout.header_words();
        let mut first = meta.index(..header.len());
        first.copy_from(&header[..]).during("cuMemcpyHtoD (layout header)")?;
        let heap = Heap { gpu: gpu.clone(), mem: Some(mem), meta: Some(meta), handle, layout };
        let arg = heap.arg();
        // SAFETY: veballoc_init takes one DeviceHeap.
        unsafe {
            gpu.launch("veballoc_init", layout.init_words() as u64, MAINT_BLOCK, crate::kernel_args![arg])?
        };
        gpu.sync()?;
        Ok(heap)
    }

    /// The handle kernels receive (a `Copy` value).
    pub fn handle(&self) -> DeviceHeap {
        self.handle
    }

    /// The handle wrapped for `cust::launch!`.
    pub fn arg(&self) -> HeapArg {
        HeapArg(self.handle)
    }

    /// Where the heap's metadata parts live.
    pub fn layout(&self) -> &HeapLayout {
        &self.layout
    }

    /// Bytes of segment memory the heap manages.
    pub fn capacity(&self) -> u64 {
        (self.layout.num_segments as u64) * SEGMENT_BYTES
    }

    /// The GPU the heap lives on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Retires the per-multiprocessor current blocks so that fully freed blocks and segments
    /// go back to their trees (run between phases; allocation may continue afterwards).
    pub fn trim(&self) -> Result<()> {
        let arg = self.arg();
        let slots = veballoc_kernels::slice::SLOT_ROWS as u64 * self.layout.shards as u64;
        // SAFETY: both kernels take one DeviceHeap; the stream orders them.
        unsafe {
            self.gpu.launch("veballoc_trim", slots, MAINT_BLOCK, crate::kernel_args![arg])?;
            self.gpu.launch(
                "veballoc_trim_segments",
                self.layout.num_segments as u64,
                MAINT_BLOCK,
                crate::kernel_args![arg],
            )?;
        }
        self.gpu.sync()
    }

    /// Copies the metadata to the host, validates it, and returns the statistics.
    /// Waits for the heap's stream first; kernels on other streams must have finished.
    pub fn stats(&self) -> Result<Stats> {
        self.gpu.sync()?;
        let meta = self.meta.as_ref().expect("live heap");
        let mut host = vec![0u64; meta.len()];
        cust::memory::CopyDestination::copy_to(&**meta, &mut host[..]).during("cuMemcpyDtoH (metadata)")?;
        let view = DeviceHeap { meta: host.as_ptr() as u64, ..self.handle };
        view.validate().map_err(Error::Corrupt)
    }

    /// Frees the heap's GPU memory now, reporting errors (Drop ignores them).
    pub fn destroy(mut self) -> Result<()> {
        self.gpu.sync()?;
        if let Some(m) = self.mem.take() {
            DeviceBuffer::drop(m).map_err(|(err, _)| Error::Cuda { call: "cuMemFree (heap)", err })?;
        }
        if let Some(m) = self.meta.take() {
            DeviceBuffer::drop(m).map_err(|(err, _)| Error::Cuda { call: "cuMemFree (metadata)", err })?;
        }
        Ok(())
    }
}
