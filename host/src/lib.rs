//! veballoc: a GPU heap for Rust kernels. Kernels call `malloc`/`free` on the device, with
//! no trip to the host; this crate creates heaps, loads the allocator's PTX and reports
//! statistics. The device side is the `veballoc-kernels` crate (re-exported as [`kernels`]).
//!
//! ```no_run
//! use veballoc::{Gpu, Heap};
//! let gpu = Gpu::new()?;                       // Err(Error::NoGpu(..)) without a GPU
//! let heap = Heap::new(&gpu, 1 << 30)?;        // 1 GiB heap
//! let stats = heap.stats()?;
//! assert_eq!(stats.bytes_in_use, 0);
//! heap.destroy()?;
//! # Ok::<(), veballoc::Error>(())
//! ```

/// Kernel arguments for `Gpu::launch`: pointers to the values, which must outlive the call.
///
/// ```no_run
/// # let gpu = veballoc::Gpu::new()?;
/// # let heap = veballoc::Heap::new(&gpu, 1 << 30)?;
/// let (arg, n) = (heap.arg(), 1u64);
/// // SAFETY: veballoc_trim takes one DeviceHeap; n is unused by it and shows the syntax.
/// unsafe { gpu.launch("veballoc_trim", n, 32, veballoc::kernel_args![arg])? };
/// # Ok::<(), veballoc::Error>(())
/// ```
#[macro_export]
macro_rules! kernel_args {
    ($($a:expr),* $(,)?) => { &[$(&$a as *const _ as *mut ::std::ffi::c_void),*] };
}

mod error;
mod global;
mod gpu;
mod heap;
mod memory;
mod pool;

/// The CUDA driver bindings veballoc uses (device buffers, streams, events).
pub use cust;
pub use error::{Error, Result};
pub use global::{GlobalBinding, GLOBAL_ALLOC_STACK_BYTES};
pub use gpu::{
    check_layout_stamp, devices, ptx_checks, ptx_defines_kernel, Bound, DeviceInfo, Gpu, BENCH_PTX,
    DEFAULT_MAX_REGISTERS, PTX, PTX_FILE_ENV, PTX_HAS_CHECKS,
};
pub use heap::{boot_requested, AnyBits, Heap, HeapArg, HeapSize, LazyHeap, AUTO_RESERVE_BYTES};
pub use pool::{PoolStats, DEFAULT_RELEASE_THRESHOLD, HOST_ALIGN, SUB_MAX_BYTES};
pub use veballoc_kernels as kernels;
pub use veballoc_kernels::{DeviceHeap, HeapError, Stats, SEGMENT_BYTES};

/// A device buffer of `n` zeroed u64s, for tests and benchmarks that pass arrays to kernels,
/// in the calling thread's current context (see [`Gpu::bind`]; [`Gpu::zeroed`] names the GPU).
/// The zeroing is complete when this returns, so kernels on any stream see it: the memset
/// runs on the legacy default stream, which does not order veballoc's non-blocking stream,
/// and this waits for it.
pub fn zeroed_u64s(n: usize) -> Result<cust::memory::DeviceBuffer<u64>> {
    use error::Context;
    let b = cust::memory::DeviceBuffer::<u64>::zeroed(n).during("cuMemAlloc")?;
    // SAFETY: the null stream is the current context's legacy default stream, where the
    // memset above was queued.
    let r = unsafe { cust::sys::cuStreamSynchronize(std::ptr::null_mut()) };
    if r != cust::sys::cudaError_enum::CUDA_SUCCESS {
        return Err(Error::Driver { call: "cuStreamSynchronize (memset)", code: r as i32 });
    }
    Ok(b)
}
