//! Errors of the host runtime.

use std::fmt;

use cust::error::CudaError;
use veballoc_kernels::HeapError;

/// Everything that can go wrong on the host side, with enough context to act on it.
#[derive(Debug)]
pub enum Error {
    /// No usable CUDA GPU or driver (no device, no driver library, or a stub library).
    NoGpu(String),
    /// `Gpu::on_device(ordinal)` on a machine with `count` CUDA devices (ordinals 0..count).
    NoSuchDevice { ordinal: u32, count: u32 },
    /// The driver rejected veballoc's PTX (too old a driver, or a broken build).
    PtxLoad(CudaError),
    /// The PTX file named by `VEBALLOC_PTX_FILE` could not be read.
    PtxFile(String),
    /// The heap asked for does not fit in the GPU's free memory.
    HeapTooLarge { requested: u64, available: u64 },
    /// The heap asked for is smaller than one segment.
    HeapTooSmall { requested: u64, minimum: u64 },
    /// A CUDA call failed.
    Cuda { call: &'static str, err: CudaError },
    /// The heap validator found an inconsistency.
    Corrupt(HeapError),
    /// A host allocation of zero bytes (there is no pointer to give).
    ZeroSizedAlloc,
    /// The heap has no room for a host allocation of `requested` bytes.
    OutOfMemory { requested: u64 },
    /// `free` of a pointer the host pool did not hand out (or already freed).
    UnknownPointer(u64),
    /// A typed view of `bytes` bytes at `ptr` that is not inside the heap (or misaligned).
    NotInHeap { ptr: u64, bytes: u64 },
    /// `trim_memory`/`regrow_memory` on a heap made with `Heap::new` (use `Heap::releasable`).
    NotReleasable,
    /// A driver call (of the virtual memory API) failed with CUDA error `code`.
    Driver { call: &'static str, code: i32 },
    /// A heap of `requested` bytes is larger than veballoc can address (`maximum` bytes:
    /// `HeapLayout::MAX_SEGMENTS` segments).
    HeapSizeUnsupported { requested: u64, maximum: u64 },
    /// The current-block slots per size class must be a power of two.
    InvalidShards(u32),
    /// A module's allocator was built with (`module_checks`) or without the safety checks,
    /// unlike veballoc's PTX, whose heaps it would share: the two keep different metadata.
    ChecksMismatch { module_checks: bool, heap_checks: bool },
    /// An allocation through a kernel's global allocator (`veballoc_kernels::global_allocator!`)
    /// failed and ended the kernel: `no_heap` when no heap was bound to the module
    /// (`Heap::bind_global`), else the heap had no room for `size` bytes.
    KernelAlloc { no_heap: bool, size: u64 },
    /// `Heap::bind_global` on a module without veballoc's global allocator.
    NoGlobalAllocator,
    /// `Gpu::launch` of `threads` threads in blocks of `block`: CUDA's grid holds 1 to
    /// 2^31 - 1 blocks of at least one thread.
    InvalidLaunch { threads: u64, block: u32 },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoGpu(why) => write!(f, "no usable CUDA GPU: {why}"),
            Error::NoSuchDevice { ordinal, count } => write!(
                f,
                "there is no CUDA device {ordinal}: this machine has {count} (ordinals 0..{count}; \
                 veballoc::devices() lists them)"
            ),
            Error::PtxLoad(e) => write!(f, "the CUDA driver could not load veballoc's PTX: {e:?} (driver too old for PTX ISA 7.0 / sm_80?)"),
            Error::PtxFile(why) => write!(f, "cannot read the PTX file named by VEBALLOC_PTX_FILE: {why}"),
            Error::HeapTooLarge { requested, available } => write!(
                f,
                "a heap of {} MiB does not fit: the GPU has {} MiB free (heap memory plus its metadata)",
                requested >> 20,
                available >> 20
            ),
            Error::HeapTooSmall { requested, minimum } => {
                write!(f, "a heap of {requested} bytes is smaller than one segment ({minimum} bytes)")
            }
            Error::Cuda { call, err } => write!(f, "{call} failed: {err:?}"),
            Error::Corrupt(e) => write!(f, "heap validation failed: {e:?}"),
            Error::ZeroSizedAlloc => write!(f, "a host allocation of 0 bytes"),
            Error::OutOfMemory { requested } => {
                write!(f, "the heap has no room for {requested} bytes (trim, or create a larger heap)")
            }
            Error::UnknownPointer(p) => {
                write!(f, "free of {p:#x}, which the host pool did not hand out (or already freed)")
            }
            Error::NotReleasable => {
                write!(f, "this heap's memory cannot be returned to the driver: create it with Heap::releasable")
            }
            Error::Driver { call, code } => write!(f, "{call} failed: CUDA error {code}"),
            Error::HeapSizeUnsupported { requested, maximum } => write!(
                f,
                "a heap of {requested} bytes is larger than veballoc can address ({} TiB at most)",
                maximum >> 40
            ),
            Error::InvalidShards(n) => write!(f, "{n} shards: the shard count must be a power of two"),
            Error::ChecksMismatch { module_checks, heap_checks } => {
                let with = |c: bool| if c { "with" } else { "without" };
                write!(
                    f,
                    "this module's allocator was built {} the safety checks, veballoc's PTX (whose heaps it \
                     would use) {}: they keep different metadata. Build both the same way (the \
                     `checks` feature of veballoc and veballoc-kernels; veballoc-ptx-build's \
                     checks_like_veballoc does this), or point VEBALLOC_PTX_FILE at a matching build",
                    with(*module_checks),
                    with(*heap_checks)
                )
            }
            Error::KernelAlloc { no_heap: true, size } => write!(
                f,
                "a kernel allocated {size} bytes through veballoc's global allocator, but no heap is \
                 bound to its module: call heap.bind_global(&module) before launching, and keep the binding \
                 it returns while the module's kernels run"
            ),
            Error::KernelAlloc { no_heap: false, size } => write!(
                f,
                "a kernel's allocation of {size} bytes through veballoc's global allocator found the \
                 heap full and ended the kernel (use try_reserve / Box::try_new to handle it in the \
                 kernel, or a larger heap)"
            ),
            Error::NoGlobalAllocator => write!(
                f,
                "the module has no veballoc global allocator (veballoc_kernels::global_allocator!() \
                 in its kernel crate, built with veballoc_ptx_build::Ptx::with_alloc)"
            ),
            Error::InvalidLaunch { threads, block } => write!(
                f,
                "cannot launch {threads} threads in blocks of {block}: a grid holds 1 to 2^31 - 1 \
                 blocks of at least one thread"
            ),
            Error::NotInHeap { ptr, bytes } => {
                write!(f, "{bytes} bytes at {ptr:#x} are not (aligned and) inside the heap")
            }
        }
    }
}

impl std::error::Error for Error {}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Adds the failing call's name to a CUDA error.
pub(crate) trait Context<T> {
    fn during(self, call: &'static str) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, CudaError> {
    fn during(self, call: &'static str) -> Result<T> {
        self.map_err(|err| Error::Cuda { call, err })
    }
}

/// A raw driver call's result, with the call's name on failure.
pub(crate) fn driver(r: cust::sys::CUresult, call: &'static str) -> Result<()> {
    if r == cust::sys::cudaError_enum::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Driver { call, code: r as i32 })
    }
}
