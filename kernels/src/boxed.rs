//! Typed, owned handles for kernels: `DBox<T>` (one value) and `DVec<T>` (a growable array)
//! allocated from a `DeviceHeap` and freed on drop, with `size_of`/`align_of` respected.
//!
//! Alignment: allocations go through `DeviceHeap::malloc_layout` with `align_of::<T>()`,
//! which aligns them from segment 0 (`DeviceHeap::mem`); segment 0 of the host runtime's
//! heaps and of the CPU heap (`cpu::CpuHeap`) is at a multiple of 16 MiB. On a heap less
//! aligned than `T`, `DBox::new` and `DVec::push` give the value back (as when the heap is
//! full) instead of misplacing it. (Asking `malloc` for the size alone gave 2 MiB-aligned
//! types of 2 MiB a run of blocks aligned to 256 KiB.) A type aligned to more than 16 MiB
//! (`MAX_ALIGN`) is refused at compile time. Zero-sized values take no memory, whatever
//! their alignment.
//!
//! To keep a structure past the kernel that built it (a graph's adjacency lists, say), turn
//! the handle into its raw form (`DBox::into_raw`, `DVec::into_raw`: plain pointers and
//! counts, valid in device memory) and take it back in a later kernel with `from_raw`.
//!
//! ```ignore
//! let mut v = DVec::<u32>::new(&heap);
//! for i in 0..n { if v.push(i).is_err() { break } } // Err: the heap is full
//! let total: u32 = v.iter().sum();                  // freed when `v` goes out of scope
//! ```

use core::alloc::Layout;
use core::marker::PhantomData;
use core::mem::{align_of, size_of, ManuallyDrop};
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use crate::heap::DeviceHeap;
use crate::SEGMENT_BYTES;

/// Largest alignment of a (sized) `DBox`/`DVec` element: a segment, the largest alignment the
/// allocator gives. A type aligned to more does not compile:
///
/// ```compile_fail,E0080
/// #[repr(align(33554432))] // 32 MiB
/// struct TooAligned(u8);
/// fn boxed(heap: &veballoc_kernels::DeviceHeap) {
///     let _ = veballoc_kernels::DBox::new(heap, TooAligned(1));
/// }
/// let cpu = veballoc_kernels::cpu::CpuHeap::new(1, 1);
/// boxed(cpu.heap());
/// ```
pub const MAX_ALIGN: usize = SEGMENT_BYTES as usize;

/// Compile-time refusal of element types the heap cannot align.
struct Fits<T>(PhantomData<T>);

impl<T> Fits<T> {
    const ALIGN: () = assert!(
        size_of::<T>() == 0 || align_of::<T>() <= MAX_ALIGN,
        "DBox/DVec: the heap aligns allocations to at most 16 MiB (MAX_ALIGN)"
    );
}

/// Bytes to ask `heap` for `n` values of `T` (`None` on overflow, or when the heap's segment
/// 0 is less aligned than `T`, so that an allocation aligned relative to it would not be
/// aligned absolutely; see the module doc).
#[inline(always)]
fn bytes_for<T>(heap: &DeviceHeap, n: u64) -> Option<u64> {
    let () = Fits::<T>::ALIGN;
    if heap.mem() & (align_of::<T>() as u64 - 1) != 0 {
        return None;
    }
    (size_of::<T>() as u64).checked_mul(n)
}

/// Checks (in debug builds) that `p`, fresh from the heap, is aligned for `T`.
#[inline(always)]
fn debug_check_aligned<T>(p: *mut T) {
    debug_assert!(p.is_aligned(), "the heap returned an address misaligned for the type");
}

/// One `T` in a heap, freed (after dropping the value) when the box is dropped.
pub struct DBox<'h, T> {
    ptr: NonNull<T>,
    heap: &'h DeviceHeap,
}

impl<'h, T> DBox<'h, T> {
    /// Moves `value` into the heap; gives it back when the heap is full, or when its memory
    /// is less aligned than `T` (see the module doc). A zero-sized `T` takes no memory.
    pub fn new(heap: &'h DeviceHeap, value: T) -> Result<Self, T> {
        let () = Fits::<T>::ALIGN;
        if size_of::<T>() == 0 {
            // Like `Box`: nothing to allocate; a dangling pointer is aligned and non-null.
            return Ok(DBox { ptr: NonNull::dangling(), heap });
        }
        if bytes_for::<T>(heap, 1).is_none() {
            return Err(value);
        }
        let Some(ptr) = NonNull::new(heap.malloc_layout(Layout::new::<T>()) as *mut T) else {
            return Err(value);
        };
        debug_check_aligned(ptr.as_ptr());
        // SAFETY: ptr is valid for a T (fresh allocation of size_of::<T>() bytes, aligned as
        // the module doc explains: bytes_for checked segment 0's alignment).
        unsafe { ptr.as_ptr().write(value) };
        Ok(DBox { ptr, heap })
    }

    /// The value's address.
    pub fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Gives up ownership without freeing: the pointer stays valid until `from_raw` takes it
    /// back (in this kernel or a later one).
    pub fn into_raw(self) -> *mut T {
        ManuallyDrop::new(self).ptr.as_ptr()
    }

    /// Takes back a pointer from `into_raw`.
    ///
    /// # Safety
    /// `ptr` must come from `DBox::<T>::into_raw` on a box of `heap`, and not be taken back twice.
    pub unsafe fn from_raw(heap: &'h DeviceHeap, ptr: *mut T) -> Self {
        // SAFETY: into_raw never returns null.
        DBox { ptr: unsafe { NonNull::new_unchecked(ptr) }, heap }
    }
}

impl<T> Deref for DBox<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the box owns an initialised T.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for DBox<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the box owns an initialised T, borrowed mutably through &mut self.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> Drop for DBox<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the box owns an initialised T; it is dropped once, then its memory freed.
        unsafe { core::ptr::drop_in_place(self.ptr.as_ptr()) };
        if size_of::<T>() != 0 {
            // SAFETY: the box owns its allocation (from `malloc_layout` of this heap in `new`,
            // or handed back by `from_raw`), whose value was just dropped; freed once, here.
            unsafe { self.heap.free(self.ptr.as_ptr() as *mut u8) };
        }
    }
}

/// A growable array's raw parts, laid out for the host to read (`veballoc::Heap::read_vec`):
/// a zeroed `RawVec` is an empty vector, so an array of them in zeroed device memory is an
/// array of empty vectors. It owns nothing by itself: wrap it in a `DVec` to use it.
#[repr(C)]
pub struct RawVec<T> {
    /// First element (null while `cap == 0`).
    pub ptr: *mut T,
    /// Elements in use.
    pub len: u64,
    /// Elements the allocation holds.
    pub cap: u64,
}

// SAFETY: RawVec is the owned parts of a vector of T (like Vec's), moved between threads
// only by value; sending it sends the Ts.
unsafe impl<T: Send> Send for RawVec<T> {}
// SAFETY: shared access gives only the pointer and counts; reading Ts through them needs T: Sync.
unsafe impl<T: Sync> Sync for RawVec<T> {}

impl<T> RawVec<T> {
    /// An empty vector (all zeros).
    pub const EMPTY: Self = RawVec { ptr: core::ptr::null_mut(), len: 0, cap: 0 };
}

/// Smallest capacity a growing vector allocates: 16 bytes' worth, at least 4 elements.
const MIN_CAPACITY_BYTES: u64 = 16;

/// A growable array of `T` in a heap, freed (after dropping its elements) on drop.
pub struct DVec<'h, T> {
    raw: RawVec<T>,
    heap: &'h DeviceHeap,
    _owns: PhantomData<T>,
}

impl<'h, T> DVec<'h, T> {
    /// An empty vector (allocates on the first push).
    pub fn new(heap: &'h DeviceHeap) -> Self {
        DVec { raw: RawVec::EMPTY, heap, _owns: PhantomData }
    }

    /// Takes ownership of raw parts from `into_raw` (or an all-zeros `RawVec`).
    ///
    /// # Safety
    /// `raw` must be zeroed or come from `DVec::<T>::into_raw` on a vector of `heap`, and
    /// must not be owned by another `DVec`.
    pub unsafe fn from_raw(heap: &'h DeviceHeap, raw: RawVec<T>) -> Self {
        DVec { raw, heap, _owns: PhantomData }
    }

    /// Gives up ownership without freeing; `from_raw` takes it back.
    pub fn into_raw(self) -> RawVec<T> {
        let me = ManuallyDrop::new(self);
        RawVec { ptr: me.raw.ptr, len: me.raw.len, cap: me.raw.cap }
    }

    /// Elements in use.
    pub fn len(&self) -> u64 {
        self.raw.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// Elements the current allocation holds.
    pub fn capacity(&self) -> u64 {
        self.raw.cap
    }

    /// Makes room for `extra` more elements; false when the heap is full, or less aligned
    /// than `T` (see the module doc); nothing changes then.
    pub fn reserve(&mut self, extra: u64) -> bool {
        let () = Fits::<T>::ALIGN;
        let Some(need) = self.raw.len.checked_add(extra) else { return false };
        if need <= self.raw.cap || size_of::<T>() == 0 {
            return true;
        }
        let min = MIN_CAPACITY_BYTES.div_ceil(size_of::<T>() as u64).max(4);
        let cap = need.max(self.raw.cap.saturating_mul(2)).max(min);
        let Some(bytes) = bytes_for::<T>(self.heap, cap) else { return false };
        let Ok(layout) = Layout::from_size_align(bytes as usize, align_of::<T>()) else { return false };
        // realloc moves the elements bitwise, which is how Rust moves values.
        // SAFETY: the vector owns `raw.ptr` (null, or its allocation from this heap's
        // `realloc_layout`, or handed back by `from_raw`), which &mut self keeps unshared; on
        // success the new pointer replaces it below, on failure it stays as it was.
        let p = unsafe { self.heap.realloc_layout(self.raw.ptr as *mut u8, layout) } as *mut T;
        if p.is_null() {
            return false;
        }
        debug_check_aligned(p);
        self.raw.ptr = p;
        self.raw.cap = cap;
        true
    }

    /// Appends `value`; gives it back when `reserve(1)` fails (the heap is full, or less
    /// aligned than `T`).
    pub fn push(&mut self, value: T) -> Result<(), T> {
        if !self.reserve(1) {
            return Err(value);
        }
        // SAFETY: len < cap after reserve; the slot is uninitialised and ours.
        unsafe { self.slot(self.raw.len).write(value) };
        self.raw.len += 1;
        Ok(())
    }

    /// Removes and returns the last element.
    pub fn pop(&mut self) -> Option<T> {
        if self.raw.len == 0 {
            return None;
        }
        self.raw.len -= 1;
        // SAFETY: the element at the old last index is initialised and no longer counted.
        Some(unsafe { self.slot(self.raw.len).read() })
    }

    /// Drops every element, keeping the allocation.
    pub fn clear(&mut self) {
        let s: *mut [T] = self.as_mut_slice();
        self.raw.len = 0;
        // SAFETY: the elements were initialised and are no longer counted.
        unsafe { core::ptr::drop_in_place(s) };
    }

    /// Address of element `i` (`i <= cap`).
    fn slot(&self, i: u64) -> *mut T {
        if size_of::<T>() == 0 {
            NonNull::dangling().as_ptr()
        } else {
            // SAFETY: i <= cap, within (or one past) the allocation.
            unsafe { self.raw.ptr.add(i as usize) }
        }
    }

    /// Start of the elements: the allocation, or a dangling (aligned, non-null) pointer when
    /// there is nothing to point at.
    fn data(&self) -> *mut T {
        if self.raw.len == 0 || size_of::<T>() == 0 {
            NonNull::dangling().as_ptr()
        } else {
            self.raw.ptr
        }
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: len initialised elements start at data() (non-null, aligned).
        unsafe { core::slice::from_raw_parts(self.data().cast_const(), self.raw.len as usize) }
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in as_slice; &mut self makes the borrow unique.
        unsafe { core::slice::from_raw_parts_mut(self.data(), self.raw.len as usize) }
    }
}

impl<T> Deref for DVec<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> DerefMut for DVec<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T> Drop for DVec<'_, T> {
    fn drop(&mut self) {
        self.clear();
        if self.raw.cap > 0 && size_of::<T>() != 0 {
            // SAFETY: the vector owns its allocation (cap > 0), whose elements `clear` just
            // dropped; freed once, here.
            unsafe { self.heap.free(self.raw.ptr as *mut u8) };
        }
    }
}
