//! A global allocator for kernel crates, so that `alloc::vec::Vec`, `Box`, `String`,
//! `format!` and `BTreeMap` work in kernels, backed by a veballoc heap that the host binds to
//! the module (`veballoc::Heap::bind_global`).
//!
//! A kernel crate opts in with one line (and builds `alloc` for the device:
//! `veballoc_ptx_build::Ptx::with_alloc`):
//! ```ignore
//! #![no_std]
//! extern crate alloc;
//! veballoc_kernels::global_allocator!();
//! ```
//! The heap is a module global (`VEBALLOC_GLOBAL_HEAP`) that the host writes. When an
//! allocation fails, for lack of memory or because no heap was bound, the allocator records why
//! in a word of page-locked host memory that the host registered (`VEBALLOC_GLOBAL_FAILURE`):
//! the try-APIs (`try_reserve`, `Box::try_new`) see an error and go on, while the infallible ones
//! end the kernel (a trap); the host reads the word after the failed launch and reports it
//! (`veballoc::Error::KernelAlloc`), which a trapped context could no longer do from device
//! memory.

use core::alloc::{GlobalAlloc, Layout};

use crate::heap::DeviceHeap;

/// The heap the module's global allocator uses; zero (no metadata) until the host binds one.
/// Only the host writes it (`veballoc::Heap::bind_global`); the allocator uses it only when
/// its metadata address is not zero (see [`GlobalHeap`]).
#[no_mangle]
pub static mut VEBALLOC_GLOBAL_HEAP: DeviceHeap = UNBOUND;

/// The handle of no heap (all zeros): crate-private, since its methods would read metadata at
/// address 0; `GlobalHeap::alloc` checks for it before any use.
const UNBOUND: DeviceHeap = DeviceHeap { mem: 0, meta: 0, num_segments: 0 };

/// Address of a page-locked host word (mapped for the device) where a failed allocation
/// records why (see [`failure_word`]); zero when the host registered none.
#[no_mangle]
pub static mut VEBALLOC_GLOBAL_FAILURE: u64 = 0;

/// Failure kind: the kernel allocated through the global allocator with no heap bound.
pub const FAILURE_NO_HEAP: u64 = 1;
/// Failure kind: the bound heap had no room (or could not give the alignment).
pub const FAILURE_OUT_OF_MEMORY: u64 = 2;
/// Bits of the failure word that hold the size asked for (the kind is above them).
pub const FAILURE_SIZE_BITS: u32 = 56;

/// The failure word: `kind << FAILURE_SIZE_BITS | size` (size saturated to the field).
pub const fn failure_word(kind: u64, size: u64) -> u64 {
    let max = (1u64 << FAILURE_SIZE_BITS) - 1;
    (kind << FAILURE_SIZE_BITS) | if size > max { max } else { size }
}

/// The heap bound to this module (zero metadata when none).
#[inline(always)]
fn bound_heap() -> DeviceHeap {
    // SAFETY: the host writes the global before it launches kernels of the module (and not
    // while they run); a volatile read of a plain value.
    unsafe { core::ptr::read_volatile(&raw const VEBALLOC_GLOBAL_HEAP) }
}

/// Records a failed allocation for the host (the last one wins; any is a true report).
#[cold]
fn record_failure(kind: u64, size: u64) {
    // SAFETY: as in bound_heap, for the address the host registered.
    let at = unsafe { core::ptr::read_volatile(&raw const VEBALLOC_GLOBAL_FAILURE) };
    if at != 0 {
        // SAFETY: the host registered a live, mapped, 8-aligned page-locked word at `at`.
        unsafe { core::ptr::write_volatile(at as usize as *mut u64, failure_word(kind, size)) };
        // System-scope fence: the write reaches host memory before a trap can end the kernel.
        crate::arch::fence_sc_sys();
    }
}

/// veballoc as the global allocator (see the module docs).
pub struct GlobalHeap;

// SAFETY: `alloc` returns null or a block of the heap that fits `layout` (malloc_layout checks
// the alignment); blocks stay valid until `dealloc` frees them; the heap handle is the same for
// every call of a launch, so blocks allocated by one thread can be freed by another.
unsafe impl GlobalAlloc for GlobalHeap {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let heap = bound_heap();
        if heap.meta() == 0 {
            record_failure(FAILURE_NO_HEAP, layout.size() as u64);
            return core::ptr::null_mut();
        }
        let p = heap.malloc_layout(layout);
        if p.is_null() {
            record_failure(FAILURE_OUT_OF_MEMORY, layout.size() as u64);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: GlobalAlloc::dealloc's contract: `ptr` came from `alloc` (or `realloc`) of
        // this allocator, so from the bound heap's malloc_layout (the host rebinds only between
        // launches), and is not used after.
        unsafe { bound_heap().free(ptr) };
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let heap = bound_heap();
        // In place while the slice or block has room (free needs no size).
        if new_size <= heap.usable_size(ptr) as usize {
            return ptr;
        }
        // SAFETY: the caller's contract for realloc: `layout` with `new_size` is valid.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as in `alloc`.
        let q = unsafe { self.alloc(new) };
        if !q.is_null() {
            // SAFETY: `ptr` holds `layout.size()` bytes, `q` at least `new_size` > that, and the
            // two blocks are distinct (both live).
            unsafe { core::ptr::copy_nonoverlapping(ptr, q, layout.size()) };
            // SAFETY: as in `dealloc`: GlobalAlloc::realloc frees the old block on success.
            unsafe { heap.free(ptr) };
        }
        q
    }
}

/// Makes veballoc the kernel crate's global allocator (one line at the crate root); only on
/// the device, so that a host build of the same crate keeps the host's allocator.
#[macro_export]
macro_rules! global_allocator {
    () => {
        #[cfg(target_arch = "nvptx64")]
        #[global_allocator]
        static VEBALLOC_GLOBAL_ALLOCATOR: $crate::global::GlobalHeap = $crate::global::GlobalHeap;
    };
}
