//! Creating, inspecting and destroying a heap on the GPU.

use std::sync::{Mutex, MutexGuard, OnceLock};

use cust::memory::{DeviceBuffer, DeviceCopy, DevicePointer, DeviceSlice};
use cust::stream::Stream;
use cust::sys as cu;
use veballoc_kernels::heap::{DeviceHeap, HeapLayout, DEFAULT_SHARDS};
use veballoc_kernels::{Stats, SEGMENT_BYTES};

use crate::error::{driver, Error, Result};
use crate::gpu::Gpu;
use crate::memory::{unmap_released, Mapped, Memory};
use crate::pool::{Pool, PoolStats, SegmentSource, StreamId, DEFAULT_RELEASE_THRESHOLD};

/// Threads per block for veballoc's own maintenance kernels.
const MAINT_BLOCK: u32 = 256;
/// Device memory `Heap::auto` leaves to other users of the card.
pub const AUTO_RESERVE_BYTES: u64 = 512 << 20;
/// Sizes `Heap::auto` tries, each a tenth smaller than the last.
const AUTO_TRIES: u32 = 20;

/// The device handle as a kernel argument: pass `heap.arg()` where the kernel takes a
/// `veballoc_kernels::DeviceHeap` by value. Opaque on the host: the handle's methods would
/// read its device addresses as host memory.
///
/// ```compile_fail,E0616
/// fn on_the_host(arg: veballoc::HeapArg) {
///     let _ = arg.meta; // the fields are private: no device handle on the host
/// }
/// ```
///
/// The handle's three words, in its order (`DeviceHeap` is `#[repr(C)]`), so that the kernel
/// receives them as its `DeviceHeap`: on the host `DeviceHeap` is neither `Copy` nor `Clone`
/// (a copy of a CPU heap's handle could outlive its memory), and `cust` needs a `Copy`
/// argument.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapArg {
    mem: u64,
    meta: u64,
    num_segments: u64,
}
const _: () = assert!(core::mem::size_of::<HeapArg>() == core::mem::size_of::<DeviceHeap>());
// The kernel receives a HeapArg as its DeviceHeap: the same words at the same offsets
// (`veballoc_kernels::heap::HANDLE_WORD_OFFSETS`, which the kernels crate asserts of its own).
const _: () = assert!(
    core::mem::offset_of!(HeapArg, mem) == veballoc_kernels::heap::HANDLE_WORD_OFFSETS[0]
        && core::mem::offset_of!(HeapArg, meta) == veballoc_kernels::heap::HANDLE_WORD_OFFSETS[1]
        && core::mem::offset_of!(HeapArg, num_segments) == veballoc_kernels::heap::HANDLE_WORD_OFFSETS[2]
);

impl HeapArg {
    /// No heap (all zeros): what a module's global holds before `bind_global` and after its
    /// binding is dropped.
    pub(crate) const UNBOUND: Self = Self { mem: 0, meta: 0, num_segments: 0 };
}

// SAFETY: three u64s (addresses and a count), valid to copy to the GPU.
unsafe impl DeviceCopy for HeapArg {}

/// Types of which every bit pattern is a value: what a copy of device bytes may produce
/// (`Heap::read`). `DeviceCopy` alone is not that: cust implements it for `bool`, `char`, the
/// `NonZero` integers and `Option`, so a safe `read::<bool>` of a byte 2 made an invalid
/// `bool` (review of r39). Implement it for a `#[repr(C)]` struct of such fields with no
/// padding.
///
/// ```compile_fail
/// # fn f(heap: &veballoc::Heap, p: u64) -> veballoc::Result<()> {
/// let b: bool = heap.read(p)?; // bool is DeviceCopy, not AnyBits: a byte of 2 is no bool
/// # Ok(()) }
/// ```
///
/// # Safety
/// Every `size_of::<Self>()` bytes must be a valid `Self`.
pub unsafe trait AnyBits: DeviceCopy {}
macro_rules! any_bits {
    ($($t:ty)*) => { $(
        // SAFETY: every bit pattern is a value of this type.
        unsafe impl AnyBits for $t {}
    )* };
}
any_bits!(u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize f32 f64);
// SAFETY: zero bytes are the one value of ().
unsafe impl AnyBits for () {}
// SAFETY: an array of types whose every bit pattern is a value, with no padding between them.
unsafe impl<T: AnyBits, const N: usize> AnyBits for [T; N] {}

/// A heap in GPU memory that kernels allocate from with `DeviceHeap::malloc`/`free`.
///
/// ```no_run
/// use veballoc::{Gpu, Heap};
/// let gpu = Gpu::new()?;
/// let heap = Heap::new(&gpu, 8 << 30)?;        // 8 GiB, ready to allocate
/// let arg = heap.arg();                         // pass to your kernel by value
/// // ... launch kernels that take `arg` as their DeviceHeap and call malloc(n) / free(p) ...
/// let stats = heap.stats()?;                    // walks and validates the metadata
/// println!("{} bytes in use", stats.bytes_in_use);
/// # Ok::<(), veballoc::Error>(())
/// ```
///
/// A heap (like its [`Gpu`]) is `Send + Sync`: every method makes the GPU's context current
/// on the calling thread for its duration.
pub struct Heap {
    // `Drop for Heap` frees the pool's events, `mem` and `meta` with the context current;
    // `gpu` (whose context they belong to, and which may hold its last reference) is
    // dropped after that, with the other fields.
    pool: Mutex<Pool<Mark>>,
    mem: Option<Memory>,
    meta: Option<DeviceBuffer<u64>>,
    /// The word the host pool's claim kernel writes its result to, made once: a buffer made
    /// and dropped per claim would synchronize the whole device (`cuMemFree` does), and so
    /// wait for every stream's work, stream-ordered frees included.
    claim_word: Option<DeviceBuffer<u64>>,
    handle: DeviceHeap,
    layout: HeapLayout,
    gpu: Gpu,
}

/// The layout of a heap of `bytes` (whole segments) with `shards` current-block slots per
/// size class (0 taken as 1), or the error that says why there is none.
fn layout_for(bytes: u64, shards: u32, checks: bool) -> Result<HeapLayout> {
    if bytes < SEGMENT_BYTES {
        return Err(Error::HeapTooSmall { requested: bytes, minimum: SEGMENT_BYTES });
    }
    let shards = shards.max(1);
    if !shards.is_power_of_two() {
        return Err(Error::InvalidShards(shards));
    }
    let maximum = HeapLayout::MAX_SEGMENTS as u64 * SEGMENT_BYTES;
    let unsupported = || Error::HeapSizeUnsupported { requested: bytes, maximum };
    let segments = HeapLayout::checked_segments_for_bytes(bytes).ok_or_else(unsupported)?;
    let layout = HeapLayout::try_new(segments, shards, checks).ok_or_else(unsupported)?;
    Ok(match pin_shift_override() {
        Some(shift) => layout.with_pin_shift(shift),
        None => layout,
    })
}

/// `VEBALLOC_PIN_SHIFT=n`: heaps made by this process let their current blocks pin up to
/// capacity `>> n` (see `kernels::layout::PIN_SHIFT`; 64 and above: every row uses every
/// slot). For A/B runs of the speed/memory trade-off; unset, the default.
fn pin_shift_override() -> Option<u32> {
    std::env::var("VEBALLOC_PIN_SHIFT").ok()?.parse().ok()
}

/// Whether heaps made by this process run [`Heap::boot`] when they are created: yes, unless
/// `VEBALLOC_BOOT=0` (for A/B runs of the cold path).
pub fn boot_requested() -> bool {
    std::env::var("VEBALLOC_BOOT").map_or(true, |v| v != "0")
}

/// Free segments `trim_memory(keep_bytes)` keeps mapped, at most all of them.
fn keep_segments(keep_bytes: u64, num_segments: u32) -> u64 {
    keep_bytes.div_ceil(SEGMENT_BYTES).min(num_segments as u64)
}

impl Drop for Heap {
    fn drop(&mut self) {
        // Best effort: without the context the frees below fail (and are ignored).
        let _on = self.gpu.bind();
        self.pool.get_mut().unwrap_or_else(|e| e.into_inner()).drop_pending();
        drop(self.mem.take());
        drop(self.meta.take());
        drop(self.claim_word.take());
    }
}

impl Heap {
    /// Creates a heap of `bytes` (rounded down to whole 16 MiB segments) and initializes it.
    /// Its segment 0 lies at a multiple of 16 MiB (a `cuMemAlloc` that comes back less
    /// aligned is made a segment larger). Errors: `HeapTooSmall` under one segment,
    /// `HeapSizeUnsupported` over `HeapLayout::MAX_SEGMENTS` segments (8 TiB),
    /// `HeapTooLarge` over the GPU's free memory.
    pub fn new(gpu: &Gpu, bytes: u64) -> Result<Heap> {
        Self::with_shards(gpu, bytes, DEFAULT_SHARDS)
    }

    /// As [`Heap::new`], with `shards` current-block slots per size class (a power of two,
    /// else `Error::InvalidShards`).
    pub fn with_shards(gpu: &Gpu, bytes: u64, shards: u32) -> Result<Heap> {
        Self::create(gpu, bytes, shards, false)
    }

    /// A heap whose wholly free segments' memory can go back to the driver
    /// ([`Heap::trim_memory`]) and be mapped again ([`Heap::regrow_memory`]): its segments
    /// are mapped one by one into a reserved address range (CUDA's virtual memory
    /// management), which makes it slower to create than [`Heap::new`].
    ///
    /// ```no_run
    /// # let gpu = veballoc::Gpu::new()?;
    /// let heap = veballoc::Heap::releasable(&gpu, 8 << 30)?;
    /// // ... a phase that needed 8 GiB ...
    /// let returned = heap.trim_memory(1 << 30)?;   // keep 1 GiB of free segments mapped
    /// // ... later, before a big phase:
    /// heap.regrow_memory(returned)?;
    /// # Ok::<(), veballoc::Error>(())
    /// ```
    pub fn releasable(gpu: &Gpu, bytes: u64) -> Result<Heap> {
        Self::create(gpu, bytes, DEFAULT_SHARDS, true)
    }

    fn create(gpu: &Gpu, bytes: u64, shards: u32, releasable: bool) -> Result<Heap> {
        let _on = gpu.bind()?;
        let layout = layout_for(bytes, shards, gpu.checks())?;
        let segments = layout.num_segments;
        let capacity = (segments as u64) * SEGMENT_BYTES;
        let available = gpu.free_memory()?;
        if capacity + layout.meta_bytes > available {
            return Err(Error::HeapTooLarge { requested: capacity + layout.meta_bytes, available });
        }
        let mem = if releasable {
            Memory::Mapped(Mutex::new(Mapped::new(segments, gpu.ordinal() as i32)?))
        } else {
            Memory::buffer(capacity)?
        };
        // Zeroed and given its header on veballoc's stream, in order before the init kernel
        // (the legacy stream of a plain memset or copy does not order that stream).
        let meta = gpu.zeroed::<u64>((layout.meta_bytes / 8) as usize)?;
        let header = layout.header_words();
        gpu.copy_in(&mut meta.index(..header.len()), &header[..])?;
        // SAFETY: a handle for this GPU's kernels: `meta` is the layout's meta_bytes of device
        // memory (u64s, so 8-aligned) holding its header and zeros, initialised by veballoc_init
        // below before any other kernel gets the handle; `mem` is the segments' device memory
        // (segment-aligned), which only the heap hands out; the count is the layout's; both
        // live until the heap is destroyed, after the kernels that use the handle (launches are
        // unsafe: their callers vouch for that). The host reads the metadata only through
        // `with_host_view`'s copies.
        let handle = unsafe {
            DeviceHeap::from_raw_parts(mem.base(), meta.as_device_ptr().as_raw(), layout.num_segments as u64)
        };
        let heap = Heap {
            pool: Mutex::new(Pool::with_threshold(DEFAULT_RELEASE_THRESHOLD)),
            mem: Some(mem),
            meta: Some(meta),
            claim_word: Some(gpu.zeroed::<u64>(1)?),
            handle,
            layout,
            gpu: gpu.clone(),
        };
        let arg = heap.arg();
        // SAFETY: veballoc_init takes one DeviceHeap.
        unsafe {
            gpu.launch("veballoc_init", layout.init_words() as u64, MAINT_BLOCK, crate::kernel_args![arg])?
        };
        gpu.sync()?;
        if boot_requested() {
            heap.boot()?;
        }
        Ok(heap)
    }

    /// Formats a segment ahead for each group of the classes from 16 B to 256 KiB (five
    /// groups, fewer for heaps under 80 segments; two segments for the 16-byte class's
    /// group; `DeviceHeap::boot`), so that the first
    /// mallocs of those classes on this heap take blocks at once instead of waiting for a
    /// format: small launches on a new heap allocate up to 1.7x faster (H200, r28). Every
    /// heap does this when it is created (unless `VEBALLOC_BOOT=0`); call it again after a
    /// `trim` that gave the segments back. A claim that leaves half of a segment out takes
    /// back the booted segment right after it if no block of it is out (its group has not
    /// used it; when another group keeps that one, the one before it; a group's own second
    /// segment stays), so a class that outgrows its booted segment goes on next to it rather
    /// than past every booted segment; a claim of a run of fresh segments (device or host
    /// pool) takes back every booted segment with no block out; and the segments go back
    /// when memory runs short. Then every multiprocessor's slot of the smallest class (16 B)
    /// gets a first block (`DeviceHeap::boot_slot`: at most 1/512 of the heap, 132 x 64 KiB
    /// on an H100), so that the first 16-byte requests of a kernel take one atomic each.
    ///
    /// ```no_run
    /// # let gpu = veballoc::Gpu::new()?;
    /// let heap = veballoc::Heap::new(&gpu, 1 << 30)?; // booted
    /// // ... kernels ...
    /// heap.trim()?; // every free segment back to the heap, the booted ones too
    /// heap.boot()?; // before the next latency-sensitive kernel
    /// # Ok::<(), veballoc::Error>(())
    /// ```
    pub fn boot(&self) -> Result<()> {
        let _on = self.gpu.bind()?;
        let arg = self.arg();
        // SAFETY: veballoc_boot takes one DeviceHeap; it runs on veballoc's stream, after
        // whatever the heap's user queued there.
        unsafe { self.gpu.launch("veballoc_boot", 1, 1, crate::kernel_args![arg])? };
        let slots = self.layout.shards as u64;
        // SAFETY: veballoc_boot_slots takes one DeviceHeap; one thread per slot of a row,
        // after the boot above on the same stream.
        unsafe { self.gpu.launch("veballoc_boot_slots", slots, MAINT_BLOCK, crate::kernel_args![arg])? };
        self.gpu.sync()
    }

    /// The largest heap the GPU's free memory allows (less `AUTO_RESERVE_BYTES` for other
    /// users of the card), backing off by a tenth whenever the allocation fails.
    pub fn auto(gpu: &Gpu) -> Result<Heap> {
        let free = gpu.free_memory()?;
        // Metadata is about 2.5% of the heap with checks, 1.6% without.
        let mut bytes = free.saturating_sub(AUTO_RESERVE_BYTES) / 1025 * 1000;
        let mut last = None;
        for _ in 0..AUTO_TRIES {
            if bytes < SEGMENT_BYTES {
                break;
            }
            match Self::new(gpu, bytes) {
                Ok(h) => return Ok(h),
                Err(e @ (Error::HeapTooLarge { .. } | Error::Cuda { .. })) => last = Some(e),
                Err(e) => return Err(e),
            }
            bytes = bytes / 10 * 9;
        }
        Err(last.unwrap_or(Error::HeapTooSmall { requested: bytes, minimum: SEGMENT_BYTES }))
    }

    /// The handle kernels receive, for the kernels of this heap's GPU (not `Copy` on the host:
    /// see `DeviceHeap`).
    /// Kernels take it as an argument through [`Heap::arg`]; `base` and `layout` give what the
    /// host may know of it.
    ///
    /// ```compile_fail,E0133
    /// fn on_the_host(heap: &veballoc::Heap) {
    ///     let _ = heap.handle().layout(); // unsafe: it would read device memory on the host
    /// }
    /// ```
    ///
    /// # Safety
    /// The handle's methods run only on this heap's GPU, in kernels that end before the heap
    /// is destroyed: its addresses are device addresses, which a method called on the host
    /// would read as host memory (`stats`, `read` and the like are the host's views).
    pub unsafe fn handle(&self) -> DeviceHeap {
        // SAFETY: the same words as this heap's own handle, valid as it is (the caller's
        // contract says where it may be used).
        unsafe {
            DeviceHeap::from_raw_parts(self.handle.mem(), self.handle.meta(), self.handle.num_segments())
        }
    }

    /// Address of segment 0 in device memory: allocations lie in `base() .. base() +
    /// capacity()`.
    pub fn base(&self) -> u64 {
        self.handle.mem()
    }

    /// The handle wrapped for `cust::launch!`.
    pub fn arg(&self) -> HeapArg {
        HeapArg { mem: self.handle.mem(), meta: self.handle.meta(), num_segments: self.handle.num_segments() }
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
    /// go back to their trees (run between phases; allocation may continue afterwards), and
    /// returns the host pool's wholly free segments to the device heap.
    pub fn trim(&self) -> Result<()> {
        let _on = self.gpu.bind()?;
        self.pool().trim(&Segments(self))?;
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

    fn pool(&self) -> MutexGuard<'_, Pool<Mark>> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `bytes` of device memory from this heap, from the host: 256-byte aligned,
    /// best fit in segments the host pool takes from the heap (one kernel launch when it
    /// grows), or a run of whole segments above 4 MiB. Errors: `ZeroSizedAlloc`,
    /// `OutOfMemory`. Free it with [`Heap::free`], not from a kernel.
    ///
    /// ```no_run
    /// # let gpu = veballoc::Gpu::new()?;
    /// let heap = veballoc::Heap::new(&gpu, 1 << 30)?;
    /// let buf = heap.alloc(1 << 20)?;          // a device address
    /// heap.write(buf, &[1u32, 2, 3])?;          // typed host views
    /// let back: [u32; 3] = heap.read(buf)?;
    /// heap.free(buf)?;
    /// # Ok::<(), veballoc::Error>(())
    /// ```
    pub fn alloc(&self, bytes: u64) -> Result<u64> {
        let _on = self.gpu.bind()?;
        self.pool().alloc(&Segments(self), bytes, None)
    }

    /// Frees a host allocation now: no queued or running kernel may still use it (use
    /// [`Heap::free_async`] otherwise). When giving memory back to the device heap fails,
    /// the pointer is freed all the same (the pool keeps the memory; `trim` tries again)
    /// and the error comes back.
    pub fn free(&self, ptr: u64) -> Result<()> {
        let _on = self.gpu.bind()?;
        self.pool().free(&Segments(self), ptr, None)
    }

    /// Stream-ordered allocation: the memory is usable by work queued on `stream` after this
    /// call. It may reuse memory freed on `stream` with [`Heap::free_async`] before that
    /// free has run: `stream`'s later work then waits (on the device) for the free's point
    /// in the stream, so the order holds even when `stream` is a new stream that got a
    /// destroyed one's handle. The host may touch the memory once `stream` has run up to
    /// this call (synchronize it first), not at once: work queued on `stream` earlier may
    /// still use it. Errors (out of memory) come back from this call, not from a later sync.
    pub fn alloc_async(&self, bytes: u64, stream: &Stream) -> Result<u64> {
        let _on = self.gpu.bind()?;
        self.pool().alloc(&Segments(self), bytes, Some(stream_id(stream)))
    }

    /// Stream-ordered free: the memory goes back once the work queued on `stream` so far has
    /// run (and is reusable by later work on `stream` at once, see [`Heap::alloc_async`]).
    /// A run of segments (over 4 MiB) goes back to the device heap, which any stream
    /// allocates from: this waits for `stream` first. On an error before the free is
    /// recorded (that wait, or recording the stream's point), the pointer stays live.
    pub fn free_async(&self, ptr: u64, stream: &Stream) -> Result<()> {
        let _on = self.gpu.bind()?;
        self.pool().free(&Segments(self), ptr, Some(stream_id(stream)))
    }

    /// Bytes of wholly free pool segments the host pool keeps for reuse instead of returning
    /// them to the device heap (default `DEFAULT_RELEASE_THRESHOLD`, 64 MiB; 0 returns them
    /// at once). `trim` returns them regardless.
    pub fn set_release_threshold(&self, bytes: u64) {
        self.pool().release_threshold = bytes;
    }

    /// Bytes usable at a live host allocation.
    pub fn alloc_size(&self, ptr: u64) -> Option<u64> {
        self.pool().size_of(ptr)
    }

    /// The host pool's statistics.
    pub fn pool_stats(&self) -> PoolStats {
        self.pool().stats()
    }

    /// Checks that `bytes` at `ptr` lie in the heap's segment memory, aligned for `align`.
    fn check_view(&self, ptr: u64, bytes: u64, align: usize) -> Result<()> {
        let end = ptr.checked_add(bytes);
        if ptr < self.base()
            || end.is_none_or(|e| e > self.base() + self.capacity())
            || !ptr.is_multiple_of(align as u64)
        {
            return Err(Error::NotInHeap { ptr, bytes });
        }
        Ok(())
    }

    /// Copies the `T` at device address `ptr` (a heap object) to the host, after the heap's
    /// stream has finished its work.
    pub fn read<T: AnyBits>(&self, ptr: u64) -> Result<T> {
        Ok(self.read_slice::<T>(ptr, 1)?.remove(0))
    }

    /// Copies `n` values of `T` at `ptr` to the host.
    pub fn read_slice<T: AnyBits>(&self, ptr: u64, n: usize) -> Result<Vec<T>> {
        let bytes = (n as u64).checked_mul(std::mem::size_of::<T>() as u64);
        let bytes = bytes.ok_or(Error::NotInHeap { ptr, bytes: u64::MAX })?;
        self.check_view(ptr, bytes, std::mem::align_of::<T>())?;
        let mut v: Vec<T> = Vec::with_capacity(n);
        if bytes > 0 {
            // SAFETY: the range is inside the heap's device allocation (checked); the view
            // lives only for the copy.
            let src = unsafe { DeviceSlice::from_raw_parts(DevicePointer::from_raw(ptr), n) };
            // SAFETY: v has room for n values; AnyBits types may take any bytes; the copy
            // (after the stream's queued work) fills all n before set_len.
            unsafe {
                let dst = std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut std::mem::MaybeUninit<T>, n);
                self.gpu.copy_out(&src, &mut *(dst as *mut [std::mem::MaybeUninit<T>] as *mut [T]))?;
                v.set_len(n);
            }
        } else {
            self.gpu.sync()?;
            // SAFETY: zero bytes to copy: `n` values of a zero-sized T (none when T has a size),
            // which an AnyBits type may take from no bytes.
            unsafe { v.set_len(if std::mem::size_of::<T>() == 0 { n } else { 0 }) };
        }
        Ok(v)
    }

    /// Copies `value` to device address `ptr` in the heap, on the heap's stream: after the
    /// work queued on it, and before the work queued later.
    ///
    /// Safe because the heap keeps none of its own metadata in segment memory (`free` is
    /// header-free), so no write there can corrupt the allocator, and the host reads heap
    /// memory only as [`AnyBits`] types. It may write into any heap object, one a kernel
    /// made or one already freed included: a kernel that later reads those bytes as a type
    /// other than `T` (a `bool` from a `u8`) is the unsafe launch's contract to rule out
    /// ([`Gpu::launch`](crate::Gpu::launch)), as is a kernel on another stream that uses the
    /// object meanwhile.
    pub fn write<T: DeviceCopy>(&self, ptr: u64, value: &T) -> Result<()> {
        let bytes = std::mem::size_of::<T>() as u64;
        self.check_view(ptr, bytes, std::mem::align_of::<T>())?;
        // SAFETY: the range is inside the heap's device allocation (checked).
        let mut dst = unsafe { DeviceSlice::from_raw_parts_mut(DevicePointer::from_raw(ptr), 1) };
        self.gpu.copy_in(&mut dst, std::slice::from_ref(value))
    }

    /// Copies the elements of a device-side `DVec<T>` whose raw parts (`RawVec<T>`: pointer,
    /// length, capacity) lie at `raw_at` (for example in an array of `RawVec`s a kernel
    /// filled). `T` must be the vector's element type.
    pub fn read_vec<T: AnyBits>(&self, raw_at: u64) -> Result<Vec<T>> {
        let [ptr, len, _cap] = self.read_any::<[u64; 3]>(raw_at)?;
        if len == 0 {
            return Ok(Vec::new());
        }
        self.read_slice::<T>(ptr, len as usize)
    }

    /// `read` for plain arrays of words, which may also live outside the heap (a kernel's
    /// argument buffer, from `veballoc::zeroed_u64s`).
    fn read_any<T: AnyBits + Default>(&self, ptr: u64) -> Result<T> {
        let mut v = T::default();
        // SAFETY: a view of one T for the copy; the driver reports an address it does not know.
        let src = unsafe { DeviceSlice::from_raw_parts(DevicePointer::from_raw(ptr), 1) };
        self.gpu.copy_out(&src, std::slice::from_mut(&mut v))?;
        Ok(v)
    }

    fn mapped(&self) -> Result<MutexGuard<'_, Mapped>> {
        match &self.mem {
            Some(Memory::Mapped(m)) => Ok(m.lock().unwrap_or_else(|e| e.into_inner())),
            _ => Err(Error::NotReleasable),
        }
    }

    /// Returns the memory of wholly free segments to the driver, keeping `keep_bytes` of free
    /// segments mapped for the kernels (from the highest segment down: allocation takes the
    /// lowest first; `u64::MAX` keeps them all). Trims first (`Heap::trim`). Returns the bytes
    /// given back. Kernels may run meanwhile; they just see a smaller heap.
    /// `Error::NotReleasable` for a heap made with `Heap::new`. When an unmap fails, the
    /// segments not yet unmapped go back to the kernels and the error comes back.
    pub fn trim_memory(&self, keep_bytes: u64) -> Result<u64> {
        let _on = self.gpu.bind()?;
        let mut mapped = self.mapped()?;
        self.trim()?;
        let max = self.layout.num_segments as u64;
        let out = self.gpu.zeroed::<u32>(1 + max as usize)?;
        let keep = keep_segments(keep_bytes, self.layout.num_segments);
        let (arg, o) = (self.arg(), out.as_device_ptr().as_raw());
        // SAFETY: veballoc_release_segments(heap, keep, max, out) with 1 + max words.
        unsafe {
            self.gpu.launch("veballoc_release_segments", 1, 1, crate::kernel_args![arg, keep, max, o])?
        };
        let mut list = vec![0u32; 1 + max as usize];
        self.gpu.copy_out(&out, &mut list[..])?;
        let n = list[0] as usize;
        let n = unmap_released(&mut *mapped, &list[1..1 + n], |segs| self.reacquire(segs))?;
        Ok(n as u64 * SEGMENT_BYTES)
    }

    /// Gives released segments, whose memory is mapped, back to the kernels.
    fn reacquire(&self, segs: &[u32]) -> Result<()> {
        let buf = self.gpu.upload(segs)?;
        let (arg, p, n) = (self.arg(), buf.as_device_ptr().as_raw(), segs.len() as u64);
        // SAFETY: veballoc_reacquire_segments(heap, segs, n) with n segment indices.
        unsafe {
            self.gpu.launch("veballoc_reacquire_segments", n, MAINT_BLOCK, crate::kernel_args![arg, p, n])?
        };
        self.gpu.sync()
    }

    /// Maps memory again for up to `bytes` of the segments `trim_memory` returned (lowest
    /// first) and gives them back to the kernels. Returns the bytes mapped; less than asked
    /// when the card has no more free memory (the error of the mapping that failed is
    /// dropped: what was mapped before it is kept). When handing the mapped segments to the
    /// kernels fails, they are unmapped again (for a later call) and the error comes back.
    pub fn regrow_memory(&self, bytes: u64) -> Result<u64> {
        let _on = self.gpu.bind()?;
        let mut mapped = self.mapped()?;
        let mut segs = Vec::new();
        for seg in mapped.unmapped().into_iter().take(bytes.div_ceil(SEGMENT_BYTES) as usize) {
            if mapped.map(seg).is_err() {
                break;
            }
            segs.push(seg);
        }
        if !segs.is_empty() {
            if let Err(e) = self.reacquire(&segs) {
                for &seg in &segs {
                    let _ = mapped.unmap(seg);
                }
                return Err(e);
            }
        }
        Ok(segs.len() as u64 * SEGMENT_BYTES)
    }

    /// Bytes of segment memory backed by device memory now (the capacity, less what
    /// `trim_memory` returned).
    pub fn mapped_bytes(&self) -> u64 {
        match self.mapped() {
            Ok(m) => m.mapped() as u64 * SEGMENT_BYTES,
            Err(_) => self.capacity(),
        }
    }

    /// The install-path profile of a PTX built with the kernels' `trace` feature
    /// (`veballoc_kernels::trace`: event names and totals since the heap was created); all
    /// zeros with any other PTX. A diagnostic for A/B runs (`veballoc-bench --trace`).
    #[doc(hidden)]
    pub fn trace(&self) -> Result<Vec<(&'static str, u64)>> {
        use veballoc_kernels::trace::{EVENTS, NAMES, TRACE_OFF};
        let meta = self.meta.as_ref().expect("live heap");
        let first = (TRACE_OFF / 8) as usize;
        let mut host = vec![0u64; EVENTS];
        self.gpu.copy_out(&meta.index(first..first + EVENTS), &mut host[..])?;
        Ok(NAMES.iter().copied().zip(host).collect())
    }

    /// Copies the metadata to the host, validates it, and returns the statistics.
    /// Waits for the heap's stream first; kernels on other streams must have finished.
    pub fn stats(&self) -> Result<Stats> {
        self.with_host_view(|view| view.validate())?.map_err(Error::Corrupt)
    }

    /// Every segment's kind and blocks out, from a copy of the metadata (as `stats`, the
    /// heap quiescent): a diagnostic of where a burst's range went.
    #[doc(hidden)]
    pub fn segment_uses(&self) -> Result<Vec<veballoc_kernels::diag::SegmentUse>> {
        self.with_host_view(|view| view.segment_uses())
    }

    /// `f` on a host copy of the metadata (a view of it whose `mem` is the GPU's, never read).
    fn with_host_view<R>(&self, f: impl FnOnce(&DeviceHeap) -> R) -> Result<R> {
        let meta = self.meta.as_ref().expect("live heap");
        let mut host = vec![0u64; meta.len()];
        self.gpu.copy_out(meta, &mut host[..])?;
        // SAFETY: a read-only view (see `DeviceHeap::from_raw_parts`): `host` is a copy of the
        // whole metadata (u64s, 8-aligned) that lives through `f`, with the handle's segment
        // count; `mem` is the GPU's address, which the metadata readers `f` runs (`validate`,
        // `segment_uses`) never dereference, and nothing allocates or frees through the view.
        let view = unsafe {
            DeviceHeap::from_raw_parts(self.handle.mem(), host.as_ptr() as u64, self.handle.num_segments())
        };
        Ok(f(&view))
    }

    /// Frees the heap's GPU memory now, reporting errors (Drop ignores them).
    pub fn destroy(mut self) -> Result<()> {
        let gpu = self.gpu.clone();
        let _on = gpu.bind()?;
        gpu.sync()?;
        match self.mem.take() {
            Some(Memory::Buffer { buf, .. }) => {
                DeviceBuffer::drop(buf).map_err(|(err, _)| Error::Cuda { call: "cuMemFree (heap)", err })?
            }
            // A releasable heap's unmaps and its reservation's free, reported (its Drop
            // ignored them; review of r39).
            Some(Memory::Mapped(m)) => m.into_inner().unwrap_or_else(|p| p.into_inner()).release()?,
            None => {}
        }
        if let Some(m) = self.meta.take() {
            DeviceBuffer::drop(m).map_err(|(err, _)| Error::Cuda { call: "cuMemFree (metadata)", err })?;
        }
        Ok(())
    }
}

/// A stream's key in the host pool.
fn stream_id(stream: &Stream) -> StreamId {
    StreamId(stream.as_inner() as usize)
}

/// The raw stream behind a key, valid while the caller that passed the stream holds it.
fn raw_stream(id: StreamId) -> cu::CUstream {
    id.0 as cu::CUstream
}

/// A point in a stream's work: a CUDA event (timing off), made and used through raw driver
/// calls, as the pool names streams by their raw handles.
pub(crate) struct Mark(cu::CUevent);

// SAFETY: a CUDA event handle may be used and destroyed from any thread.
unsafe impl Send for Mark {}

impl Drop for Mark {
    fn drop(&mut self) {
        // SAFETY: the event is ours; destroying it while a stream waits on it is allowed
        // (the driver releases it once the wait is done).
        unsafe { cu::cuEventDestroy_v2(self.0) };
    }
}

/// The heap as the host pool's source of segments: one-thread kernels on the heap's stream;
/// its calls run with the context current (the heap's methods bind it).
struct Segments<'a>(&'a Heap);

impl SegmentSource for Segments<'_> {
    type Mark = Mark;

    fn claim(&self, k: u64) -> Result<Option<u32>> {
        // Launched and read back on the heap's stream, in this order; the kernel always
        // writes the word, and the pool's lock keeps claims one at a time.
        let out = self.0.claim_word.as_ref().expect("a live heap has its claim word");
        let (arg, o) = (self.0.arg(), out.as_device_ptr().as_raw());
        // SAFETY: veballoc_host_claim(heap, k, out) with one output word.
        unsafe { self.0.gpu.launch("veballoc_host_claim", 1, 1, crate::kernel_args![arg, k, o])? };
        let mut v = [0u64; 1];
        self.0.gpu.copy_out(out, &mut v[..])?;
        Ok((v[0] != u64::MAX).then_some(v[0] as u32))
    }

    fn release(&self, seg: u32, k: u32) -> Result<()> {
        let (arg, s, k) = (self.0.arg(), seg as u64, k as u64);
        // SAFETY: veballoc_host_release(heap, seg, k): the pool gives back, once, a run of
        // segments that its claim took and of which nothing is allocated any more.
        unsafe { self.0.gpu.launch("veballoc_host_release", 1, 1, crate::kernel_args![arg, s, k])? };
        self.0.gpu.sync()
    }

    fn segment_addr(&self, seg: u32) -> u64 {
        self.0.base() + seg as u64 * SEGMENT_BYTES
    }

    fn record(&self, stream: StreamId) -> Result<Mark> {
        let mut ev = std::ptr::null_mut();
        let flags = cu::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32;
        // SAFETY: writes one event handle.
        driver(unsafe { cu::cuEventCreate(&mut ev, flags) }, "cuEventCreate")?;
        let mark = Mark(ev);
        // SAFETY: the event is live; the stream is the caller's (live during this call).
        driver(unsafe { cu::cuEventRecord(mark.0, raw_stream(stream)) }, "cuEventRecord")?;
        Ok(mark)
    }

    fn passed(&self, mark: &Mark) -> bool {
        // SAFETY: the event is live.
        unsafe { cu::cuEventQuery(mark.0) == cu::cudaError_enum::CUDA_SUCCESS }
    }

    fn wait(&self, stream: StreamId, mark: &Mark) -> Result<()> {
        // SAFETY: the event is live; the stream is the caller's (live during this call).
        driver(unsafe { cu::cuStreamWaitEvent(raw_stream(stream), mark.0, 0) }, "cuStreamWaitEvent")
    }

    fn sync(&self, stream: StreamId) -> Result<()> {
        // SAFETY: the stream is the caller's (live during this call).
        driver(unsafe { cu::cuStreamSynchronize(raw_stream(stream)) }, "cuStreamSynchronize (free_async)")
    }
}

/// How large a [`LazyHeap`] is.
#[derive(Clone, Copy, Debug)]
pub enum HeapSize {
    /// This many bytes.
    Bytes(u64),
    /// As large as the card allows ([`Heap::auto`]).
    Auto,
}

/// A heap created on first use (on device 0), for programs that may never need one.
///
/// ```no_run
/// let lazy = veballoc::LazyHeap::new(veballoc::HeapSize::Auto);
/// // ... nothing happens on the GPU until:
/// let heap = lazy.get()?;
/// # Ok::<(), veballoc::Error>(())
/// ```
pub struct LazyHeap {
    size: HeapSize,
    cell: OnceLock<Heap>,
    init: Mutex<()>,
}

impl LazyHeap {
    pub const fn new(size: HeapSize) -> Self {
        LazyHeap { size, cell: OnceLock::new(), init: Mutex::new(()) }
    }

    /// The heap, created (with a new `Gpu`) on the first call; an error leaves it uncreated,
    /// so a later call tries again.
    pub fn get(&self) -> Result<&Heap> {
        if let Some(h) = self.cell.get() {
            return Ok(h);
        }
        let _one = self.init.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = self.cell.get() {
            return Ok(h);
        }
        let gpu = Gpu::new()?;
        let heap = match self.size {
            HeapSize::Bytes(b) => Heap::new(&gpu, b)?,
            HeapSize::Auto => Heap::auto(&gpu)?,
        };
        Ok(self.cell.get_or_init(|| heap))
    }

    /// Whether the heap exists yet.
    pub fn is_created(&self) -> bool {
        self.cell.get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 10 item 8: every size a user may ask for gives a layout or a clear error (it
    /// used to panic in veb.rs for 2^55 bytes and u64::MAX, give 0 segments for 2^56 and
    /// 16 MiB for 2^56 + 16 MiB, and panic for a shard count not a power of two).
    #[test]
    fn heap_sizes_give_a_layout_or_a_clear_error() {
        let max = HeapLayout::MAX_SEGMENTS as u64 * SEGMENT_BYTES;
        for bytes in [1u64 << 55, 1 << 56, (1 << 56) + (1 << 24), u64::MAX, max + SEGMENT_BYTES] {
            for checks in [false, true] {
                match layout_for(bytes, DEFAULT_SHARDS, checks) {
                    Err(Error::HeapSizeUnsupported { requested, maximum }) => {
                        assert_eq!((requested, maximum), (bytes, max))
                    }
                    other => panic!("{bytes} bytes: {other:?}"),
                }
            }
        }
        assert!(matches!(layout_for(SEGMENT_BYTES - 1, 1, false), Err(Error::HeapTooSmall { .. })));
        for shards in [3, 6, 255, u32::MAX] {
            assert!(
                matches!(layout_for(1 << 30, shards, false), Err(Error::InvalidShards(s)) if s == shards)
            );
        }
        // The largest heap there is, and ordinary ones, round down to whole segments.
        let l = layout_for(max + SEGMENT_BYTES - 1, DEFAULT_SHARDS, true).unwrap();
        assert_eq!(l.num_segments, HeapLayout::MAX_SEGMENTS);
        let l = layout_for((1 << 30) + 5, 0, false).unwrap();
        assert_eq!((l.num_segments, l.shards), (64, 1));
    }

    /// Issue 10 item 13: heaps, lazy heaps and GPUs may be shared between threads (each
    /// call binds the context); a context guard may not leave its thread.
    #[test]
    fn heaps_are_send_and_sync() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Heap>();
        shareable::<LazyHeap>();
        shareable::<Gpu>();
    }

    /// Issue 10 item 8: `trim_memory(u64::MAX)` keeps every free segment (it used to keep
    /// none: `keep as u32` was 0).
    #[test]
    fn keep_bytes_saturate_at_the_heap() {
        assert_eq!(keep_segments(u64::MAX, 64), 64);
        assert_eq!(keep_segments(1 << 56, 64), 64);
        assert_eq!(keep_segments(SEGMENT_BYTES + 1, 64), 2);
        assert_eq!(keep_segments(0, 64), 0);
    }
}
