//! `core::alloc::Allocator` for the heap (nightly `allocator_api`: always in device builds, with
//! the `allocator-api` feature on the host), so that the standard
//! collections take it as their allocator: `Vec::new_in(heap)`, `Box::new_in(x, heap)`,
//! `BTreeMap::new_in(heap)` (with `alloc`), in kernels and in the CPU model alike.
//!
//! Every power-of-two alignment up to a segment (16 MiB) is honoured: up to 8 bytes by any
//! slice, 16 by any slice but the classes that are odd multiples of 8 (24, 72, 88, 104 and
//! 120 B; sizes are rounded up to 16 bytes for an alignment of 16, which takes none of them); up
//! to 64 KiB, a request of up to the largest slice (1 MiB) is rounded up to a power of two at
//! least the alignment (a slice class whose slices lie at multiples of their size from the
//! heap's base, or a run of 64 KiB blocks), and a larger one is a run of 256 KiB blocks,
//! aligned to 256 KiB; larger alignments take a run of blocks cut to an aligned start
//! (`DeviceHeap::malloc_run_aligned`). The result is checked against the alignment asked: a
//! heap whose base is less aligned, or an alignment above 16 MiB, gives an error, never a
//! misaligned pointer. Zero-sized
//! requests never reach the heap. Out of memory is an `AllocError`, so `try_reserve` and
//! `Box::try_new_in` see it; the infallible APIs call `handle_alloc_error`.
//!
//! ```ignore
//! let mut v = Vec::new_in(heap);       // heap: DeviceHeap in a kernel, &DeviceHeap on the CPU
//! v.try_reserve(100).ok()?;            // Err when the heap is full
//! v.push(42u32);
//! ```

use core::alloc::Layout;
#[cfg(any(target_arch = "nvptx64", feature = "allocator-api"))]
use core::alloc::{AllocError, Allocator};
#[cfg(any(target_arch = "nvptx64", feature = "allocator-api"))]
use core::ptr::NonNull;

use crate::class::{group_block_bytes, MAX_SLICE_BYTES, RUN_BLOCK_BYTES, UNIT_RUN_GROUP};
use crate::heap::DeviceHeap;

/// Alignment every allocation of the heap has (the slices of 24, 72, 88, 104 and 120 B are
/// 8-byte aligned).
pub const MIN_ALIGN: usize = 8;
/// Alignment of every allocation whose size is a multiple of 16 (every slice class but the
/// odd multiples of 8 is a multiple of 16, and no such size is in one of those, see `class`).
pub const SLICE_ALIGN: usize = 16;

impl DeviceHeap {
    /// `malloc` for `layout` (non-zero size): null when the heap is full or cannot give the
    /// alignment.
    #[inline]
    pub fn malloc_layout(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size() as u64, layout.align() as u64);
        let p = if align <= MIN_ALIGN as u64 {
            self.malloc(size)
        } else if align <= SLICE_ALIGN as u64 {
            // Never one of the 8-aligned classes (odd multiples of 8).
            self.malloc(size.next_multiple_of(SLICE_ALIGN as u64))
        } else if size > MAX_SLICE_BYTES && align <= RUN_BLOCK_BYTES {
            // A run of 256 KiB blocks.
            self.malloc(size)
        } else if size <= MAX_SLICE_BYTES && align <= group_block_bytes(UNIT_RUN_GROUP) {
            // A power-of-two slice lies at a multiple of its size (from the base), and a run of
            // 64 KiB blocks at a multiple of 64 KiB.
            self.malloc(size.max(align).next_power_of_two())
        } else {
            self.malloc_run_aligned(size, align)
        };
        if !p.is_null() && !(p as usize).is_multiple_of(layout.align()) {
            // The heap's base is less aligned than asked (only a CPU-model heap can be).
            // SAFETY: p is fresh from this heap's malloc above, not passed on: freed once.
            unsafe { self.free(p) };
            return core::ptr::null_mut();
        }
        p
    }

    /// `realloc` for `layout` (non-zero size): keeps `ptr` while its usable size holds
    /// `layout.size()` and it has `layout.align()` (it has when it came from `malloc_layout`
    /// or `realloc_layout` with the same alignment), else moves the contents to a
    /// `malloc_layout(layout)` block and frees `ptr`. Null `ptr` is `malloc_layout`; on failure
    /// null, with `ptr` untouched.
    ///
    /// # Safety
    /// As for [`DeviceHeap::realloc`]: `ptr` is null or meets the conditions of
    /// [`DeviceHeap::free`], no other thread writes its memory during the call, and once the
    /// call frees it (a non-null result other than `ptr`) nothing accesses it.
    pub unsafe fn realloc_layout(&self, ptr: *mut u8, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is realloc_with's; the result keeps layout's alignment.
        unsafe {
            self.realloc_with(ptr, layout.size() as u64, layout.align() as u64, || self.malloc_layout(layout))
        }
    }
}

/// A dangling, aligned pointer for a zero-sized allocation (never passed to the heap).
#[cfg(any(target_arch = "nvptx64", feature = "allocator-api"))]
#[inline(always)]
fn dangling(layout: Layout) -> NonNull<[u8]> {
    // SAFETY: a power-of-two alignment is non-zero, so the pointer is non-null.
    let p = unsafe { NonNull::new_unchecked(layout.align() as *mut u8) };
    NonNull::slice_from_raw_parts(p, 0)
}

// SAFETY: memory handed out stays valid until it is freed through this heap (or the heap is
// destroyed, which the host does only when no kernel and no CPU thread uses it); copies of the
// handle name the same heap, so a block allocated through one can be freed through any;
// `malloc_layout` returns blocks that fit the layout (size and alignment) or null.
#[cfg(any(target_arch = "nvptx64", feature = "allocator-api"))]
unsafe impl Allocator for DeviceHeap {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Ok(dangling(layout));
        }
        let p = NonNull::new(self.malloc_layout(layout)).ok_or(AllocError)?;
        // The whole usable size is the caller's (a Vec then grows in place up to it).
        let usable = (self.usable_size(p.as_ptr()) as usize).max(layout.size());
        Ok(NonNull::slice_from_raw_parts(p, usable))
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: the caller vouches that `ptr` is a live block of this allocator
            // (Allocator::deallocate's contract), which non-zero sizes get from
            // `malloc_layout`, and does not use it after.
            unsafe { self.free(ptr.as_ptr()) };
        }
    }

    unsafe fn grow(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if old.size() != 0 && new.align() <= old.align() {
            let usable = self.usable_size(ptr.as_ptr()) as usize;
            if new.size() <= usable {
                return Ok(NonNull::slice_from_raw_parts(ptr, usable));
            }
        }
        let fresh = self.allocate(new)?;
        // SAFETY: the caller vouches that `ptr` holds `old.size()` bytes; the new block holds at
        // least `new.size() >= old.size()` and is distinct from it (both are live).
        unsafe {
            core::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr() as *mut u8, old.size());
            self.deallocate(ptr, old);
        }
        Ok(fresh)
    }

    unsafe fn shrink(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if new.size() == 0 {
            // SAFETY: the caller vouches that `ptr` was allocated here with `old`.
            unsafe { self.deallocate(ptr, old) };
            return Ok(dangling(new));
        }
        if (ptr.as_ptr() as usize).is_multiple_of(new.align()) {
            // In place: `free` needs no size, so the block stays as it is.
            let usable = (self.usable_size(ptr.as_ptr()) as usize).max(new.size());
            return Ok(NonNull::slice_from_raw_parts(ptr, usable));
        }
        let fresh = self.allocate(new)?;
        // SAFETY: `ptr` holds at least `new.size()` bytes; the blocks are distinct.
        unsafe {
            core::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr() as *mut u8, new.size());
            self.deallocate(ptr, old);
        }
        Ok(fresh)
    }
}
